package fnruntime_test

import (
	"path/filepath"
	"testing"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline/pipelinetest"
)

// TestBuiltinsGolden runs testdata/<function>/<case> golden cases; run with
// -update to rewrite them.
func TestBuiltinsGolden(t *testing.T) {
	for name, fn := range fnruntime.Builtins() {
		dir := filepath.Join("testdata", name)
		if _, err := filepath.Glob(dir); err != nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			if matches, _ := filepath.Glob(filepath.Join(dir, "*", "input")); len(matches) == 0 {
				t.Skip("no golden cases")
			}
			pipelinetest.RunFunction(t, dir, fn)
		})
	}
}
