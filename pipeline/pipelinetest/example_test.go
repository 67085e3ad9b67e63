package pipelinetest_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/configasdata/cad/pipeline/pipelinetest"
	"github.com/configasdata/cad/revision"
)

// ReadDir and WriteDir move a package between a golden directory and
// revision.Files; tests call pipelinetest.Run or RunFunction, which use them.
func ExampleReadDir() {
	dir, _ := os.MkdirTemp("", "golden")
	defer os.RemoveAll(dir)
	in := revision.MustFiles(map[string]string{
		"input/Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n",
		"input/sub/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
		"expected/sub/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
		"results.yaml":         "",
	})
	if err := pipelinetest.WriteDir(dir, in); err != nil {
		fmt.Println(err)
		return
	}
	files, err := pipelinetest.ReadDir(filepath.Join(dir, "input"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(files.Paths())
	// Output:
	// [Kptfile sub/cm.yaml]
}
