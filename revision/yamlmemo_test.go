package revision_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/internal/yamlmemo"
	"github.com/configasdata/cad/revision"
)

// anchored returns a file of docs small documents, each with an anchor
// and an alias, so that no check skips it by its bytes alone.
func anchored(tag string, docs int) string {
	s := ""
	for i := range docs {
		s += fmt.Sprintf("---\nkind: ConfigMap\nmetadata:\n  name: %s%d\n  labels: &l {a: b}\ndata: *l\n", tag, i)
	}
	return s
}

// TestCheckYAMLMemo: a content that passed under the same per-file bounds
// is not parsed again, by any later check of the process, and every other
// case is: a changed content, other per-file bounds, a refused content
// (never remembered). A content remembered still counts towards the
// package bounds, and a package refused through remembered files gets
// the error it gets without a memo.
func TestCheckYAMLMemo(t *testing.T) {
	var c yamlmemo.Counter
	defer yamlmemo.SetParseHook(c.Add)()
	ctx := context.Background()
	a, b := anchored("a", 3), anchored("b", 3)
	files := revision.MustFiles(map[string]string{"a.yaml": a, "b.yaml": b, "README.md": "*"})

	for range 2 {
		if err := revision.CheckYAMLFiles(ctx, files, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := revision.CheckYAML(ctx, "a.yaml", []byte(a), nil); err != nil {
		t.Fatal(err)
	}
	if c.Of([]byte(a)) != 1 || c.Of([]byte(b)) != 1 || c.Total() != 2 {
		t.Fatalf("parses: a %d, b %d, total %d; want each file once", c.Of([]byte(a)), c.Of([]byte(b)), c.Total())
	}

	// A changed file is parsed; the unchanged one is not.
	a2 := anchored("c", 3)
	changed, err := files.With("a.yaml", []byte(a2))
	if err != nil {
		t.Fatal(err)
	}
	if err := revision.CheckYAMLFiles(ctx, changed, nil); err != nil {
		t.Fatal(err)
	}
	if c.Of([]byte(a2)) != 1 || c.Of([]byte(b)) != 1 {
		t.Fatalf("after a change: new a parsed %d times, b %d; want 1 and 1", c.Of([]byte(a2)), c.Of([]byte(b)))
	}

	// Other per-file bounds: parsed again.
	if err := revision.CheckYAMLFiles(ctx, files, &revision.YAMLLimits{MaxDepth: 50}); err != nil {
		t.Fatal(err)
	}
	if c.Of([]byte(a)) != 2 || c.Of([]byte(b)) != 2 {
		t.Fatalf("under other bounds: a parsed %d times, b %d; want 2 and 2", c.Of([]byte(a)), c.Of([]byte(b)))
	}

	// The package bounds count remembered files: the same error as
	// without a memo, for documents and for nodes.
	nodesA := 1 // the nodes of a.yaml: the least bound it passes
	for revision.CheckYAMLFiles(context.Background(), revision.MustFiles(map[string]string{"a.yaml": a}), &revision.YAMLLimits{MaxPackageNodes: nodesA}) != nil {
		nodesA++
	}
	for _, lim := range []*revision.YAMLLimits{{MaxPackageDocuments: 5}, {MaxPackageNodes: nodesA + 1}} {
		yamlmemo.Reset()
		want := revision.CheckYAMLFiles(ctx, files, lim)
		var wle *revision.YAMLLimitError
		if !errors.As(want, &wle) || wle.File != "b.yaml" {
			t.Fatalf("without a memo, %+v: %v; want b.yaml refused", *lim, want)
		}
		if err := revision.CheckYAMLFiles(ctx, files, nil); err != nil { // both remembered
			t.Fatal(err)
		}
		parsed := c.Total()
		got := revision.CheckYAMLFiles(ctx, files, lim)
		if c.Total() == parsed {
			t.Fatalf("%+v: nothing parsed again; the refusal must come from a parse", *lim)
		}
		var gle *revision.YAMLLimitError
		if !errors.As(got, &gle) || !reflect.DeepEqual(*gle, *wle) {
			t.Fatalf("with a memo, %+v: %v; want %v", *lim, got, want)
		}
	}

	// A refused content is never remembered.
	bomb := []byte(hostileyaml.Laughs(9, 9))
	for i := range 2 {
		err := revision.CheckYAMLFiles(ctx, revision.MustFiles(map[string]string{"bomb.yaml": string(bomb)}), nil)
		if !errors.Is(err, revision.ErrInvalid) {
			t.Fatalf("bomb, check %d: %v, want refused", i+1, err)
		}
		if err := revision.CheckYAML(ctx, "bomb.yaml", bomb, nil); !errors.Is(err, revision.ErrInvalid) {
			t.Fatalf("bomb alone, check %d: %v, want refused", i+1, err)
		}
	}
	if c.Of(bomb) != 4 {
		t.Fatalf("the bomb was parsed %d times, want 4 (every check)", c.Of(bomb))
	}
}
