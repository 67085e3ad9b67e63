package helmfn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// loadChart finds the chart: in the chart home of Options.Files first
// (when its version fits), else in args.Repo.
func (f *Function) loadChart(ctx context.Context, files fs.FS, g Globals, args ChartArgs, creds *credentials) (*chart.Chart, error) {
	local, err := f.localChart(files, g, args)
	if err != nil || local != nil {
		return local, err
	}
	switch {
	case args.Repo == "":
		home := g.ChartHome
		if home == "" {
			home = DefaultChartHome
		}
		return nil, fmt.Errorf("chart not found in %s and no chartArgs.repo to pull it from", path.Join(home, args.Name))
	case strings.HasPrefix(args.Repo, "oci://"):
		p, err := f.pullOCI(ctx, args, creds)
		return p.ch, err
	case isURL(args.Repo):
		p, err := f.pullHTTP(ctx, args, creds)
		return p.ch, err
	default:
		return nil, fmt.Errorf("chartArgs.repo %q: not an http(s):// or oci:// URL", args.Repo)
	}
}

// localChart loads ChartHome/Name from files (see Function.files); nil, nil when it is
// not there or its version does not satisfy args.Version.
func (f *Function) localChart(src fs.FS, g Globals, args ChartArgs) (*chart.Chart, error) {
	if src == nil {
		return nil, nil
	}
	home := g.ChartHome
	if home == "" {
		home = DefaultChartHome
	}
	dir := localPath(path.Join(home, args.Name))
	if !fs.ValidPath(dir) {
		return nil, fmt.Errorf("chart directory %q is outside the files", dir)
	}
	if _, err := fs.Stat(src, path.Join(dir, "Chart.yaml")); err != nil {
		return nil, nil
	}
	// The chart's .helmignore and Helm's defaults apply, as helm's
	// directory loader applies them.
	rules := ignore.Empty()
	if data, err := fs.ReadFile(src, path.Join(dir, ignore.HelmIgnore)); err == nil {
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("local chart %s: %s: %w", dir, ignore.HelmIgnore, err)
		}
	}
	rules.AddDefaults()
	var files []*archive.BufferedFile
	err := fs.WalkDir(src, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel := strings.TrimPrefix(p, dir+"/")
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if rules.Ignore(rel, fi) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		files = append(files, &archive.BufferedFile{Name: rel, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("local chart %s: %w", dir, err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("local chart %s: %w", dir, err)
	}
	if args.Version != "" && args.Repo != "" && !versionFits(ch.Metadata.Version, args.Version) {
		return nil, nil // pull the version asked for
	}
	if args.Version != "" && args.Repo == "" && !versionFits(ch.Metadata.Version, args.Version) {
		return nil, fmt.Errorf("local chart %s has version %s, not %s", dir, ch.Metadata.Version, args.Version)
	}
	return ch, nil
}

// versionFits reports whether version is want or satisfies it as a
// constraint.
func versionFits(version, want string) bool {
	if version == want {
		return true
	}
	c, err := semver.NewConstraint(want)
	if err != nil {
		return false
	}
	v, err := semver.NewVersion(version)
	return err == nil && c.Check(v)
}

// pulled is a chart fetched from a repository or registry: the chart,
// its exact version, and the digest of what was fetched (for a chart
// repository, the index entry's digest, else the archive's SHA-256 in hex;
// for a registry, the manifest digest).
type pulled struct {
	ch      *chart.Chart
	version string
	digest  string
}

// index reads and parses the index.yaml of the chart repository at
// repoURL, its entries sorted newest first. The index is read up to
// Options.IndexLimits' MaxBytes (within MaxDownload) and held to its
// other bounds before it is parsed: one over a bound fails with a
// *revision.YAMLLimitError (matching repository.ErrInvalidInput) naming
// the index's URL, and a larger body is not read past the bound.
func (f *Function) index(ctx context.Context, repoURL string, creds *credentials) (*repo.IndexFile, error) {
	base := strings.TrimSuffix(repoURL, "/")
	u := base + "/index.yaml"
	max := f.indexMaxBytes()
	data, err := f.getMax(ctx, u, creds, max)
	if errors.Is(err, errTooLarge) && max < f.opts.MaxDownload {
		err = &revision.YAMLLimitError{File: u, Limit: "MaxBytes", Max: int(max)}
	}
	if err == nil {
		err = revision.CheckYAML(ctx, u, data, f.opts.IndexLimits)
	}
	if err != nil {
		return nil, fmt.Errorf("chart repository %s: %w", repoURL, err)
	}
	var idx repo.IndexFile
	if err := sigsyaml.Unmarshal(data, &idx); err != nil {
		return nil, &kindError{kind: repository.ErrInvalidInput, msg: fmt.Sprintf("chart repository %s: index.yaml: %v", repoURL, err), cause: err}
	}
	idx.SortEntries()
	return &idx, nil
}

// indexMaxBytes is the size an index.yaml is read up to: the MaxBytes of
// Options.IndexLimits (revision.DefaultYAMLMaxBytes when zero, no bound
// of its own when negative), within MaxDownload.
func (f *Function) indexMaxBytes() int64 {
	max := int64(revision.DefaultYAMLMaxBytes)
	if l := f.opts.IndexLimits; l != nil && l.MaxBytes != 0 {
		max = int64(l.MaxBytes)
		if l.MaxBytes < 0 {
			max = f.opts.MaxDownload
		}
	}
	return min(max, f.opts.MaxDownload)
}

// pullHTTP finds the chart in the repository's index.yaml and loads its
// archive.
func (f *Function) pullHTTP(ctx context.Context, args ChartArgs, creds *credentials) (pulled, error) {
	base := strings.TrimSuffix(args.Repo, "/")
	idx, err := f.index(ctx, args.Repo, creds)
	if err != nil {
		return pulled{}, err
	}
	cv, err := idx.Get(args.Name, args.Version)
	if err != nil {
		want := args.Name
		if args.Version != "" {
			want += " version " + args.Version
		}
		return pulled{}, &kindError{kind: repository.ErrNotFound, msg: fmt.Sprintf("chart %s not found in repository %s: %v", want, args.Repo, err), cause: err}
	}
	if len(cv.URLs) == 0 {
		return pulled{}, &kindError{kind: repository.ErrInvalidInput, msg: fmt.Sprintf("chart %s %s in repository %s has no URL", args.Name, cv.Version, args.Repo)}
	}
	u, err := repo.ResolveReferenceURL(base+"/", cv.URLs[0])
	if err != nil {
		return pulled{}, &kindError{kind: repository.ErrInvalidInput, msg: fmt.Sprintf("chart %s %s: %v", args.Name, cv.Version, err), cause: err}
	}
	tgz, ok := f.archives.get(cv.Digest, creds)
	if !ok {
		if tgz, err = f.get(ctx, u, creds); err != nil {
			return pulled{}, fmt.Errorf("chart %s %s: %w", args.Name, cv.Version, err)
		}
		f.archives.put(cv.Digest, creds, tgz)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(tgz))
	if err != nil {
		return pulled{}, &kindError{kind: repository.ErrInvalidInput, msg: fmt.Sprintf("chart %s %s from %s: %v", args.Name, cv.Version, u, err), cause: err}
	}
	digest := cv.Digest
	if digest == "" {
		sum := sha256.Sum256(tgz)
		digest = hex.EncodeToString(sum[:])
	}
	return pulled{ch: ch, version: cv.Version, digest: digest}, nil
}

// registryClient returns a Helm registry client that reads no host
// credentials: anonymous, or creds for their host only.
func (f *Function) registryClient(creds *credentials) (*registry.Client, error) {
	// No credentials are read from the host (Helm's or Docker's files):
	// anonymous, or chartArgs.auth's for the registry's host only.
	authorizer := auth.Client{Client: f.opts.HTTPClient}
	if creds != nil {
		authorizer.Credential = auth.StaticCredential(creds.host, auth.Credential{Username: creds.username, Password: creds.password})
	}
	opts := []registry.ClientOption{
		registry.ClientOptHTTPClient(f.opts.HTTPClient),
		registry.ClientOptCredentialsFile(filepath.Join(os.TempDir(), "cad-helmfn-no-credentials", "config.json")),
		registry.ClientOptAuthorizer(authorizer),
	}
	if f.opts.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	c, err := registry.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return c, nil
}

// ociRef is the registry reference of chart name under an oci:// repo.
func ociRef(repoURL, name string) string {
	return strings.TrimSuffix(strings.TrimPrefix(repoURL, "oci://"), "/") + "/" + name
}

// ociTags lists the semver tags of ref, newest first.
func ociTags(c *registry.Client, ref string) ([]string, error) {
	tags, err := c.Tags(ref)
	if err != nil {
		return nil, registryError(fmt.Sprintf("chart %s: list tags", ref), err)
	}
	return tags, nil
}

// pullOCI pulls Repo/Name:Version (the newest tag when Version is empty
// or a constraint) from an OCI registry.
func (f *Function) pullOCI(ctx context.Context, args ChartArgs, creds *credentials) (pulled, error) {
	ref := ociRef(args.Repo, args.Name)
	c, err := f.registryClient(creds)
	if err != nil {
		return pulled{}, err
	}
	version := args.Version
	if _, err := semver.StrictNewVersion(version); err != nil {
		tags, err := ociTags(c, ref)
		if err != nil {
			return pulled{}, err
		}
		version = ""
		for _, t := range tags { // newest first
			if args.Version == "" || versionFits(t, args.Version) {
				version = t
				break
			}
		}
		if version == "" {
			return pulled{}, &kindError{kind: repository.ErrNotFound, msg: fmt.Sprintf("chart %s: no tag satisfies version %q", ref, args.Version)}
		}
	}
	if err := ctx.Err(); err != nil {
		return pulled{}, err
	}
	res, err := c.Pull(ref + ":" + version)
	if err != nil {
		return pulled{}, registryError(fmt.Sprintf("chart %s:%s", ref, version), err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(res.Chart.Data))
	if err != nil {
		return pulled{}, &kindError{kind: repository.ErrInvalidInput, msg: fmt.Sprintf("chart %s:%s: %v", ref, version, err), cause: err}
	}
	p := pulled{ch: ch, version: version}
	if res.Manifest != nil {
		p.digest = res.Manifest.Digest
	}
	return p, nil
}

// registryError classifies an error of the registry client: a missing
// repository, tag or manifest is repository.ErrNotFound, anything else
// (unreachable, refused credentials, a server error)
// repository.ErrUnavailable.
func registryError(msg string, err error) error {
	kind := repository.ErrUnavailable
	var resp *errcode.ErrorResponse
	if errors.Is(err, errdef.ErrNotFound) || (errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound) {
		kind = repository.ErrNotFound
	}
	return &kindError{kind: kind, msg: msg + ": " + err.Error(), cause: err}
}

// kindError is an error of a kind (a sentinel of package repository),
// with the message it had before it was classified: Error is msg, and
// errors.Is and errors.As reach both kind and cause.
type kindError struct {
	kind  error
	msg   string
	cause error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

// readFile reads a values file: a URL over HTTP, else a path in
// Options.Files.
func (f *Function) readFile(ctx context.Context, files fs.FS, name string) ([]byte, error) {
	if isURL(name) {
		return f.get(ctx, name, nil)
	}
	if files == nil {
		return nil, fmt.Errorf("%s: no local files to read it from (Options.Files, or the package's in a render)", name)
	}
	p := localPath(name)
	if !fs.ValidPath(p) {
		return nil, fmt.Errorf("%s: not a path inside the package", name)
	}
	data, err := fs.ReadFile(files, p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}

// errTooLarge is a download over Options.MaxDownload.
var errTooLarge = errors.New("download too large")

// get fetches u, refusing non-200 answers and bodies over MaxDownload;
// creds go with the request only when u is on their host.
func (f *Function) get(ctx context.Context, u string, creds *credentials) ([]byte, error) {
	return f.getMax(ctx, u, creds, f.opts.MaxDownload)
}

// getMax is get with bodies over max bytes refused (errTooLarge, matching
// repository.ErrInvalidInput), read no further than max+1 bytes.
func (f *Function) getMax(ctx context.Context, u string, creds *credentials, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if creds != nil && req.URL.Host == creds.host {
		req.SetBasicAuth(creds.username, creds.password)
	}
	resp, err := f.opts.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &kindError{kind: repository.ErrUnavailable, msg: err.Error(), cause: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		kind := repository.ErrUnavailable
		if resp.StatusCode == http.StatusNotFound {
			kind = repository.ErrNotFound
		}
		return nil, &kindError{kind: kind, msg: fmt.Sprintf("GET %s: %s", u, resp.Status)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, &kindError{kind: repository.ErrUnavailable, msg: fmt.Sprintf("GET %s: %v", u, err), cause: err}
	}
	if int64(len(data)) > max {
		return nil, &kindError{kind: repository.ErrInvalidInput, msg: fmt.Sprintf("GET %s: %v (over %d bytes)", u, errTooLarge, max), cause: errTooLarge}
	}
	return data, nil
}

// files returns where local charts and values files are read: Options.Files,
// else, in a render, the files of the package whose pipeline runs the
// function (pkg, its ResourceList's PackageFiles); nil when neither.
func (f *Function) files(pkg fs.FS) fs.FS {
	if f.opts.Files != nil {
		return f.opts.Files
	}
	return pkg
}

// localPath is name as a path in the function's files: an absolute path
// names the same path relative to their root, as the files stand for the
// file system the catalog's container sees (which runs in /, so
// "/tmp/charts/x" and its default "tmp/charts/x" are one file: in cadctl's
// fn eval, what --mount binds at /tmp/charts).
func localPath(name string) string {
	return path.Clean(strings.TrimPrefix(strings.TrimPrefix(name, "/"), "./"))
}
