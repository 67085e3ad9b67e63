package pipeline_test

import (
	"context"
	"errors"
	"testing"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// TestFunctionNotFound: a render whose Kptfile names a function the
// resolver does not know fails with an error matching
// ErrFunctionNotFound, and not matching
// repository.ErrNotFound (a missing function is not a missing revision,
// package or repository).
func TestFunctionNotFound(t *testing.T) {
	files := revision.MustFiles(map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n  - image: example.com/missing:v1\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	})
	_, err := pipeline.NewKptfile(fns{}, nil).Render(context.Background(), files)
	if !errors.Is(err, pipeline.ErrFunctionNotFound) {
		t.Fatalf("Render: %v, want an error matching ErrFunctionNotFound", err)
	}
	if errors.Is(err, repository.ErrNotFound) {
		t.Errorf("Render: %v matches repository.ErrNotFound", err)
	}
}
