package apiserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testServer is a Server behind an httptest server on loopback, with Run
// running.
type testServer struct {
	*Server
	t       testing.TB
	dataDir string
	http    *httptest.Server
	URL     string
	cancel  context.CancelFunc
	done    chan struct{}
}

// startServer starts a server over dataDir ("" for a new temporary one).
func startServer(t testing.TB, dataDir string, mod func(*Options)) *testServer {
	t.Helper()
	return startServerTLS(t, dataDir, mod, nil)
}

// startServerTLS is startServer serving HTTPS with tlsConfig when it is
// not nil.
func startServerTLS(t testing.TB, dataDir string, mod func(*Options), tlsConfig *tls.Config) *testServer {
	t.Helper()
	if dataDir == "" {
		dataDir = filepath.Join(t.TempDir(), "data")
	}
	// Local repositories may live anywhere in the test's temporary
	// directories (every t.TempDir of a test shares a parent).
	opts := &Options{DataDir: dataDir, GitPollInterval: 50 * time.Millisecond,
		RepositoryRoots: []string{filepath.Dir(t.TempDir())}}
	if mod != nil {
		mod(opts)
	}
	srv, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		srv.Run(ctx)
		close(done)
	}()
	hs := httptest.NewUnstartedServer(srv.Handler())
	if tlsConfig != nil {
		// Handshakes that tests make fail on purpose are not news.
		hs.Config.ErrorLog = log.New(io.Discard, "", 0)
		hs.TLS = tlsConfig
		hs.StartTLS()
	} else {
		hs.Start()
	}
	ts := &testServer{Server: srv, t: t, dataDir: dataDir, http: hs, URL: hs.URL, cancel: cancel, done: done}
	t.Cleanup(ts.stop)
	// As any apiserver, /healthz and /readyz answer 500 until the
	// post-start hooks are done, which on a loaded machine may take a
	// moment: tests start from a ready server.
	deadline := time.Now().Add(time.Minute)
	for {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		if rec.Code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after a minute: %d %s", rec.Code, rec.Body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return ts
}

// stop stops the server (idempotent).
func (ts *testServer) stop() {
	if ts.http == nil {
		return
	}
	ts.http.CloseClientConnections()
	ts.http.Close()
	ts.http = nil
	ts.cancel()
	<-ts.done
	ts.Server.Close()
}

// do sends a request and returns the status code and body.
func (ts *testServer) do(method, path, contentType string, body []byte) (int, []byte) {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, bytes.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// doJSON sends v as JSON and decodes the answer into out (when not nil).
func (ts *testServer) doJSON(method, path string, v, out any) int {
	ts.t.Helper()
	var body []byte
	if v != nil {
		var err error
		if body, err = json.Marshal(v); err != nil {
			ts.t.Fatal(err)
		}
	}
	code, data := ts.do(method, path, "application/json", body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			ts.t.Fatalf("%s %s: %d %s: %v", method, path, code, data, err)
		}
	}
	return code
}

// status decodes a Status answer.
func decodeStatus(t *testing.T, data []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(data, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status: %s (%v)", data, err)
	}
	return st
}

const prPath = "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisions"
const prrPath = "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisionresources"
const repoPath = "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/repositories"

// initPR is the JSON of a PackageRevision created by an init task.
func initPR(pkg, ws string) map[string]any {
	return map[string]any{
		"apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision",
		"metadata": map[string]any{"namespace": "default"},
		"spec": map[string]any{"packageName": pkg, "repository": "default", "workspaceName": ws,
			"tasks": []any{map[string]any{"type": "init", "init": map[string]any{"description": "test"}}}},
	}
}

// waitWatchers waits until n package revision watches are established.
func (ts *testServer) waitWatchers(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ts.hub.mu.Lock()
		got := len(ts.hub.subs)
		ts.hub.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d watches established, want %d", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
