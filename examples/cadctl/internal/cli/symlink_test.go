package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/examples/cadctl/internal/cli"
	"github.com/configasdata/cad/internal/kpttestfns"
)

// A package argument that is a symbolic link to the package reads the
// package it names, with kpt's warning, in fn eval, fn source and fn
// render (fn eval and fn source once read the link as a file: "read
// DIR: is a directory"; issue 34).
func TestPackageArgumentIsSymlink(t *testing.T) {
	for _, args := range [][]string{
		{"fn", "eval", "link", "--image", "set-labels:v0.2.0", "--", "tier=web"},
		{"fn", "source", "link"},
		{"fn", "render", "link"},
	} {
		t.Run(args[1], func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "pkg", "Kptfile"), "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n")
			writeFile(t, filepath.Join(dir, "pkg", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n")
			if err := os.Symlink("pkg", filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := cli.Invocation{Args: args, Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(""),
				Dir: dir, Env: []string{}, Functions: kpttestfns.Functions()}.Run(context.Background())
			if code != 0 {
				t.Fatalf("cadctl %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
			}
			if !strings.Contains(stderr.String(), `resolved symlink "link"`) {
				t.Errorf("stderr %q: no warning that the link was resolved", stderr.String())
			}
			switch args[1] {
			case "eval":
				cm, err := os.ReadFile(filepath.Join(dir, "pkg", "cm.yaml"))
				if err != nil || !strings.Contains(string(cm), "tier: web") {
					t.Errorf("the package the link names was not changed: %s %v", cm, err)
				}
			case "source":
				if !strings.Contains(stdout.String(), "name: c") {
					t.Errorf("fn source wrote %q, want the package's ConfigMap", stdout.String())
				}
			}
		})
	}
}
