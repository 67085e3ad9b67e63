// Package fnrunner runs KRM functions on a function runner: a server of
// Porch's function-evaluator protocol (the gRPC service
// evaluator.FunctionEvaluator, method EvaluateFunction: one image over a
// serialized ResourceList, answering the output ResourceList and the
// function's log), such as the function runner a Porch installation
// deploys. A cad embedded in a pod (a Nephio controller, cad's operator,
// the reference server), where there is no container engine, runs the
// functions that are not built into cad there.
//
// It is a module of its own (github.com/configasdata/cad/fnrunner) so that
// gRPC stays out of the root module. A [Client] is made from the runner's
// URL, and its [Client.Resolver] puts it behind a function registry: a
// step the registry resolves (a builtin, a registered function, an exec
// step) runs as before, and an image step it has no function for
// (pipeline.ErrFunctionNotFound: no builtin, or not at the pinned version)
// is evaluated on the runner.
//
//	rc, err := fnrunner.New("grpc://function-runner.porch-system.svc:9445", nil)
//	...
//	defer rc.Close()
//	r := pipeline.NewKptfile(rc.Resolver(fnruntime.NewRegistry(nil)), nil)
//
// # Addresses and TLS
//
// grpc://host:port is plain text; grpcs://host:port is TLS, the runner's
// certificate checked against Options.RootCAs or Options.CAFile, else the
// system's roots. The connection is made on the first evaluation and
// shared by all of them.
//
// # Evaluations
//
// A [Function] sends the step's ResourceList, image and tag (a version or
// semver constraint, which Porch's runner resolves), and gives the
// renderer the output ResourceList, whose items and results become the
// step's, and the runner's log as the step's standard error. Each
// evaluation has a deadline: the caller's context's, or else
// Options.Timeout (DefaultTimeout). While the runner answers Unavailable
// (down, restarting, unreachable) the evaluation is tried again, up to
// Options.MaxAttempts times in all, with exponential backoff; no other
// failure is retried.
//
// # Errors
//
// Every failure names the image and the runner and unwraps to an
// [*Error]. A function that fails (Porch's runner answers Internal with
// its results and standard error) is a *pipeline.FunctionError, so the
// render records the failed step as it records a local one; an image the
// runner does not know matches pipeline.ErrFunctionNotFound; a deadline
// matches context.DeadlineExceeded.
//
// # Bounds
//
// The response is bounded by Options.MaxOutput (the output ResourceList,
// DefaultMaxOutput, as fnruntime's MaxOutput) and Options.MaxLog (the log,
// DefaultMaxLog, as fnruntime's MaxStderr). Their sum is gRPC's maximum
// receive size, which gRPC checks against a message's length prefix
// before reading it, so a runner that answers with more costs the client
// no memory in proportion; the error matches revision.ErrLimit. The
// renderer then holds the output to its revision.YAMLLimits (nesting,
// aliases, mapping sizes), as it holds every function's.
//
// # Concurrency
//
// A Client, its Functions and its Resolver are safe for concurrent use.
package fnrunner
