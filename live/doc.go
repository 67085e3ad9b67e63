// Package live computes the live status of a deployed package: for each
// resource of a package revision, its status in a Kubernetes cluster as
// kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status) computes it, and a
// summary for the package.
//
// The cluster is reached through a [Reader], a one-method interface the
// caller implements over its own client, so that this package (and the
// library module) does not depend on client-go: examples/internal/livek8s
// is one over client-go's dynamic client and a REST mapper. A Reader that
// also knows which kinds are namespaced implements [Scoper].
//
// The resources of a package ([Objects]) are those of its .yaml and .yml
// files, subpackages included, without the Kptfile, cad's package file and
// resources marked config.kubernetes.io/local-config: what kpt live apply
// would apply. A namespaced resource without a namespace is looked for in
// [Options].DefaultNamespace ("default").
//
// Each resource gets one [Status]: kstatus's Current, InProgress, Failed,
// Terminating or Unknown for an object that exists, NotFound for one that
// does not, and Unknown (with a message) for one whose kind the cluster
// does not serve. [Summarize] states the package rule, worst first: any
// Failed, else any NotFound, else any Unknown, else any Terminating, else
// any InProgress makes the package that; otherwise it is Current.
//
// [RevisionStatus] is the engine-level entry point: it reads a package
// revision through an *engine.Engine (any [Revisions]) and computes its
// status. [Compute] does the same for objects the caller has, and [Watch]
// polls until the package is Current, reporting each change.
//
// # Errors
//
// Bad input (a nil Reader, bad Options, files that are not Kubernetes
// resources) is an error matching repository.ErrInvalidInput; a missing
// revision is repository.ErrNotFound. A missing object or an unserved kind
// is a status, not an error. Any other error of the Reader (an unreachable
// cluster, a forbidden read) stops the computation and is returned naming
// the object.
//
// # Concurrency
//
// The functions of this package keep no state and may be called
// concurrently; [Compute] reads up to [Options].Concurrency objects at
// once, so a Reader must be safe for concurrent use.
package live
