package helmfn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Charts makes Helm charts usable as package upstreams: it implements
// engine.ChartRenderer (for Engine.Clone with CloneSource.Helm and
// Engine.Upgrade with Ref.Helm) and engine.ChartLister (for
// Engine.DiscoverHelmUpgrades) on Helm's SDK, fetching charts as the
// render-helm-chart [Function] does: from an HTTP(S) chart repository
// (index.yaml, then the archive) or an oci:// registry. A Charts is safe
// for concurrent use.
type Charts struct {
	f *Function
}

var (
	_ engine.ChartRenderer = (*Charts)(nil)
	_ engine.ChartLister   = (*Charts)(nil)
)

// NewCharts returns a Charts with opts (nil means the defaults): its
// HTTPClient, PlainHTTP, MaxDownload and IndexLimits apply; Files is
// unused, every chart is fetched from its repository.
func NewCharts(opts *Options) *Charts {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Files = nil
	return &Charts{f: New(&o)}
}

// ChartError is the error of every failed [Charts] call: the operation
// ("render", "list versions"), the chart and what went wrong. Err matches
// one of package repository's sentinels: ErrNotFound for a chart, version
// or repository that does not exist; ErrUnavailable for a repository or
// registry that cannot be reached or refuses the credentials;
// ErrInvalidInput for a bad upstream (no repo or chart, a repo that is not
// http(s):// or oci://, an Auth of another type), a chart that does not
// load, bad values or a template error. A cancelled context is the
// context's error.
type ChartError struct {
	Op      string
	Repo    string
	Chart   string
	Version string // as asked for
	Err     error
}

// Error returns the message; it never holds credentials.
func (e *ChartError) Error() string {
	v := ""
	if e.Version != "" {
		v = " version " + e.Version
	}
	return fmt.Sprintf("helm %s: chart %s%s of %s: %v", e.Op, e.Chart, v, e.Repo, e.Err)
}

// Unwrap returns the cause, which matches the sentinel.
func (e *ChartError) Unwrap() error { return e.Err }

// Render implements engine.ChartRenderer: it fetches the chart at
// up.Version (exact, a semver constraint, or empty for the newest) and
// renders it as helm template does (client only, no cluster) with
// up.ReleaseName (default "release-name"), up.Namespace (default
// "default") and up.Values over the chart's defaults, CRDs included
// (helm install would create them; helm template needs --include-crds)
// and test hooks left out (they belong to helm test); other hooks are
// kept. It returns one file per resource at kpt's default path,
// <namespace>/<kind>_<name>.yaml in lower case (<kind>_<name>.yaml for a
// resource without a namespace), the same paths render-helm-chart gives;
// the files carry no path annotations (the file's path is the
// resource's), keep Helm's "# Source:" comment, and a path two resources
// share holds both. version is the exact version rendered; digest is the
// index entry's digest (hex SHA-256 of the archive; computed when the
// index has none) for a chart repository, and the manifest digest
// ("sha256:...") for an OCI registry.
//
// Errors: a *ChartError (see there for the sentinels it matches).
func (c *Charts) Render(ctx context.Context, up engine.HelmUpstream) (files revision.Files, version, digest string, err error) {
	fail := func(err error) (revision.Files, string, string, error) {
		if ctx.Err() != nil {
			return revision.Files{}, "", "", ctx.Err()
		}
		return revision.Files{}, "", "", &ChartError{Op: "render", Repo: up.Repo, Chart: up.Chart, Version: up.Version, Err: err}
	}
	p, err := c.pull(ctx, up)
	if err != nil {
		return fail(err)
	}
	vals := revision.CloneValues(up.Values)
	if vals == nil {
		vals = map[string]any{}
	}
	items, err := renderChart(ctx, p.ch, vals, TemplateOptions{ReleaseName: up.ReleaseName, Namespace: up.Namespace, IncludeCRDs: true, SkipTests: true})
	if err != nil {
		return fail(&kindError{kind: repository.ErrInvalidInput, msg: err.Error(), cause: err})
	}
	files, err = itemsToFiles(items)
	if err != nil {
		return fail(&kindError{kind: repository.ErrInvalidInput, msg: "rendered resources: " + err.Error(), cause: err})
	}
	return files, p.version, p.digest, nil
}

// Versions implements engine.ChartLister: every version of up.Chart in
// up.Repo, newest first: the index.yaml entries of a chart repository, or
// the tags of an OCI repository that are semantic versions (Helm's "_"
// for "+" undone).
//
// Errors: a *ChartError; ErrNotFound also when the chart has no version.
func (c *Charts) Versions(ctx context.Context, up engine.HelmUpstream) ([]string, error) {
	fail := func(err error) ([]string, error) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &ChartError{Op: "list versions", Repo: up.Repo, Chart: up.Chart, Err: err}
	}
	creds, err := c.check(up)
	if err != nil {
		return fail(err)
	}
	var out []string
	if strings.HasPrefix(up.Repo, "oci://") {
		rc, err := c.f.registryClient(creds)
		if err != nil {
			return fail(err)
		}
		if out, err = ociTags(rc, ociRef(up.Repo, up.Chart)); err != nil {
			return fail(err)
		}
	} else {
		idx, err := c.f.index(ctx, up.Repo, creds)
		if err != nil {
			return fail(err)
		}
		for _, cv := range idx.Entries[up.Chart] {
			out = append(out, cv.Version)
		}
	}
	if len(out) == 0 {
		return fail(&kindError{kind: repository.ErrNotFound, msg: "no versions"})
	}
	return out, nil
}

// check validates up and returns its credentials.
func (c *Charts) check(up engine.HelmUpstream) (*credentials, error) {
	invalid := func(format string, args ...any) error {
		return &kindError{kind: repository.ErrInvalidInput, msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case up.Repo == "" || up.Chart == "":
		return nil, invalid("a repo and a chart are required")
	case !strings.HasPrefix(up.Repo, "oci://") && !isURL(up.Repo):
		return nil, invalid("repo %q is not an http(s):// or oci:// URL", up.Repo)
	}
	a := up.Auth
	switch {
	case a == nil || a.Kind() == "":
		return nil, nil
	case a.Kind() != repository.CredentialsBasic:
		return nil, invalid("Auth is %v; helmfn.Charts takes a user name and password", *a)
	}
	host, ok := repoHost(up.Repo)
	if !ok {
		return nil, invalid("repo %q has no host", up.Repo)
	}
	return &credentials{username: a.Username, password: a.Password, host: host}, nil
}

// pull fetches the chart up names.
func (c *Charts) pull(ctx context.Context, up engine.HelmUpstream) (pulled, error) {
	creds, err := c.check(up)
	if err != nil {
		return pulled{}, err
	}
	args := ChartArgs{Name: up.Chart, Version: up.Version, Repo: up.Repo}
	if strings.HasPrefix(up.Repo, "oci://") {
		return c.f.pullOCI(ctx, args, creds)
	}
	return c.f.pullHTTP(ctx, args, creds)
}

// itemsToFiles writes rendered resources into files at their path
// annotations, without the path annotations.
func itemsToFiles(items []*yaml.RNode) (revision.Files, error) {
	byPath := map[string][]*yaml.RNode{}
	var order []string
	for _, it := range items {
		p := it.GetAnnotations()[kioutil.PathAnnotation]
		if p == "" {
			return revision.Files{}, fmt.Errorf("%s %s has no path", it.GetKind(), it.GetName())
		}
		if _, ok := byPath[p]; !ok {
			order = append(order, p)
		}
		byPath[p] = append(byPath[p], it)
	}
	m := make(map[string][]byte, len(order))
	for _, p := range order {
		var buf bytes.Buffer
		w := kio.ByteWriter{Writer: &buf, ClearAnnotations: []string{
			kioutil.PathAnnotation, kioutil.LegacyPathAnnotation, kioutil.IndexAnnotation, kioutil.LegacyIndexAnnotation}}
		if err := w.Write(byPath[p]); err != nil {
			return revision.Files{}, fmt.Errorf("%s: %w", p, err)
		}
		m[p] = buf.Bytes()
	}
	files, err := revision.NewFiles(m)
	if err != nil {
		return revision.Files{}, err
	}
	if files.Has(revision.KptfileName) || files.Has(revision.PackageFileName) {
		return revision.Files{}, errors.New("a resource would be written as " + revision.KptfileName + " or " + revision.PackageFileName)
	}
	return files, nil
}
