// Package fnruntime resolves pipeline steps to code: the KRM functions of
// kpt's catalog, run in-process in Go, and exec, wasm and container steps.
//
// A [Registry] implements pipeline.Resolver. It maps function images (with or
// without the catalog prefixes ghcr.io/kptdev/krm-functions-catalog/ and
// gcr.io/kpt-fn/) to Go implementations ([Builtins]), runs exec steps as local
// processes over the ResourceList protocol ([ExecFunction]: no shell, an
// explicit environment, a timeout, capped output), and applies an allow list,
// a deny list, exec gating and a default timeout ([Options]). It holds no
// global state: create one with [NewRegistry], optionally Register your own
// functions, and pass it to pipeline.NewKptfile or pipeline.New (see the
// Registry example).
//
// # Where functions run
//
// The builtins (every catalog function of [BuiltinVersions], kubeconform,
// starlark in a bounded interpreter, builtins/gen-pkg-context), CEL functions
// (fnruntime/celfn) and registered functions run in-process. render-helm-chart
// runs in-process once helmfn.Register adds it (module helmfn keeps Helm's SDK
// out of this one). An exec step runs as a local process with
// Options.AllowExec, or as wasm when it names a .wasm file and Options.Wasm is
// set. Any other image runs as wasm (Options.Wasm, fnruntime/wasmfn), else in
// a container (Options.Containers, [ContainerFunction]), else on Porch's
// function runner when the Registry is wrapped by module fnrunner's
// Client.Resolver; otherwise resolving it gives a *[NotFoundError].
//
// # Versions
//
// Each builtin implements the catalog release lines [BuiltinVersions] lists.
// A version pinned in the image ("set-labels:v0.1.5") or a semver constraint
// in Step.Tag outside those lines is refused with a *[VersionError] (or, with
// Options.Containers, runs the real image); a malformed constraint is a
// *[ConstraintError]. "latest", no tag, a digest and other plain tags resolve
// to the builtin.
//
// # Errors
//
// A builtin that reports an error result fails its step with a
// *pipeline.FunctionError of exit code 1. A config of the wrong shape matches
// [ErrInvalidFunctionConfig] (and the function's own sentinel where it has
// one) and reports one error result naming the functionConfig (DESIGN.md
// lists the exceptions); no item is changed. Every bound (run time, output size, starlark steps and
// memory, field path depth, exec stdout and stderr) is enforced before the
// work that would pass it: a refusal matches revision.ErrLimit and carries a
// *revision.LimitError naming the bound ([ErrOutputTooLarge],
// [ErrStepLimit], [ErrMemoryLimit]). On Unix an exec function's timeout, or
// its context ending, kills its whole process group.
//
// DESIGN.md beside this package lists, function by function, how each builtin
// differs from the catalog's release, the catalog functions cad does not
// implement and why, the exact shape of config errors, and every bound with
// its default.
package fnruntime
