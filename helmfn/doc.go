// Package helmfn is the catalog's render-helm-chart KRM function, run
// in-process on Helm's Go SDK (helm.sh/helm/v4), and [Charts], which makes
// Helm charts package upstreams for the engine (see "Charts as package
// upstreams" below). It is a module of its own
// (github.com/configasdata/cad/helmfn) so that Helm and the k8s.io modules
// it brings stay out of the root module: programs that want it register it
// with a function registry.
//
//	reg := fnruntime.NewRegistry(nil)
//	err := helmfn.Register(reg, nil) // local charts: the rendered package's files
//
// [Register] registers a [Function] as render-helm-chart, release v0.2.2
// (the v0.2 line), so a step naming render-helm-chart,
// ghcr.io/kptdev/krm-functions-catalog/render-helm-chart or
// gcr.io/kpt-fn/render-helm-chart, untagged or tagged in v0.2, runs it; a
// v0.1 tag is refused by the registry (*fnruntime.VersionError).
//
// # Config
//
// A RenderHelmChart (fn.kpt.dev/v1alpha1), as the catalog's v0.2:
//
//	apiVersion: fn.kpt.dev/v1alpha1
//	kind: RenderHelmChart
//	metadata:
//	  name: render
//	helmGlobals:
//	  chartHome: charts          # default tmp/charts, as the catalog
//	helmCharts:
//	- chartArgs:
//	    name: hello              # required
//	    version: 1.2.3           # a version or a semver constraint; empty: the newest
//	    repo: https://charts.example.com   # or oci://registry.example.com/charts
//	    auth: {kind: Secret, name: repo-creds}   # optional, a Secret in the input
//	  templateOptions:
//	    releaseName: web         # default release-name
//	    namespace: prod          # .Release.Namespace; default "default"
//	    nameTemplate: ""         # a release name template, as helm's --name-template
//	    includeCRDs: false
//	    skipTests: false
//	    apiVersions: []          # added to .Capabilities.APIVersions
//	    values:
//	      valuesFiles: [helm/prod.yaml]    # paths in the local files, or http(s) URLs
//	      valuesInline: {replicas: 3}
//	      valuesMerge: override  # override (inline wins), merge (files win), replace (inline only)
//
// or a ConfigMap whose data has the keys name, version, repo, releaseName,
// namespace, nameTemplate, includeCRDs, skipTests ("true"/"false"),
// valuesFile (one path or URL), chartHome and configHome, for one chart.
//
// Each chart is rendered as helm template renders it (a client-only
// install: no cluster, Helm's default capabilities): the release
// manifest, then the hooks (without test hooks when skipTests). The
// rendered resources are appended to the items with kpt's default path,
// <namespace>/<kind>_<name>.yaml in lower case, in
// internal.config.kubernetes.io/path and config.kubernetes.io/path; Helm's
// "# Source:" comment is kept. The values Helm gets are the valuesFiles
// merged in order (a later file wins), or the chart's own values.yaml when
// there is none, combined with valuesInline as valuesMerge says; Helm
// coalesces them with the chart's defaults, as it does for helm template
// --values.
//
// # Where charts come from
//
// First chartHome/name in the local files: Options.Files when set, else,
// in a render, the files of the package whose pipeline runs the function
// (pipeline.ResourceList.PackageFiles; in kpt, what the catalog's container would see
// through a mount). The chart's .helmignore applies, when it has a Chart.yaml
// and its version fits chartArgs.version
// (else, with a repo, the chart is pulled; without one it is an error).
// Else chartArgs.repo: an HTTP(S) chart repository, whose index.yaml gives
// the archive's URL, or an oci:// registry, where the chart is
// repo/name:version (with no version or a constraint, the newest tag that
// fits). Options.PlainHTTP is for a registry without TLS.
//
// In a kpt package, the chart's sources and any values files are not KRM:
// list them in the package's .krmignore (as for kpt) so the render does
// not read them as resources.
//
// # Errors
//
// Every failure is the function's, reported as kpt's functions report it:
// one error result in rl.Results and a *pipeline.FunctionError (exit code
// 1) matching [ErrRender]; the items are then left as they were, nothing
// of a partly rendered config is added. That covers a config of another
// kind or shape, a chart or version not in the repository, an unreachable
// repository or registry, a refused or missing credential, a download over
// Options.MaxDownload, an index.yaml over a bound of Options.IndexLimits
// (a *revision.YAMLLimitError naming its URL), a values file that cannot
// be read or parsed, and a template error (Helm's
// message, "required" and "fail" included). A cancelled context returns
// the context's error.
//
// # What differs from the catalog
//
// Credentials come only from a Secret among the input resources (no Helm or
// Docker credential file is read); no Helm configuration, repository cache or
// plugins are used; local charts are the rendered package's own files, not a
// container mount. DESIGN.md beside this package lists every difference.
//
// # Charts as package upstreams
//
// [Charts] implements engine.ChartRenderer and engine.ChartLister, so
// that a package can be cloned from a chart (engine.CloneSource.Helm),
// upgraded to another chart version or other values with a three-way
// merge (engine.Ref.Helm) and checked for newer chart versions
// (Engine.DiscoverHelmUpgrades):
//
//	charts := helmfn.NewCharts(nil)
//	pr, err := e.Clone(ctx, "deployments", key, engine.CloneSource{Helm: &engine.HelmUpstream{
//		Repo: "https://charts.example.com", Chart: "web", Version: "^1.2",
//		ReleaseName: "web", Namespace: "prod", Values: map[string]any{"replicas": 3},
//	}}, engine.CloneOptions{Charts: charts})
//	...
//	cands, err := e.DiscoverHelmUpgrades(ctx, nil, charts)
//	pr, err = e.Upgrade(ctx, "deployments", v1, engine.Ref{},
//		engine.Ref{Helm: &engine.HelmUpstream{Version: cands[0].Newer[0]}}, "v2", engine.UpgradeOptions{Charts: charts})
//
// Charts are fetched and rendered as the function does it (with CRDs,
// without test hooks), one file per resource at kpt's default path. Every
// failure is a *[ChartError] matching repository.ErrNotFound,
// repository.ErrUnavailable or repository.ErrInvalidInput. DESIGN.md has the
// lock's digest and how credentials are sent; cmd/helmquickstart walks
// through clone, edit, discovery and upgrade on a chart served on loopback.
//
// # Concurrency
//
// A [Function] and a [Charts] are safe for concurrent use; each run
// builds its own Helm action configuration and registry client.
package helmfn
