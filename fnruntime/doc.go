// Package fnruntime resolves pipeline steps to code.
//
// A [Registry] implements pipeline.Resolver: it maps function images (with
// or without the catalog prefixes ghcr.io/kptdev/krm-functions-catalog/
// and gcr.io/kpt-fn/) to Go implementations, runs exec steps as local
// processes over the ResourceList protocol ([ExecFunction]: no shell, an
// explicit environment, a timeout, capped stdout and stderr, stderr kept
// for the error), and applies an allow list, a deny list, exec gating and a
// default timeout. Each builtin declares the catalog release it behaves
// like ([BuiltinVersions]); a version or semver constraint in Step.Tag
// (the Masterminds semver library's syntax, which kpt uses: x-ranges,
// tilde, caret and hyphen ranges, and, or) is checked against it, while "latest", no
// tag, a digest and plain tags resolve to it (see [Registry.Resolve]). It
// holds no
// global state: callers create one, optionally Register their own
// functions, and pass it to pipeline.NewKptfile or pipeline.New.
//
// The builtin functions ([Builtins]) follow the catalog functions of the
// same name, result messages and failures included. As the catalog's Go
// SDK and kyaml's function framework exit 1 whenever a result has
// severity error, a builtin that reports an error result fails the step
// (a *pipeline.FunctionError, exit code 1, so the render or cadctl's
// fn eval fails), and a config of the wrong shape (set-labels with
// labels as a list, set-annotations with no annotations or no config,
// set-namespace with no namespace, a config of another kind) is such an
// error, worded as the catalog function words it. The functions: set-namespace, set-labels,
// set-annotations, set-image, search-replace, starlark (go.starlark.net),
// apply-replacements (kustomize's replacements on kyaml), apply-setters,
// ensure-name-substring, kpt's builtins/gen-pkg-context, and the test
// images no-op and drop-comments. The starlark builtin is bounded in steps
// and, by a heap watchdog, in memory ([StarlarkFunction],
// Options.StarlarkMaxSteps and StarlarkMaxMemory); an exec function over
// its output cap fails with [ErrOutputTooLarge], which the renderer's
// *pipeline.RenderError carries. Other images run in a container ([ContainerFunction]) only when Options.Containers is set;
// otherwise resolving them gives a *NotFoundError.
package fnruntime
