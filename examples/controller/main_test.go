package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func runOnce(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), append(args, "-once"), &out); err != nil {
		t.Fatalf("run %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

func TestControllerEndToEnd(t *testing.T) {
	data := t.TempDir()

	// An empty directory is seeded with an example, which is synced.
	out := runOnce(t, "-data", data)
	for _, want := range []string{
		"seeded: published local:example v1",
		"seeded: wrote " + filepath.Join(data, "variants", "example-prod.yaml"),
		"example-prod: created local:example-prod@packagevariant-1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("first run: missing %q in\n%s", want, out)
		}
	}

	// A restart finds nothing to do.
	out = runOnce(t, "-data", data)
	if !strings.Contains(out, "example-prod: unchanged local:example-prod@packagevariant-1") {
		t.Errorf("second run:\n%s", out)
	}

	// A PackageVariantSet fans out.
	set := `apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata:
  name: fleet
spec:
  upstream:
    repo: local
    package: example
  targets:
  - repositories:
    - name: local
      packageNames: [site-a, site-b]
    template:
      packageContext:
        dataExprs:
        - key: site
          valueExpr: target.package
`
	if err := os.WriteFile(filepath.Join(data, "variants", "fleet.yaml"), []byte(set), 0o644); err != nil {
		t.Fatal(err)
	}
	out = runOnce(t, "-data", data)
	for _, want := range []string{
		"fleet: fleet-local-site-a: created local:site-a@packagevariant-1",
		"fleet: fleet-local-site-b: created local:site-b@packagevariant-1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("set run: missing %q in\n%s", want, out)
		}
	}

	// A bad object is reported and fails a -once run.
	if err := os.WriteFile(filepath.Join(data, "variants", "bad.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := run(context.Background(), []string{"-data", data, "-once"}, &buf); err == nil {
		t.Errorf("a bad object: want an error\n%s", buf.String())
	}
	os.Remove(filepath.Join(data, "variants", "bad.yaml"))
}

func TestControllerLoopRemoves(t *testing.T) {
	data := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-data", data, "-interval", "20ms"}, &out) }()
	waitFor(t, &out, "example-prod: created")
	if err := os.Remove(filepath.Join(data, "variants", "example-prod.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "example-prod: deleted")
	cancel()
	if err := <-done; err != nil && err != context.Canceled {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %q in\n%s", want, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
