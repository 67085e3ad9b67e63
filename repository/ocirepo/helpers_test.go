package ocirepo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/configasdata/cad/internal/testregistry"
	"github.com/configasdata/cad/repository"
)

// inProcessRegistry starts ggcr's registry behind httptest and returns its
// host:port.
func inProcessRegistry(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(paginate(registry.New(registry.Logger(log.New(io.Discard, "", 0)))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// paginate adds what ggcr's registry lacks: pages of n entries of the tags
// list and the catalog, after "last", with a Link header to the next page,
// as the distribution API specifies.
func paginate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		n, err := strconv.Atoi(q.Get("n"))
		isList := strings.HasSuffix(req.URL.Path, "/tags/list") || req.URL.Path == "/v2/_catalog"
		if req.Method != http.MethodGet || !isList || err != nil || n <= 0 {
			h.ServeHTTP(w, req)
			return
		}
		last := q.Get("last")
		inner := req.Clone(req.Context())
		inner.URL.RawQuery = ""
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, inner)
		if rec.Code != http.StatusOK {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		var body map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		field := "tags"
		if req.URL.Path == "/v2/_catalog" {
			field = "repositories"
		}
		var all []string
		for _, v := range asSlice(body[field]) {
			all = append(all, fmt.Sprint(v))
		}
		slices.Sort(all)
		if last != "" {
			i, _ := slices.BinarySearch(all, last)
			for i < len(all) && all[i] <= last {
				i++
			}
			all = all[i:]
		}
		page := all
		if len(all) > n {
			page = all[:n]
			next := url.Values{"n": {strconv.Itoa(n)}, "last": {page[n-1]}}
			w.Header().Set("Link", fmt.Sprintf("<%s?%s>; rel=\"next\"", req.URL.Path, next.Encode()))
		}
		body[field] = page
		b, _ := json.Marshal(body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func ociSpec(registry string) repository.Spec {
	return repository.Spec{Name: "test", Type: repository.TypeOCI, OCI: &repository.OCISpec{Registry: registry}}
}

func mustOpen(t testing.TB, spec repository.Spec, opts *Options) *Repository {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	o := *opts
	o.Insecure = true
	if o.PollInterval == 0 {
		o.PollInterval = 100 * time.Millisecond
	}
	r, err := Open(context.Background(), spec, &o)
	if err != nil {
		t.Fatalf("Open(%s): %v", spec.OCI.Registry, err)
	}
	return r
}

var prefixSeq atomic.Int64

// uniquePrefix returns a fresh repository path prefix, so that tests can
// share one registry.
func uniquePrefix() string { return fmt.Sprintf("t%d-%d", os.Getpid(), prefixSeq.Add(1)) }

// distribution is a running docker-registry (CNCF distribution).
type distribution struct {
	host string
	dir  string
}

// startDistribution starts the Debian docker-registry binary on a free
// loopback port (testregistry.Start).
func startDistribution(t testing.TB) *distribution {
	t.Helper()
	r := testregistry.Start(t)
	return &distribution{host: r.Host, dir: r.Dir}
}
