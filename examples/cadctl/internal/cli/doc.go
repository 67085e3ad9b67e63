// Package cli implements cadctl's commands: porchctl's repo and rpkg verbs
// and kpt's fn render, fn eval, fn source, fn sink and pkg init, over the
// cad library.
//
// The rpkg and repo commands are written against Porch's API objects
// (examples/internal/porchapi) through the small Client interface, which two
// modes implement:
//
//   - direct mode (the default): the repositories listed in a local
//     configuration file (--config, default <user config dir>/cadctl/config.json)
//     are opened with cad's git backend and driven by an embedded
//     engine.Engine; no server is involved;
//   - server mode (--server URL): the same objects are read and written over
//     the reference server's Kubernetes-style HTTP API with plain net/http and
//     JSON; --token (or $CADCTL_TOKEN) authenticates with a bearer token,
//     sent only to an https:// server (a token with an http:// server is
//     refused, as kubectl sends no credentials over plain http),
//     --client-certificate and --client-key with a TLS client certificate,
//     and --certificate-authority verifies an https server.
//
// Neither mode stores or prints credentials embedded in a repository URL:
// repo reg and rpkg clone refuse such URLs, and repo get redacts what an
// earlier version's configuration file holds.
//
// The fn and pkg commands never need a mode: they render or evaluate a
// directory or a ResourceList with the pipeline and fnruntime packages,
// printing what kpt prints, with kpt's flags: fn eval --save and
// --type mutator|validator add the function to the Kptfile pipeline
// (edited in place), --tag is checked against the versions the builtins
// implement, -e/--env reaches container functions only, and
// --include-meta-resources is refused with kpt's message (meta resources
// are always included). fn render rewrites the root Kptfile as kpt does
// (pipeline.Options.KptStyleKptfile), so its output matches kpt's.
//
// rpkg status shows the live status of a package revision's resources in
// the cluster it is deployed to (--target-kubeconfig), computed with the
// library's live package over examples/internal/livek8s; in server mode
// without --target-kubeconfig it asks the server's livestatus subresource.
//
// Run is the entry point; main.go is a one-line wrapper over it, and tests
// call it in-process. Nothing in the package keeps global state, so Run may
// be called concurrently.
package cli
