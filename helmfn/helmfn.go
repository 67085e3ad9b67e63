package helmfn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// Image is the catalog function this package implements; with the
// catalog prefixes (ghcr.io/kptdev/krm-functions-catalog/,
// gcr.io/kpt-fn/) it names the same function.
const Image = "render-helm-chart"

// Release is the catalog release whose behaviour [Function] has; it
// stands for the v0.2 line.
const Release = "v0.2.2"

// ErrRender matches the error a failed run returns (inside a
// *pipeline.FunctionError): the function reported an error result.
var ErrRender = errors.New("render-helm-chart failed")

// Options configure a [Function]. The zero value (and nil) means: no
// local files, http.DefaultClient's transport with a 2 minute timeout,
// TLS to OCI registries, 64 MiB per download.
type Options struct {
	// Files are the files local charts (helmGlobals.chartHome) and local
	// valuesFiles are read from, the counterpart of the directory mounted
	// into the catalog's container; typically a package's files
	// (revision.Files is an fs.FS). Nil means, in a render, the files of
	// the package whose pipeline runs the function (pipeline.ResourceList.PackageFiles),
	// and elsewhere none: a chart must be pulled and a values file must be
	// a URL.
	Files fs.FS
	// HTTPClient fetches index.yaml, chart archives, remote values files
	// and OCI blobs. Nil means a client with a 2 minute timeout.
	HTTPClient *http.Client
	// PlainHTTP talks plain HTTP to oci:// registries (a local registry).
	PlainHTTP bool
	// MaxDownload caps one download (index, archive, values file); zero
	// means 64 MiB.
	MaxDownload int64
	// ArchiveCacheBytes bounds the chart archives kept in memory between
	// renders, by the digest the repository's index.yaml gives them (an
	// archive whose content does not have that digest is not kept); zero
	// means DefaultArchiveCacheBytes, negative keeps none. index.yaml
	// itself is read on every render.
	ArchiveCacheBytes int64
	// IndexLimits bound the reading of a chart repository's index.yaml:
	// its MaxBytes caps the download (within MaxDownload), and the other
	// per-file bounds (documents, nesting, nodes, alias expansion, mapping
	// size) are checked before it is parsed; the package bounds do not
	// apply. An index over a bound fails the render or Charts call with a
	// *revision.YAMLLimitError (matching repository.ErrInvalidInput). Nil
	// means the defaults of revision.YAMLLimits (32 MiB and a million
	// nodes, about 20,000 chart versions); raise them for a larger
	// repository.
	IndexLimits *revision.YAMLLimits
}

// Function is the render-helm-chart KRM function on Helm's Go SDK: it
// renders each chart of its config as helm template does (client only,
// no cluster) and appends the rendered resources to the items. It
// implements pipeline.Function and is safe for concurrent use.
type Function struct {
	opts     Options
	archives *archiveCache
}

var _ pipeline.Function = (*Function)(nil)

// New returns the function with opts (nil means the defaults).
func New(opts *Options) *Function {
	f := &Function{}
	if opts != nil {
		f.opts = *opts
	}
	if f.opts.HTTPClient == nil {
		f.opts.HTTPClient = &http.Client{Timeout: 2 * time.Minute}
	}
	if f.opts.MaxDownload <= 0 {
		f.opts.MaxDownload = 64 << 20
	}
	if f.opts.ArchiveCacheBytes == 0 {
		f.opts.ArchiveCacheBytes = DefaultArchiveCacheBytes
	}
	f.archives = newArchiveCache(f.opts.ArchiveCacheBytes)
	return f
}

// Register registers New(opts) in reg as render-helm-chart, release
// [Release] (its v0.2 line): steps naming the image with or without a
// catalog prefix, untagged or tagged in the v0.2 line, resolve to it. It
// returns reg's error for a malformed release, which does not happen.
func Register(reg *fnruntime.Registry, opts *Options) error {
	return reg.RegisterVersion(Image, New(opts), Release)
}

// Run renders the charts of rl.FunctionConfig and appends their
// resources to rl.Items. A bad config, a chart that cannot be found,
// fetched or loaded, bad values or a template error is an error result
// in rl.Results and a *pipeline.FunctionError (exit code 1) matching
// [ErrRender]; rl.Items are then unchanged. A cancelled ctx returns its
// error.
func (f *Function) Run(ctx context.Context, rl *pipeline.ResourceList) error {
	fail := func(msg string) error {
		rl.Results = append(rl.Results, &pipeline.Result{Message: msg, Severity: pipeline.SeverityError})
		return &pipeline.FunctionError{ExitCode: 1, Stderr: msg, Err: ErrRender}
	}
	cfg, err := parseConfig(rl.FunctionConfig)
	if err != nil {
		return fail("failed to configure function: " + err.Error())
	}
	var out []*yaml.RNode
	for i, c := range cfg.HelmCharts {
		creds, err := findCredentials(rl.Items, c.ChartArgs.Auth, c.ChartArgs.Repo)
		if err != nil {
			return fail(fmt.Sprintf("helmCharts[%d] (chart %s): %v", i, c.ChartArgs.Name, err))
		}
		items, err := f.render(ctx, f.files(rl.PackageFiles), cfg.HelmGlobals, c, creds)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fail(fmt.Sprintf("helmCharts[%d] (chart %s): %v", i, c.ChartArgs.Name, err))
		}
		out = append(out, items...)
	}
	rl.Items = append(rl.Items, out...)
	return nil
}

// render renders one chart to resources with path annotations.
func (f *Function) render(ctx context.Context, files fs.FS, g Globals, c Chart, creds *credentials) ([]*yaml.RNode, error) {
	ch, err := f.loadChart(ctx, files, g, c.ChartArgs, creds)
	if err != nil {
		return nil, err
	}
	vals, err := f.values(ctx, files, ch, c.TemplateOptions.Values)
	if err != nil {
		return nil, err
	}
	return renderChart(ctx, ch, vals, c.TemplateOptions)
}

// renderChart renders ch with vals as helm template does, with to's
// release, namespace, CRD, test and API version options (its values are
// unused: vals are), to resources with kpt's default path annotations.
// Output over the default revision.YAMLLimits is refused with the
// *revision.YAMLLimitError.
func renderChart(ctx context.Context, ch *chart.Chart, vals map[string]any, to TemplateOptions) ([]*yaml.RNode, error) {
	var err error
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	inst := action.NewInstall(cfg)
	inst.DryRunStrategy = action.DryRunClient
	inst.Replace = true
	inst.ReleaseName = to.ReleaseName
	if to.NameTemplate != "" {
		if inst.ReleaseName, err = action.TemplateName(to.NameTemplate); err != nil {
			return nil, fmt.Errorf("nameTemplate: %w", err)
		}
	}
	if inst.ReleaseName == "" {
		inst.ReleaseName = DefaultReleaseName
	}
	inst.Namespace = to.Namespace
	if inst.Namespace == "" {
		inst.Namespace = "default"
	}
	inst.IncludeCRDs = to.IncludeCRDs
	inst.APIVersions = to.APIVersions
	r, err := inst.RunWithContext(ctx, ch, vals)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	rel, ok := r.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("render: unexpected release type %T", r)
	}
	var buf bytes.Buffer
	buf.WriteString(rel.Manifest)
	for _, h := range rel.Hooks {
		if to.SkipTests && slices.Contains(h.Events, release.HookTest) {
			continue
		}
		fmt.Fprintf(&buf, "\n---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	// A chart's templates can write anything: hold their output to the
	// default revision.YAMLLimits before kyaml reads it.
	if err := revision.CheckYAML(ctx, "rendered manifests", buf.Bytes(), nil); err != nil {
		return nil, err
	}
	items, err := (&kio.ByteReader{Reader: &buf, OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, fmt.Errorf("rendered manifests: %w", err)
	}
	for _, it := range items {
		if it.GetKind() == "" || it.GetApiVersion() == "" {
			return nil, fmt.Errorf("rendered manifests: a document without apiVersion or kind:\n%s", it.MustString())
		}
	}
	if err := kioutil.DefaultPathAnnotation("", items); err != nil {
		return nil, fmt.Errorf("path annotations: %w", err)
	}
	for _, it := range items {
		p := it.GetAnnotations()[kioutil.PathAnnotation]
		if err := it.PipeE(yaml.SetAnnotation(kioutil.LegacyPathAnnotation, p)); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// values combines the values files and inline values as valuesMerge
// says; Helm then coalesces the result with the chart's defaults. A
// values file over the default revision.YAMLLimits is refused with the
// *revision.YAMLLimitError.
func (f *Function) values(ctx context.Context, files fs.FS, ch *chart.Chart, v Values) (map[string]any, error) {
	var base map[string]any
	if len(v.ValuesFiles) == 0 {
		base = deepCopy(ch.Values)
	} else {
		base = map[string]any{}
		for _, name := range v.ValuesFiles {
			data, err := f.readFile(ctx, files, name)
			if err != nil {
				return nil, fmt.Errorf("valuesFiles: %w", err)
			}
			if err := revision.CheckYAML(ctx, name, data, nil); err != nil {
				return nil, fmt.Errorf("valuesFiles: %w", err)
			}
			m, err := common.ReadValues(data)
			if err != nil {
				return nil, fmt.Errorf("valuesFiles: %s: %w", name, err)
			}
			base = mergeValues(base, m.AsMap())
		}
	}
	inline := deepCopy(v.ValuesInline)
	switch v.ValuesMerge {
	case "replace":
		if v.ValuesInline != nil {
			return inline, nil
		}
		return base, nil
	case "merge":
		return mergeValues(inline, base), nil
	default: // override
		return mergeValues(base, inline), nil
	}
}

// mergeValues returns dst with src deep-merged in (src wins).
func mergeValues(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, sv := range src {
		if sm, ok := sv.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = sv
	}
	return dst
}

// deepCopy copies the maps of a values tree (the leaves are shared).
func deepCopy(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	out := maps.Clone(m)
	for k, v := range out {
		if vm, ok := v.(map[string]any); ok {
			out[k] = deepCopy(vm)
		}
	}
	return out
}

// isURL reports whether name is fetched over HTTP.
func isURL(name string) bool {
	return strings.HasPrefix(name, "http://") || strings.HasPrefix(name, "https://")
}
