package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/revision"
)

// BenchmarkListPackageRevisions lists every PackageRevision of a server
// whose default repository holds P packages × R published revisions, one
// request at a time and eight at once, with the object cache and without
// it (every list reads every revision's files).
//
//	go test -run '^$' -bench ListPackageRevisions -benchtime 20x ./examples/server/internal/apiserver/
func BenchmarkListPackageRevisions(b *testing.B) {
	const p, r = 40, 5
	ts := startServer(b, "", nil)
	ctx := context.Background()
	eng := ts.engine("default")
	for i := range p {
		for j := range r {
			key := revision.Key{Package: fmt.Sprintf("pkg-%03d", i), Workspace: fmt.Sprintf("v%d", j+1)}
			var err error
			if j == 0 {
				_, err = eng.Init(ctx, "default", key, engine.InitOptions{Description: "bench"})
			} else {
				_, err = eng.Copy(ctx, "default", revision.Key{Package: key.Package, Revision: j}, key.Workspace, engine.CopyOptions{})
			}
			if err != nil {
				b.Fatal(err)
			}
			if _, err := eng.Propose(ctx, "default", key); err != nil {
				b.Fatal(err)
			}
			if _, err := eng.Approve(ctx, "default", key); err != nil {
				b.Fatal(err)
			}
		}
	}
	list := func(b *testing.B) {
		resp, err := http.Get(ts.URL + "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisions")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("list: %s", resp.Status)
		}
	}
	for _, cached := range []bool{true, false} {
		name := "cached"
		if !cached {
			name = "uncached"
		}
		b.Run(name+"/1", func(b *testing.B) {
			ts.prs = newPRCache(defaultPRCacheSize)
			if !cached {
				ts.prs = newPRCache(0)
			}
			list(b)
			for b.Loop() {
				list(b)
			}
		})
		b.Run(name+"/8", func(b *testing.B) {
			for b.Loop() {
				var wg sync.WaitGroup
				for range 8 {
					wg.Add(1)
					go func() { defer wg.Done(); list(b) }()
				}
				wg.Wait()
			}
		})
	}
}
