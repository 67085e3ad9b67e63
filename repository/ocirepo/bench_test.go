package ocirepo

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Fixture size: 1,000 published revisions in 50 packages of 20.
const (
	benchPackages = 50
	benchPerPkg   = 20
)

// writeFixture publishes benchPerPkg revisions of each of benchPackages
// packages straight through the layout code (the manifests an approval
// writes: v<N> and its workspace alias), in parallel, so that building
// 1,000 revisions takes about a second rather than the minute that 3,000
// API calls under the package locks would.
func writeFixture(b *testing.B, r *Repository) {
	ctx := context.Background()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for p := range benchPackages {
		g.Go(func() error {
			pkg := fmt.Sprintf("pkgs/p%02d", p)
			repo, err := r.repoOf(pkg)
			if err != nil {
				return err
			}
			enc, err := encodeLayer(revision.MustFiles(map[string]string{
				"Kptfile":      "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n",
				"cm.yaml":      fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  p: %q\n", pkg),
				"deploy.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  replicas: 3\n",
				"service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n",
			}))
			if err != nil {
				return err
			}
			if err := r.ensureBlob(gctx, repo, enc.layer, types.OCILayer); err != nil {
				return err
			}
			if err := r.ensureBlob(gctx, repo, enc.config, types.OCIConfigJSON); err != nil {
				return err
			}
			for n := 1; n <= benchPerPkg; n++ {
				ws := fmt.Sprintf("ws%d", n)
				spec := manifestSpec{pkg: pkg, workspace: ws, revision: n, lifecycle: revision.LifecyclePublished,
					config: enc.configDesc, layer: enc.layerDesc, created: r.opts.Clock(), publishedAt: r.opts.Clock()}
				for _, tag := range []string{publishedTag(n), workspaceTag(ws)} {
					spec.tag = tag
					raw, err := spec.build()
					if err != nil {
						return err
					}
					if err := r.pusher().Put(gctx, repo.Tag(tag), rawManifest(raw)); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDistribution measures list, get and publish at 1,000
// revisions against the real registry (docker-registry on loopback).
func BenchmarkDistribution(b *testing.B) {
	reg := startDistribution(b)
	spec := ociSpec(reg.host + "/bench")
	var requests atomic.Int64
	counted := &Options{RemoteOptions: []remote.Option{remote.WithTransport(countingTransport{remote.DefaultTransport, &requests})}}
	r := mustOpen(b, spec, counted)
	writeFixture(b, r)
	ctx := context.Background()
	if revs, err := r.List(ctx, repository.ListOptions{}); err != nil || len(revs) != benchPackages*benchPerPkg {
		b.Fatalf("fixture lists %d revisions, %v", len(revs), err)
	}

	// The floor: one manifest HEAD, a registry round trip.
	run(b, &requests, "RoundTrip", func(b *testing.B) {
		repo, _ := r.repoOf("pkgs/p01")
		for b.Loop() {
			if _, err := r.puller.Head(ctx, repo.Tag("v1")); err != nil {
				b.Fatal(err)
			}
		}
	})
	run(b, &requests, "List1000/warm", func(b *testing.B) {
		for b.Loop() {
			revs, err := r.List(ctx, repository.ListOptions{})
			if err != nil || len(revs) != benchPackages*benchPerPkg {
				b.Fatal(len(revs), err)
			}
		}
	})
	run(b, &requests, "List1000/cold", func(b *testing.B) {
		for b.Loop() {
			fresh := mustOpen(b, spec, counted)
			revs, err := fresh.List(ctx, repository.ListOptions{})
			if err != nil || len(revs) != benchPackages*benchPerPkg {
				b.Fatal(len(revs), err)
			}
		}
	})
	run(b, &requests, "ListPackage20", func(b *testing.B) {
		for b.Loop() {
			revs, err := r.List(ctx, repository.ListOptions{Package: "pkgs/p07"})
			if err != nil || len(revs) != benchPerPkg {
				b.Fatal(len(revs), err)
			}
		}
	})
	i := 0
	run(b, &requests, "Get1000/by-number+files", func(b *testing.B) {
		for b.Loop() {
			i++
			k := revision.Key{Package: fmt.Sprintf("pkgs/p%02d", i%benchPackages), Revision: 1 + i%benchPerPkg}
			pr, err := r.Get(ctx, k)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := pr.Files(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	run(b, &requests, "Get1000/by-workspace", func(b *testing.B) {
		for b.Loop() {
			i++
			k := revision.Key{Package: fmt.Sprintf("pkgs/p%02d", i%benchPackages), Workspace: fmt.Sprintf("ws%d", 1+i%benchPerPkg)}
			if _, err := r.Get(ctx, k); err != nil {
				b.Fatal(err)
			}
		}
	})
	run(b, &requests, "Publish", func(b *testing.B) {
		files := revision.MustFiles(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n", "cm.yaml": "a: b\n"})
		for b.Loop() {
			i++
			k := revision.Key{Package: "pkgs/p03", Workspace: fmt.Sprintf("new%d", i)}
			d, err := r.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: files})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
				b.Fatal(err)
			}
			if _, err := r.UpdateLifecycle(ctx, k, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
			if _, err := r.UpdateLifecycle(ctx, k, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	run(b, &requests, "Approve", func(b *testing.B) {
		var approveRequests int64
		files := revision.MustFiles(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n"})
		for b.Loop() {
			b.StopTimer()
			i++
			k := revision.Key{Package: "pkgs/p04", Workspace: fmt.Sprintf("ap%d", i)}
			d, err := r.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: files})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
				b.Fatal(err)
			}
			if _, err := r.UpdateLifecycle(ctx, k, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
			before := requests.Load()
			b.StartTimer()
			if _, err := r.UpdateLifecycle(ctx, k, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			approveRequests += requests.Load() - before
			b.StartTimer()
		}
		b.ReportMetric(float64(approveRequests)/float64(b.N), "approve-requests/op")
	})
}

// countingTransport counts the HTTP requests made to the registry.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(req)
}

// run is b.Run that also reports the registry requests per op.
func run(b *testing.B, requests *atomic.Int64, name string, fn func(b *testing.B)) {
	b.Run(name, func(b *testing.B) {
		start := requests.Load()
		fn(b)
		b.ReportMetric(float64(requests.Load()-start)/float64(b.N), "requests/op")
	})
}
