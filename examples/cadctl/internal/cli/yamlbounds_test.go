package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/examples/cadctl/internal/cli"
	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/internal/kpttestfns"
)

// TestHostileYAMLRefused feeds the merge-key bomb (1.8 KB, 7.5 million
// mappings expanded) to every place cadctl reads YAML from the user: a
// ResourceList on standard input (fn eval -, fn sink, rpkg push), a
// package directory (fn eval DIR, fn source DIR) and a --fn-config file
// (fn eval, fn source). Each must
// refuse it as it is read, with the revision.YAMLLimitError naming the
// bound and the source, before any function runs, and write nothing.
// (Before, fn eval refused it only when the pipeline parsed the
// function's input, after starting the function; fn source, fn sink and
// rpkg push did not refuse it at all.)
func TestHostileYAMLRefused(t *testing.T) {
	bomb := hostileyaml.MergeBomb()
	rl := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- " +
		strings.ReplaceAll(strings.TrimSuffix(bomb, "\n"), "\n", "\n  ") + "\n"
	for _, tc := range []struct {
		name  string
		args  func(dir string) []string
		stdin string
		want  string // the source the refusal names
	}{
		{"eval stdin", func(string) []string { return []string{"fn", "eval", "-", "--image", "no-op"} }, rl, `"standard input"`},
		{"eval dir", func(dir string) []string {
			writeFile(t, filepath.Join(dir, "pkg", "bomb.yaml"), bomb)
			return []string{"fn", "eval", filepath.Join(dir, "pkg"), "--image", "no-op"}
		}, "", `"bomb.yaml"`},
		{"eval fn-config", func(dir string) []string {
			writeFile(t, filepath.Join(dir, "pkg", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
			writeFile(t, filepath.Join(dir, "cfg.yaml"), bomb)
			return []string{"fn", "eval", filepath.Join(dir, "pkg"), "--image", "no-op", "--fn-config", filepath.Join(dir, "cfg.yaml")}
		}, "", `cfg.yaml"`},
		{"source dir", func(dir string) []string {
			writeFile(t, filepath.Join(dir, "pkg", "sub", "bomb.yml"), bomb)
			return []string{"fn", "source", filepath.Join(dir, "pkg")}
		}, "", `"sub/bomb.yml"`},
		{"source fn-config", func(dir string) []string {
			writeFile(t, filepath.Join(dir, "pkg", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
			writeFile(t, filepath.Join(dir, "cfg"), bomb)
			return []string{"fn", "source", filepath.Join(dir, "pkg"), "--fn-config", filepath.Join(dir, "cfg")}
		}, "", `"cfg"`},
		{"sink", func(dir string) []string { return []string{"fn", "sink", filepath.Join(dir, "out")} }, rl, `"standard input"`},
		{"rpkg push", func(string) []string {
			return []string{"--server", "http://127.0.0.1:1", "rpkg", "push", "p", "-"}
		}, rl, `"standard input"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := tc.args(dir)
			before := tree(t, dir)
			var stdout, stderr bytes.Buffer
			code := cli.Invocation{Args: args, Stdin: strings.NewReader(tc.stdin), Stdout: &stdout, Stderr: &stderr,
				Dir: dir, Env: []string{}, Functions: kpttestfns.Functions()}.Run(context.Background())
			got := stderr.String()
			if code == 0 || !strings.Contains(got, "YAMLLimits.MaxAliasNodes") || !strings.Contains(got, tc.want) {
				t.Fatalf("exit %d, stderr %q: want the MaxAliasNodes refusal of %s", code, got, tc.want)
			}
			if strings.Contains(got, "[RUNNING]") {
				t.Errorf("stderr %q: the function ran; the input must be refused as it is read", got)
			}
			if after := tree(t, dir); after != before {
				t.Errorf("files changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree lists the files under dir with their sizes.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %s %d\n", p, fi.Mode(), fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
