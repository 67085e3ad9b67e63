package celfn_test

import (
	"os"
	"testing"

	"github.com/configasdata/cad/pipeline/pipelinetest"
)

// TestMain defines pipelinetest's -update flag, which rewrites the golden
// cases under testdata.
func TestMain(m *testing.M) {
	pipelinetest.UpdateFlag()
	os.Exit(m.Run())
}
