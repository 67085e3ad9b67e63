package fnruntime_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/pipeline/pipelinetest"
)

// goldenElsewhere are the builtins whose cases are not under
// testdata/<name>, and where they are.
var goldenElsewhere = map[string]string{
	fnruntime.PkgContextFunction: "kpt's own fixtures: TestGenPkgContextConformance",
}

// TestBuiltinsGolden runs testdata/<function>/<case> golden cases; run with
// -update to rewrite them.
func TestBuiltinsGolden(t *testing.T) {
	for name, fn := range fnruntime.Builtins() {
		dir := filepath.Join("testdata", name)
		t.Run(name, func(t *testing.T) {
			if why, ok := goldenElsewhere[name]; ok {
				t.Skip(why)
			}
			if matches, _ := filepath.Glob(filepath.Join(dir, "*", "input")); len(matches) == 0 {
				t.Fatalf("no golden case (%s/<case>/input): every builtin needs one", dir)
			}
			pipelinetest.RunFunction(t, dir, fn)
		})
	}
}

// TestDocTableListsEveryBuiltin keeps the catalog table of DESIGN.md (the
// package's design, where the table moved from doc.go) current: every
// builtin appears in it, and every versioned one with each minor line it
// implements on its row.
func TestDocTableListsEveryBuiltin(t *testing.T) {
	data, err := os.ReadFile("DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "\nfunction               versions implemented")
	if start < 0 {
		t.Fatal("DESIGN.md has no versions table")
	}
	doc = doc[start:]
	if end := strings.Index(doc, "\n```"); end >= 0 {
		doc = doc[:end]
	}
	versions := fnruntime.BuiltinVersions()
	for name := range fnruntime.Builtins() {
		i := strings.Index(doc, "\n"+name+" ")
		if i < 0 && !strings.Contains(doc, "\n"+name+":") {
			t.Errorf("DESIGN.md's table does not list %s", name)
			continue
		}
		if i < 0 {
			continue
		}
		row := doc[i+1:]
		if j := strings.Index(row, "\n"); j >= 0 {
			row = row[:j]
		}
		for _, rel := range versions[name].Releases {
			if line := rel[:strings.LastIndex(rel, ".")] + ".x"; !strings.Contains(row, line) {
				t.Errorf("DESIGN.md's row for %s does not name %s: %q", name, line, row)
			}
		}
	}
}

// TestVersionedBuiltinsGolden renders testdata/versions/<case> through a
// registry, so that a Kptfile pinning an older catalog line runs that
// line's implementation (set-namespace v0.2 and v0.3).
func TestVersionedBuiltinsGolden(t *testing.T) {
	pipelinetest.Run(t, filepath.Join("testdata", "versions"), pipeline.NewKptfile(fnruntime.NewRegistry(nil), nil))
}

// TestImplementedReleasesWereReleased: every release a builtin claims to
// implement is one the catalog released.
func TestImplementedReleasesWereReleased(t *testing.T) {
	for name, cv := range fnruntime.BuiltinVersions() {
		if cv.Unreleased {
			if len(cv.Releases) > 0 || len(cv.Released) > 0 {
				t.Errorf("%s: unreleased, yet lists releases %v %v", name, cv.Releases, cv.Released)
			}
			continue
		}
		if len(cv.Released) == 0 {
			t.Errorf("%s: no list of released versions", name)
		}
		for _, rel := range cv.Releases {
			found := false
			for _, r := range cv.Released {
				found = found || r == rel
			}
			if !found {
				t.Errorf("%s: implements %s, which is not among its releases %v", name, rel, cv.Released)
			}
		}
	}
}

// TestBuiltinsRenderGolden renders testdata/render/<case>, packages whose
// Kptfile pipeline runs builtins, as the catalog's declarative examples
// do; every expected file is compared byte for byte. The packages are
// cad's own: ensure-name-substring-declarative has the shape of the
// catalog's ensure-name-substring-advanced example (a name reference, a
// Namespace, a custom kind's additional name field), renamed in place as
// v0.2.0's example shows (resources.yaml keeps every resource, in order);
// ensure-name-substring-rerender renders that output again and nothing
// changes; in ensure-name-substring-subpackage the subpackage's ConfigMap
// is renamed in its own file and package. enable-gcp-services-subpackage follows the
// README's "beside its set" in nested packages: each package's
// ProjectServiceSet (both named apis) generates its Service in its own
// package, whichever pipeline runs it, and -rerender renders that output
// again (the Services are recreated where they are).
func TestBuiltinsRenderGolden(t *testing.T) {
	pipelinetest.Run(t, filepath.Join("testdata", "render"), pipeline.NewKptfile(fnruntime.NewRegistry(nil), nil))
}
