package apiserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/revision"
)

// BenchmarkServeAPI measures the server's CPU (its process's, which the
// client's share: the client reads and discards the bodies) per request
// of the calls kubectl and controllers make most, over a default
// repository of 40 packages × 5 published revisions: a list of the 200
// PackageRevisions as JSON and as the Table kubectl get asks for, a get
// of one, and a watch from the start that receives the 200 ADDED events
// and ends. It reports cpu-ms/op beside ns/op.
//
//	go test -run '^$' -bench ServeAPI -benchtime 50x ./examples/server/internal/apiserver/
func BenchmarkServeAPI(b *testing.B) {
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
			if err == nil {
				_, err = eng.Propose(ctx, "default", key)
			}
			if err == nil {
				_, err = eng.Approve(ctx, "default", key)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	const prs = "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisions"
	get := func(b *testing.B, path, accept string) {
		req, err := http.NewRequest("GET", ts.URL+path, nil)
		if err != nil {
			b.Fatal(err)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %s", path, resp.Status)
		}
	}
	watch := func(b *testing.B) {
		resp, err := http.Get(ts.URL + prs + "?watch=true&timeoutSeconds=60")
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		n := 0
		for n < p*r && sc.Scan() {
			n++
		}
		if n < p*r {
			b.Fatalf("watch: %d events of %d (%v)", n, p*r, sc.Err())
		}
	}
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	for _, c := range []struct {
		name string
		call func(b *testing.B)
	}{
		{"list", func(b *testing.B) { get(b, prs, "application/json") }},
		{"list-table", func(b *testing.B) { get(b, prs, table) }},
		{"get", func(b *testing.B) { get(b, prs+"/default.pkg-007.v3", "application/json") }},
		{"watch", watch},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.call(b) // warm
			cpu0 := processCPU()
			for b.Loop() {
				c.call(b)
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}
