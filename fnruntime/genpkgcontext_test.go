package fnruntime_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/internal/fixtures"
	"github.com/configasdata/cad/pipeline"
)

// TestGenPkgContextConformance feeds kpt's builtin fixtures
// (shared/conformance/kpt/pkg/lib/builtins/testdata) through the builtin.
func TestGenPkgContextConformance(t *testing.T) {
	root := fixtures.Dir(t, "kpt", "pkg", "lib", "builtins", "testdata")
	cases, _ := filepath.Glob(filepath.Join(root, "*", "in.yaml"))
	if len(cases) == 0 {
		t.Fatalf("no builtin fixture (*/in.yaml) under %s", root)
	}
	fn, err := fnruntime.NewRegistry(nil).Resolve(context.Background(), pipeline.Step{Image: fnruntime.PkgContextFunction + ":latest"})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range cases {
		dir := filepath.Dir(in)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			data, _ := os.ReadFile(in)
			want, _ := os.ReadFile(filepath.Join(dir, "out.yaml"))
			rl, err := pipeline.ParseResourceList(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := fn.Run(context.Background(), rl); err != nil {
				t.Fatal(err)
			}
			got, err := rl.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if g, w := strings.TrimSpace(string(got)), strings.TrimSpace(stripComments(string(want))); g != w {
				t.Errorf("got\n%s\nwant\n%s", g, w)
			}
		})
	}
}

func stripComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
