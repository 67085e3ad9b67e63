// Command helmquickstart walks through a Helm chart as a package upstream.
// It serves a chart repository on loopback (index.yaml and the archives of
// chart web 1.0.0 and 2.0.0, embedded in the binary and packed at start),
// and with one engine over an in-memory repository, "deployments", it:
//
//  1. lists the chart's versions,
//  2. clones web 1.0.0 with values (replicas: 3) as package web-prod: the
//     package holds the rendered resources, and cadpackage.yaml records the
//     chart, version, values and the archive's digest,
//  3. edits a rendered resource locally (a team label) and publishes it,
//  4. discovers that chart version 2.0.0 is newer,
//  5. upgrades to it with a three-way merge (the local label and the
//     values stay, the new image and the new Service come in) and
//     publishes the upgrade,
//  6. discovers nothing newer,
//
// printing each step.
//
//	go run ./cmd/helmquickstart     (in the helmfn module)
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/helmfn"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// charts holds the chart's versions as directories web-<version>.
//
//go:embed charts
var charts embed.FS

// out receives everything helmquickstart prints; tests capture it.
var out io.Writer = os.Stdout

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "helmquickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	repoURL, stop, err := serveCharts()
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintln(out, "chart repository on loopback:", repoURL)

	const repo = "deployments"
	e, err := engine.New(&engine.Options{
		Repositories: engine.Repos{repo: memrepo.New(repo, nil)},
		AuthorName:   "Helm quickstart", AuthorEmail: "helmquickstart@example.com",
	})
	if err != nil {
		return err
	}
	h := helmfn.NewCharts(nil)

	// 1. The chart's versions.
	versions, err := h.Versions(ctx, engine.HelmUpstream{Repo: repoURL, Chart: "web"})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "1. versions of chart web:", versions)

	// 2. Clone 1.0.0 with values.
	key := revision.Key{Package: "web-prod", Workspace: "v1"}
	pr, err := e.Clone(ctx, repo, key, engine.CloneSource{Helm: &engine.HelmUpstream{
		Repo: repoURL, Chart: "web", Version: "1.0.0", ReleaseName: "web", Namespace: "prod",
		Values: map[string]any{"replicas": 3},
	}}, engine.CloneOptions{Charts: h})
	if err != nil {
		return err
	}
	files, err := pr.Files(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "2. clone web 1.0.0: %s %s, files %v\n", pr.Meta().Key, pr.Meta().Lifecycle, files.Paths())
	pf, _ := files.Get(revision.PackageFileName)
	fmt.Fprintf(out, "%s:\n%s", revision.PackageFileName, indent(string(pf)))

	// 3. A local edit of a rendered resource, then publish.
	const dep = "prod/deployment_web.yaml"
	data, ok := files.Get(dep)
	if !ok {
		return fmt.Errorf("the clone has no %s", dep)
	}
	edited := strings.Replace(string(data), "    app: web\n", "    app: web\n    team: storefront\n", 1)
	if edited == string(data) {
		return fmt.Errorf("%s: no app label to edit", dep)
	}
	if files, err = files.With(dep, []byte(edited)); err != nil {
		return err
	}
	if _, err := e.Update(ctx, repo, key, files, engine.UpdateOptions{}); err != nil {
		return err
	}
	v1, err := publish(ctx, e, repo, key)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "3. local edit (label team: storefront), published: %s %s\n", v1.Meta().Key, v1.Meta().Lifecycle)

	// 4. Discovery.
	cands, err := e.DiscoverHelmUpgrades(ctx, nil, h)
	if err != nil {
		return err
	}
	for _, c := range cands {
		fmt.Fprintf(out, "4. discover: %s is at chart %s %s; newer: %v\n", c.Downstream, c.Upstream.Chart, c.Upstream.Version, c.Newer)
	}
	if len(cands) != 1 || len(cands[0].Newer) == 0 {
		return fmt.Errorf("discovery found no newer chart version: %+v", cands)
	}

	// 5. Upgrade to the newest; the old upstream is the locked version.
	newest := cands[0].Newer[len(cands[0].Newer)-1]
	pr, err = e.Upgrade(ctx, repo, v1.Meta().Key, engine.Ref{}, engine.Ref{Helm: &engine.HelmUpstream{Version: newest}}, "v2",
		engine.UpgradeOptions{Charts: h})
	if err != nil {
		return err
	}
	if files, err = pr.Files(ctx); err != nil {
		return err
	}
	data, _ = files.Get(dep)
	fmt.Fprintf(out, "5. upgrade to web %s: %s, files %v\n%s:\n%s", newest, pr.Meta().Key, files.Paths(), dep, indent(string(data)))
	v2, err := publish(ctx, e, repo, pr.Meta().Key)
	if err != nil {
		return err
	}
	info, err := v2.Info(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "5. published %s, locked to chart %s %s (digest %.12s…)\n", v2.Meta().Key, info.UpstreamLock.Helm.Chart, info.UpstreamLock.Helm.Version, info.UpstreamLock.Helm.Digest)

	// 6. Up to date.
	if cands, err = e.DiscoverHelmUpgrades(ctx, nil, h); err != nil {
		return err
	}
	for _, c := range cands {
		fmt.Fprintf(out, "6. discover: %s is at chart %s %s; newer: %v\n", c.Downstream, c.Upstream.Chart, c.Upstream.Version, c.Newer)
	}
	return nil
}

func publish(ctx context.Context, e *engine.Engine, repo string, key revision.Key) (revision.PackageRevision, error) {
	if _, err := e.Propose(ctx, repo, key); err != nil {
		return nil, err
	}
	return e.Approve(ctx, repo, key)
}

// serveCharts serves the embedded chart versions as a chart repository on
// a free loopback port; it returns the repository's URL and a function
// that stops the server.
func serveCharts() (string, func(), error) {
	dirs, err := fs.ReadDir(charts, "charts")
	if err != nil {
		return "", nil, err
	}
	blobs := map[string][]byte{}
	var index strings.Builder
	index.WriteString("apiVersion: v1\nentries:\n  web:\n")
	for _, d := range dirs {
		version, ok := strings.CutPrefix(d.Name(), "web-")
		if !ok {
			continue
		}
		tgz, err := pack(path.Join("charts", d.Name()), "web")
		if err != nil {
			return "", nil, err
		}
		name := d.Name() + ".tgz"
		blobs["/"+name] = tgz
		fmt.Fprintf(&index, "  - apiVersion: v2\n    name: web\n    version: %s\n    urls: [%s]\n", version, name)
	}
	blobs["/index.yaml"] = []byte(index.String())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := blobs[r.URL.Path]; ok {
			_, _ = w.Write(b)
			return
		}
		http.NotFound(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close() }, nil
}

// pack makes a chart archive of dir as helm package does: its files under
// name/.
func pack(dir, name string) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := fs.WalkDir(charts, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := charts.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, dir+"/")
		if err := tw.WriteHeader(&tar.Header{Name: name + "/" + rel, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ") + "\n"
}
