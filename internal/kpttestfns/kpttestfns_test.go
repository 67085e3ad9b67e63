package kpttestfns_test

import (
	"context"
	"strings"
	"testing"

	"github.com/configasdata/cad/internal/kpttestfns"
	"github.com/configasdata/cad/pipeline"
)

const input = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: # the metadata
    name: a
  # before data
  data:
    k: v # a value
`

func run(t *testing.T, name string) string {
	t.Helper()
	rl, err := pipeline.ParseResourceList([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	if err := kpttestfns.Functions()[name].Run(context.Background(), rl); err != nil {
		t.Fatal(err)
	}
	out, err := rl.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestNoOpKeepsEverything(t *testing.T) {
	if got := run(t, "no-op"); !strings.Contains(got, "# the metadata") || !strings.Contains(got, "# a value") || !strings.Contains(got, "k: v") {
		t.Errorf("no-op changed its input:\n%s", got)
	}
}

func TestDropCommentsDropsEveryComment(t *testing.T) {
	got := run(t, "drop-comments")
	if strings.Contains(got, "#") {
		t.Errorf("comments left:\n%s", got)
	}
	if !strings.Contains(got, "k: v") || !strings.Contains(got, "name: a") {
		t.Errorf("content lost:\n%s", got)
	}
}
