// Package testregistry starts the real CNCF distribution registry (Debian's
// docker-registry binary, installed by scripts/install-test-deps.sh) on a
// free loopback port for tests, with its own config and storage in a temp
// directory. Tests of the OCI backend and of helmfn's oci:// charts share
// it.
package testregistry

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Registry is a running docker-registry.
type Registry struct {
	// Host is its address, 127.0.0.1:port (plain HTTP).
	Host string
	// Dir holds its config, storage and log.
	Dir string
}

// Start starts docker-registry for tb and stops it when tb ends. Without
// the binary it skips tb, unless CI is set, when it fails it.
func Start(t testing.TB) *Registry {
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
	return &Registry{Host: addr, Dir: dir}
}
