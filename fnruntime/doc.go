// Package fnruntime resolves pipeline steps to code.
//
// A [Registry] implements pipeline.Resolver: it maps function images (with
// or without the catalog prefixes ghcr.io/kptdev/krm-functions-catalog/
// and gcr.io/kpt-fn/) to Go implementations, runs exec steps as local
// processes over the ResourceList protocol ([ExecFunction]: no shell, an
// explicit environment, a timeout, capped stdout and stderr, stderr kept
// for the error), and applies an allow list, a deny list, exec gating and a
// default timeout. It holds no global state: callers create one,
// optionally Register their own functions, and pass it to
// pipeline.NewKptfile or pipeline.New.
//
// # Versions
//
// Each builtin declares the catalog releases it implements
// ([BuiltinVersions], the table below): the newest release of each minor
// line whose documented behaviour it has. Where an older line behaves
// differently and its documentation says how (set-namespace v0.2 and v0.3), that
// line has its own implementation, which a step pinning it runs. Where the
// catalog's later, unreleased code behaves otherwise than the newest
// release of a line (set-namespace v0.4.1, set-labels v0.2.0,
// set-annotations v0.1.4), a step pinning that line (a version, or a
// constraint the release satisfies) runs the release as released, and an
// unpinned, latest or other plain-tagged step runs the later code, which
// kpt's conformance cases pin as latest. A version pinned in the image
// ("set-labels:v0.1.5") or in Step.Tag, or a semver constraint in Step.Tag
// (the Masterminds semver library's syntax, which kpt uses: x-ranges,
// tilde, caret and hyphen ranges, and, or), is checked against them: a
// version outside the implemented lines is refused with a *VersionError
// naming the image and the lines cad implements (or, with
// Options.Containers, runs the real image in a container), never run with
// another release's behaviour. "latest", no tag, a digest and other plain
// tags resolve to the builtin (see [Registry.Resolve]).
//
// # Builtins
//
// The builtin functions ([Builtins]) follow the catalog functions of the
// same name, result messages and failures included. As the catalog's Go
// SDK and kyaml's function framework exit 1 whenever a result has
// severity error, a builtin that reports an error result fails the step
// (a *pipeline.FunctionError, exit code 1, so the render or cadctl's
// fn eval fails), and a config of the wrong shape (set-labels with
// labels as a list, set-annotations with no annotations or no config,
// set-namespace with no namespace, a config of another kind) fails the
// step as the release fails it ("Config errors").
//
// # Config errors
//
// Every builtin reports a config error (no functionConfig where it needs
// one, one of another kind, a field of the wrong shape, a value outside
// the documented ones) by failing the step with a *pipeline.FunctionError
// of exit code 1 that matches [ErrInvalidFunctionConfig] (and the
// function's own sentinel where it has one), changing, adding and
// removing no item. What it reports is what the release it implements
// reports, read from that release's main, the SDK or framework it is
// built on, and its tests; the message is the release's where its code,
// documentation or tests show it, else cad's own words (the table says
// which):
//
//	shape                              builtins (release)
//	one error result naming nothing    set-namespace pinned v0.4.x (v0.4.1:
//	(message and severity), stderr       the SDK's ErrorResult), set-labels
//	the SDK's "function failure" or      pinned v0.2.x (v0.2.0's tests),
//	the framework's message              set-annotations pinned v0.1.x,
//	                                     apply-replacements (v0.1.1),
//	                                     search-replace (v0.2.0),
//	                                     create-setters (v0.1.0),
//	                                     set-enforcement-action (v0.1.0),
//	                                     starlark
//	no result: the message on stderr   set-image (v0.1.1: "failed to evaluate
//	(the release's processor returns     function: <message>"),
//	the error)                           ensure-name-substring (v0.2.0),
//	                                     upsert-resource (v0.2.0),
//	                                     set-project-id (v0.2.0)
//	one error result naming the        unpinned or latest set-namespace,
//	functionConfig in its resourceRef    set-labels and set-annotations (the
//	                                     catalog's later code, as kpt's issue
//	                                     4547 quotes set-namespace's: "[error]
//	                                     v1/ConfigMap/function-input:
//	                                     `data.namespace` should not be
//	                                     empty"), set-namespace pinned v0.2.x
//	                                     and v0.3.x, kubeconform,
//	                                     generate-kpt-pkg-docs (cad's words)
//
// field.path is never set. The one documented exception is set-labels
// without a functionConfig (or with kpt's implicit empty ConfigMap
// function-input), which reports [info] "`FunctionConfig` is not given",
// naming nothing, and fails, as kpt's conformance case
// fn-render/no-fnconfig expects. Errors met while running (a starlark
// script error, a failing replacement, a setter that matches nothing) are
// not config errors and keep their own results. Builtins that read no
// config (format, fix, list-setters, remove-local-config-resources,
// generate-folders, enable-gcp-services, export-terraform,
// builtins/gen-pkg-context) and apply-setters (any ConfigMap's data are
// setters) have no config error.
//
//	function               versions implemented   what differs
//	set-namespace          v0.2.x, v0.3.x, v0.4.x v0.2 and v0.3 have their own implementations,
//	                                              as their READMEs document: v0.2 kustomize's
//	                                              transformer (every resource not known to be
//	                                              cluster-scoped, custom kinds and the Kptfile
//	                                              included); v0.3 one old namespace replaced,
//	                                              chosen by namespaceMatcher, the one Namespace
//	                                              object or the one value all fields share, its
//	                                              messages cad's (the README gives none); v0.1
//	                                              refused. A step pinning v0.4.x runs v0.4.1
//	                                              as released: every namespace field to the
//	                                              new value (no namespaceMatcher, no origin),
//	                                              one result `namespace "a","b" updated to
//	                                              "new", N value(s) changed` (old values
//	                                              sorted: the release prints Go's map order;
//	                                              an unset namespace counts as "") or `all
//	                                              namespaces are already "new". no value
//	                                              changed`; depends-on moved without a result
//	                                              (a core object's never, as released); CRD and
//	                                              APIService service namespaces only where
//	                                              set, as the README says; a duplicate item is
//	                                              an error result that fails the step (the
//	                                              release exits 0). Unpinned or latest: the
//	                                              catalog's later code (namespaceMatcher,
//	                                              origins, a depends-on result), which kpt's
//	                                              conformance cases expect
//	set-labels             v0.2.x                 v0.1 (kustomize's label transformer,
//	                                              additionalLabelFields) refused; a step
//	                                              pinning v0.2.x words config errors as
//	                                              v0.2.0's tests show ("unknown FunctionConfig
//	                                              `Kind.group`, expect `SetLabels.fn.kpt.dev`
//	                                              or `ConfigMap.v1`", "unable to convert
//	                                              object to *setlabels.SetLabels with error:
//	                                              ..."), naming nothing; unpinned, the later
//	                                              code's words, naming the functionConfig
//	set-annotations        v0.1.x                 a step pinning v0.1.x runs v0.1.4 as released
//	                                              (its tests): no result on success, a config
//	                                              error as message and severity only, stderr
//	                                              "[error] : <message>"; unpinned or latest,
//	                                              the catalog's later code, as kpt's
//	                                              conformance cases (pinning latest) expect:
//	                                              a result per field set ("set annotations:
//	                                              {...}"), a config error naming its config
//	set-image              v0.1.x                 as v0.1.1 and its README: the containers and
//	                                              initContainers of a pod spec or template in
//	                                              any kind; newTag with digest is an error;
//	                                              one result per image changed ("set image
//	                                              from A to B", field path spec.containers.image)
//	                                              or "no images changed"; the release's config
//	                                              error words, and as it fails on one: no
//	                                              result, stderr "failed to evaluate
//	                                              function: <message>". additionalImageFields
//	                                              updates existing fields only (create adds no
//	                                              field); an unknown ConfigMap key is a config
//	                                              error (the release ignores it)
//	search-replace         v0.2.x                 a config error is v0.2.0's one result
//	                                              "failed to perform search-replace operation:
//	                                              %q", naming nothing
//	starlark               v0.4.x, v0.5.x         load() has json, math, time, base64, yaml, hash
//	                                              and krmfn, not bsoup, csv, geo, html, http, re,
//	                                              xlsx, zipfile; ctx.environment is empty
//	apply-replacements     v0.1.x                 written from kustomize's replacements
//	                                              reference and the catalog's v0.1.x README,
//	                                              not from their code: an ApplyReplacements
//	                                              (fn.kpt.dev/v1alpha1) config only; a
//	                                              replacement by path is refused (a function
//	                                              reads no files); sourceValue is refused
//	                                              (kustomize added it in v5.7.0, 2025, after
//	                                              v0.1.x); label and annotation selectors
//	                                              only in select and reject, as the schema has
//	                                              them; name, namespace and [key=value] match
//	                                              exactly, no patterns; * is every element of
//	                                              a list; a
//	                                              scalar written over a scalar takes its value
//	                                              and type and keeps the field's quoting and
//	                                              comments; a field create adds with a
//	                                              delimiter starts empty; a failing run changes
//	                                              nothing; messages are cad's, except "nothing
//	                                              selected by" and "multiple matches for
//	                                              selector", worded as kustomize prints them,
//	                                              and a missing config or one of another kind,
//	                                              worded as v0.1.1 words them; a config error
//	                                              names nothing, as v0.1.1's
//	apply-setters          v0.2.x                 v0.1 (OpenAPI setters in the Kptfile) refused
//	ensure-name-substring  v0.2.x                 renames in place, as v0.2.0's README and
//	                                              examples show: every resource keeps its file,
//	                                              its place and its package (the catalog's
//	                                              later, unreleased code moves resources to
//	                                              kpt's default files); name references are
//	                                              a subset of kustomize's table; its config
//	                                              errors are worded by cad (the README
//	                                              documents none) and fail as v0.2.0's do: no
//	                                              result, the message on stderr
//	upsert-resource        v0.2.x                 v0.1 refused; a config error fails as
//	                                              v0.2.0's does: no result, the message on
//	                                              stderr
//	set-project-id         v0.2.x                 a missing project-id is an error (the catalog
//	                                              sets empty values); an empty annotation is
//	                                              replaced, as documented; the Kptfile is edited
//	                                              in place, comments kept; an error has no
//	                                              result, as v0.2.0's
//	remove-local-config-resources v0.1.x          -
//	format                 v0.1.x                 -
//	set-enforcement-action v0.1.x                 a config error is v0.1.0's one result
//	                                              ("failed to process policies: ..."), naming
//	                                              nothing
//	list-setters           v0.1.x                 -
//	fix                    v0.2.x                 setters go into apply-setters' configMap, as the
//	                                              documentation shows (the catalog's code writes
//	                                              setters.yaml); OpenAPI enum values are not
//	                                              substituted; v1alpha2's configMap stays
//	generate-folders       v0.1.x                 written from its README, the input kinds'
//	                                              CRDs and the three example packages (v1alpha3,
//	                                              cft.dev v1alpha2 and v1alpha1), whose Folders
//	                                              and old-version warning (severity "warn") it
//	                                              reproduces; cad's choices where they are
//	                                              silent: a cft.dev hierarchy under a Folder
//	                                              gets Config Connector's folder-id annotation,
//	                                              a v1alpha3 one without a namespace no
//	                                              depends-on, the hierarchy's annotations are
//	                                              inherited except kpt's own, a Folder already
//	                                              in the package with a generated name is
//	                                              replaced in its file (a second render changes
//	                                              nothing), and the result messages are cad's
//	                                              own words except the old-version warning,
//	                                              worded as v0.1.1 and its examples word it; kpt's cnrm blueprint attribution
//	                                              is the render's (Options.NoAttribution)
//	create-setters         v0.1.x                 kpt's path/index annotations are never
//	                                              parameterised; equal-length setter values are
//	                                              tried in name order (random in the catalog);
//	                                              a config error is v0.1.0's one result, naming
//	                                              nothing
//	kubeconform            unversioned            kpt's tests pin latest; validates against the
//	                                              Kubernetes OpenAPI schemas cad ships (1.37.2,
//	                                              embedded from k8s.io/kubernetes, the default;
//	                                              1.21.2, kyaml's) with kubeconform's messages;
//	                                              kubernetes_version picks one, another minor is
//	                                              refused; no schema_location (no download)
//	enable-gcp-services    v0.1.x                 written from its README and examples; a set
//	                                              that is not local-config or has no services
//	                                              is an error result worded by cad; a new
//	                                              Service goes to service_<name>.yaml beside
//	                                              its set (in its directory and package: a
//	                                              subpackage's Services stay in it)
//	export-terraform       v0.1.x, v0.2.x, v0.3.x written from the README and its two examples (the
//	                                              same in all three releases): Folder and
//	                                              IAMPolicyMember on an Organization or Folder
//	                                              become folders.tf, iam.tf and variables.tf in
//	                                              the terraform ConfigMap (terraform.yaml) as
//	                                              shown; the other kinds a line lists (Project,
//	                                              IAMPolicy, IAMPartialPolicy; v0.2 adds logging,
//	                                              BigQuery, Pub/Sub, storage, audit and network
//	                                              kinds, v0.3 ComputeSharedVPCHostProject and
//	                                              ComputeRoute) have no documented Terraform and
//	                                              are error results, so the step fails; a
//	                                              folderRef.external parent is "folders/<id>"
//	                                              and a name that is not a Terraform identifier
//	                                              gets underscores (cad's choices); README.md
//	                                              is cad's own text, not the catalog's
//	generate-kpt-pkg-docs  unstable only          never released with a version: its README runs
//	                                              generate-kpt-pkg-docs:unstable, so plain tags
//	                                              resolve and any version is refused (never
//	                                              released); written from the README and the
//	                                              generate-kpt-pkg-docs-simple example, whose
//	                                              layout it follows (markers, title, section
//	                                              names, table columns and padding, reference
//	                                              links, the kpt commands of the usage steps):
//	                                              the readme-path mount point /tmp is the
//	                                              package's directory and the readme is written
//	                                              through pipeline.ResourceList.WriteFiles (so
//	                                              it runs in a render or cadctl's fn eval of a
//	                                              directory, not over a bare ResourceList);
//	                                              the README's inline sample differs from the
//	                                              example by a blank line and a stray quote,
//	                                              the example is followed; the usage steps'
//	                                              prose is cad's own words, not the catalog
//	                                              template's; what neither shows is cad's: a
//	                                              package without setters, resources or a
//	                                              title annotation, the sub-packages table,
//	                                              local-config resources left out, references
//	                                              for Config Connector kinds only, the skip
//	                                              warning and the config errors' words
//	builtins/gen-pkg-context: unversioned (kpt's builtin)
//
// kpt's e2e test images no-op and drop-comments are not builtins: a
// package naming them gets a *NotFoundError, as from kpt without them.
//
// A real release is never refused: a pinned full version resolves when
// its minor line is implemented, whether or not cad knows of that patch.
// cad's record of the releases (CatalogVersion.Released) is the catalog
// repository's git tags as of 2025-06-25 plus the versions seen published
// without a tag (set-namespace v0.4.3, set-labels v0.2.5, apply-setters
// v0.2.2, which Porch's test blueprints and kpt's fixtures pull from the
// catalog's registry); as the catalog publishes patch images from its
// release branches without tagging them, that record is incomplete and a
// version missing from it is not known not to exist. The one version
// known not to exist is any version of a function the catalog never
// released with a version (CatalogVersion.Unreleased:
// generate-kpt-pkg-docs, whose every image is a plain tag such as its
// documented "unstable"): it resolves for plain tags and refuses every
// version and constraint as never released.
//
// render-helm-chart (v0.2) is in-process in its own module,
// github.com/configasdata/cad/helmfn, so that Helm's SDK stays out of this
// one: helmfn.Register adds it to a Registry (cadctl registers it).
//
// Catalog functions cad does not implement in-process (they run as
// containers with Options.Containers), and why:
//
//	gatekeeper             needs OPA's Rego engine and Gatekeeper's constraint
//	                       framework, a large dependency outside DESIGN.md's list
//	kubeval                deprecated by the catalog in favour of kubeconform
//	                       (a builtin); it downloads its schemas
//	source-gcloud-config   reads the gcloud CLI's configuration (a binary and
//	                       the user's cloud account)
//	sops                   decrypts with external keys (KMS, PGP)
//	set-name-prefix        released (v0.0.1 to v0.0.3, 2022) but undocumented:
//	                       no README, no example, no FunctionConfig
//	                       description; only a one-line description ("Set a
//	                       prefix on all object names") and a commit message
//	                       (an old prefix replaced on all names and the
//	                       references to them). Which fields it reads and which
//	                       references it rewrites are defined only by its code
//	                       and tests, and cad does not implement from those (a
//	                       2021 set-name-prefix with an example README, on
//	                       kustomize's prefix transformer, was never merged or
//	                       released)
//	bind                   never released (no tag) and undocumented (no README,
//	                       no metadata, no example): code only
//	set-gcp-resource-ids   never released (no tag) and undocumented: a one-line
//	                       description ("Set resourceIDs and other identifiers
//	                       for GCP resources") and no README or example
//
// The starlark builtin (go.starlark.net) is bounded in steps and in
// memory, by guards that reserve each large allocation before it happens
// and a heap watchdog ([StarlarkFunction], Options.StarlarkMaxSteps and
// StarlarkMaxMemory); an exec function over its output cap fails with
// [ErrOutputTooLarge], which the renderer's *pipeline.RenderError carries.
// "Bounds" lists every bound of this package.
// Other images run as wasm when Options.Wasm is set, else in a container
// ([ContainerFunction]) when Options.Containers is set; otherwise
// resolving them gives a *NotFoundError ("Where functions run").
//
// # Where functions run
//
// Each step resolves to one of four places: in-process in Go, in-process
// as WebAssembly, on Porch's function runner, or in a local process or
// container. For each function:
//
//	function                        where it runs
//	the builtins of the tables      in-process, in Go ([Builtins]): every function of
//	  above (set-namespace ...        the versions table, kubeconform, starlark (in its
//	  generate-kpt-pkg-docs)          bounded interpreter) and builtins/gen-pkg-context
//	render-helm-chart               in-process, in Go, once helmfn.Register added it to
//	                                the Registry (cadctl, the server and the operator
//	                                do); Helm's SDK stays in module helmfn
//	CEL functions and expressions   in-process (fnruntime/celfn, with a cost limit)
//	functions given to Register     in-process: the caller's own Go code
//	an exec step                    a local process ([ExecFunction]), with
//	                                Options.AllowExec; kpt's e2e test images too,
//	                                when a test registers them
//	an exec step naming a .wasm     wasm, in-process (Options.Wasm: fnruntime/wasmfn,
//	  file                          wazero), with Options.AllowExec as well
//	any other image: the catalog    1. wasm, in-process, when Options.Wasm is set: the
//	  functions listed above as        image must hold a WASI module in kpt's wasm
//	  not implemented (gatekeeper,     image format (kpt's own wasm builds of catalog
//	  kubeval, source-gcloud-config,   functions target GOOS=js and are refused, saying
//	  sops, set-name-prefix, bind,     so);
//	  set-gcp-resource-ids), a      2. else a container (docker or podman) when
//	  version no builtin implements,   Options.Containers is set;
//	  any third-party function      3. else Porch's function runner, when the Registry
//	                                   is wrapped by fnrunner's Client.Resolver (module
//	                                   fnrunner; the operator and the server take the
//	                                   runner's address as a flag);
//	                                4. else a *NotFoundError
//
// A pod has no container engine: there, what is not built in runs as wasm
// or on the function runner.
//
// # Bounds
//
// A function config, the resources a function reads and an exec
// function's output are all inputs a user controls; each has a bound on
// the memory, CPU and time it can cost, enforced before the work that
// would pass it. A refusal is an error matching revision.ErrLimit (and
// revision.ErrInvalid), with a *revision.LimitError naming the bound.
//
//	bound                   default       bounds
//	Options.Timeout         5 minutes     one run of any function (DefaultTimeout); the
//	                                      caller's context always ends it sooner
//	Limits.MaxOutputBytes   128 MiB       what one builtin run adds to its input (items,
//	                                      results, files written), YAML text plus 160
//	                                      bytes a node
//	Limits.OutputFactor     4             what a builtin run adds: OutputFactor × its
//	Limits.OutputSlack      16 MiB        input's size + OutputSlack (a run that does
//	                                      not grow its input is never refused)
//	Limits.MaxPathDepth     100           the segments of a field path a builtin writes
//	                                      through: search-replace by-path,
//	                                      apply-replacements fieldPaths (create or not)
//	ExecFunction.Timeout    5 minutes     an exec run under a context without deadline
//	                                      (DefaultExecTimeout)
//	Options.MaxOutput       64 MiB        an exec or container function's stdout
//	Options.MaxStderr       1 MiB         its stderr
//	Options.StarlarkMax*    see there     the starlark builtin's steps and memory
//	wasmfn.Options          see there     a wasm function's memory (512 MiB), module
//	                                      size (128 MiB); its time and output are
//	                                      Options.Timeout, MaxOutput and MaxStderr
//
// The builtins charge what they write before writing it: search-replace
// sizes each capture-group substitution of put-value and put-comment
// before making it (a group repeated 100,000 times over a 1 MiB value, or
// groups that name the next group and double the text each time, are
// refused before the allocation); set-labels and set-annotations index
// each mapping once, so a run is linear in labels × places, and charge
// each field; apply-replacements charges every value it copies and every
// field create adds. After the run the output is measured again (without
// encoding) before the caller encodes it. Every builtin checks its context
// in its loops over the items, so a cancelled render stops within one
// resource's work. A refused run fails the step with one error result
// naming the bound; a path deeper than MaxPathDepth is a config error
// (see "Config errors") that also matches revision.ErrLimit.
//
// An exec function runs in a process group of its own (on Unix): its
// timeout, or its caller's context ending, kills the whole group, so a
// grandchild that holds stdout open cannot keep the run alive, and the run
// returns within about a second. Its stdout and stderr are capped
// (ErrOutputTooLarge, a *revision.LimitError); stderr that is binary,
// lacks a final newline or is not UTF-8 is kept as text (invalid bytes
// replaced, control characters dropped).
package fnruntime
