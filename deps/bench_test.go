package deps_test

import (
	"fmt"
	"testing"

	"github.com/configasdata/cad/deps"
	"github.com/configasdata/cad/revision"
)

// BenchmarkResolve resolves a package with 10 requirements against a
// deployment repository of 1,000 packages, each providing one capability
// and requiring the previous package's (a chain, so the cycle search
// walks all of it).
func BenchmarkResolve(b *testing.B) {
	const n = 1000
	universe := make([]deps.Package, n)
	for i := range universe {
		d := revision.Dependencies{Provides: []revision.Dependency{capDep(fmt.Sprintf("c%d", i))}}
		if i > 0 {
			d.Requires = []revision.Dependency{capDep(fmt.Sprintf("c%d", i-1))}
		}
		universe[i] = deps.Package{Key: key("deploy", fmt.Sprintf("p%04d", i), 1), Dependencies: d}
	}
	app := deps.Package{Key: key("deploy", "app", 0)}
	for i := range 10 {
		app.Dependencies.Requires = append(app.Dependencies.Requires, capDep(fmt.Sprintf("c%d", n-1-i*100)))
	}
	b.ReportAllocs()
	for b.Loop() {
		if res := deps.Resolve(app, universe); !res.Satisfied() {
			b.Fatal(res)
		}
	}
}
