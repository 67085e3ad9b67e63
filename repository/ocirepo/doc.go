// Package ocirepo keeps package revisions in an OCI registry, through
// go-containerregistry. It works with any registry that implements the
// distribution API (the catalog and tags list, paginated with Link
// headers, manifest PUT/HEAD/GET/DELETE), such as the CNCF distribution
// registry, not only Google's.
//
// Open a repository with a spec of type oci whose oci.registry is an image
// prefix, "host[:port][/path]":
//
//	r, err := ocirepo.Open(ctx, repository.Spec{
//		Name: "blueprints", Type: repository.TypeOCI,
//		OCI:  &repository.OCISpec{Registry: "registry.example/packages"},
//	}, &ocirepo.Options{Keychain: authn.DefaultKeychain})
//
// The runnable Example does the same against an in-process registry.
//
// Package p is the image repository "<prefix>/p"; each revision is one
// OCI image manifest with one gzip tar layer holding the package's files
// and its metadata in kpt.dev/ annotations (Porch's experimental OCI
// scheme). A Draft or Proposed revision is the tag ws.<workspace>, a
// Published revision v<N>; OCI has no branch, so there are no placeholder
// revisions. [Repository.Adopt] turns an existing single-layer image into
// a revision without rewriting it; [Repository.SetMetadata] keeps labels,
// annotations and readiness beside it. Listing reads manifests, never a
// layer; layers are read on demand by PackageRevision.Files.
//
// # Concurrency
//
// A Repository is safe for concurrent use. A registry has no
// compare-and-swap, so every write is made under a per-package write lock
// built from tags (with a lease, Options.LockTTL): of two writers from the
// same state one wins and the other gets repository.ErrConflict (or
// ErrAlreadyExists for a taken workspace), having written no tag. This
// holds while the registry's tag list is read-after-write consistent and
// no writer pauses longer than half the lease. Readers take no lock.
// Deleting needs a registry that allows deletes. Watch polls with List
// every Options.PollInterval.
//
// # Errors and bounds
//
// Errors match the repository package's sentinels with errors.Is.
// Credentials (Options.Auth or Options.Keychain) never appear in an error
// or a log line. What the registry serves is untrusted and bounded before
// it is read (Options.MaxManifestBytes, MaxLayerSize, MaxFileBytes,
// MaxExpandedSize, MaxFiles): over a bound, or for a layer entry that is
// not a regular file at a valid path, a read fails with a *[LayerError]
// or *revision.LimitError matching repository.ErrInvalidInput (and
// revision.ErrLimit for a bound). List leaves out a tag whose manifest is
// over its bound, with a warning.
//
// The annotations and tags byte by byte, the locking protocol and why it
// is safe, and the bounds in detail are in repository/ocirepo/DESIGN.md
// in the repository.
//
// EXPERIMENTAL: the tag and annotation scheme may still change.
package ocirepo
