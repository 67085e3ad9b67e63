package pipelinetest_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/configasdata/cad/pipeline/pipelinetest"
)

// ownUpdate is this test binary's own -update flag, as a user's test
// package may define one. Importing pipelinetest must not define a flag
// of that name too (flag.Bool would panic at init).
var ownUpdate = flag.Bool("update", false, "the test's own -update flag")

// TestUpdateFlagIsNotDefinedTwice: with -update defined by the test,
// UpdateFlag defines nothing.
func TestUpdateFlagIsNotDefinedTwice(t *testing.T) {
	if got := pipelinetest.UpdateFlag(); got != nil {
		t.Fatalf("UpdateFlag defined a second -update flag")
	}
	if f := flag.Lookup("update"); f == nil || f.Usage != "the test's own -update flag" {
		t.Fatalf("-update is not the test's own flag: %+v", f)
	}
}

// TestOwnUpdateFlagIsHonoured: the test's own -update set to true makes
// RunFunction rewrite a wrong expectation.
func TestOwnUpdateFlagIsHonoured(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/add-owner")); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "ok", "expected", "cm.yaml")
	if err := os.WriteFile(stale, []byte("stale: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := flag.Set("update", "true"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { *ownUpdate = false })
	pipelinetest.RunFunction(t, dir, addOwner)
	got, err := os.ReadFile(stale)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/add-owner/ok/expected/cm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("expected/cm.yaml not rewritten under the test's own -update:\n%s", got)
	}
}
