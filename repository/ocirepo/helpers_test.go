package ocirepo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

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
// loopback port with its own config and storage in a temp dir, and stops
// it when t ends. Without the binary it skips, unless CI is set.
func startDistribution(t testing.TB) *distribution {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		if _, err2 := os.Stat("/usr/bin/docker-registry"); err2 == nil {
			bin = "/usr/bin/docker-registry"
		} else if os.Getenv("CI") == "" {
			t.Skip("docker-registry (the CNCF distribution registry) is not installed: apt-get install docker-registry; set CI=true to make this a failure")
		} else {
			t.Fatal("docker-registry is not installed and CI is set: install it (apt-get install docker-registry, as scripts/install-test-deps.sh does)")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
`, filepath.Join(dir, "data"), addr)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start docker-registry: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = logf.Close()
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-done:
			b, _ := os.ReadFile(filepath.Join(dir, "registry.log"))
			t.Fatalf("docker-registry exited: %s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry did not answer on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &distribution{host: addr, dir: dir}
}
