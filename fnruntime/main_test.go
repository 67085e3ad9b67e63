package fnruntime_test

import (
	"os"
	"testing"

	"github.com/configasdata/cad/pipeline/pipelinetest"
)

// TestMain defines pipelinetest's -update flag, which rewrites the golden
// cases under testdata.
//
// With fakeEngineEnv set, the binary is instead a fake container engine
// (fakeEngineMain), which the container tests run as cad would run docker.
func TestMain(m *testing.M) {
	if os.Getenv(fakeEngineEnv) != "" {
		os.Exit(fakeEngineMain(os.Args[1:]))
	}
	pipelinetest.UpdateFlag()
	os.Exit(m.Run())
}
