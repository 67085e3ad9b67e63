package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// Update writes metadata with the content, or alone when only it changed;
// Init's Mutate is in the first write; List and the nesting checks read
// only the package's paths.
func TestUpdateMetadataInitMutateAndList(t *testing.T) {
	ctx := context.Background()
	r := memrepo.New("repo", nil)
	defer r.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"repo": r}})
	if err != nil {
		t.Fatal(err)
	}
	key := revision.Key{Package: "app", Workspace: "ws"}
	pr, err := e.Init(ctx, "repo", key, engine.InitOptions{Mutate: func(_ context.Context, f revision.Files) (revision.Files, error) {
		return f.With("extra.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"))
	}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := pr.Files(ctx)
	if err != nil || !files.Has("extra.yaml") {
		t.Fatalf("Init with Mutate: %v, files %v", err, files.Paths())
	}
	if _, err := e.Init(ctx, "repo", revision.Key{Package: "bad", Workspace: "ws"}, engine.InitOptions{Mutate: func(context.Context, revision.Files) (revision.Files, error) {
		return revision.Files{}, errors.New("no")
	}}); err == nil {
		t.Fatal("Init with a failing Mutate succeeded")
	}
	if revs, _ := e.List(ctx, "repo", repository.ListOptions{Package: "bad"}); len(revs) != 0 {
		t.Fatal("a failed Mutate left a draft")
	}

	md := revision.Metadata{Labels: map[string]string{"tier": "web"}}
	same, err := e.Update(ctx, "repo", key, files, engine.UpdateOptions{Metadata: &md})
	if err != nil {
		t.Fatal(err)
	}
	if !same.Meta().Metadata.Equal(md) || same.Meta().Version == pr.Meta().Version {
		t.Fatalf("metadata-only update: %+v", same.Meta())
	}
	sameFiles, _ := same.Files(ctx)
	if !sameFiles.Equal(files) {
		t.Fatal("metadata-only update changed the files")
	}
	files2, err := files.With("more.yaml", []byte("a: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	md2 := revision.Metadata{Annotations: map[string]string{"note": "x"}}
	both, err := e.Update(ctx, "repo", key, files2, engine.UpdateOptions{Metadata: &md2})
	if err != nil {
		t.Fatal(err)
	}
	if !both.Meta().Metadata.Equal(md2) {
		t.Fatalf("content and metadata update: %+v", both.Meta().Metadata)
	}
	again, err := e.Update(ctx, "repo", key, files2, engine.UpdateOptions{})
	if err != nil || again.Meta().Version != both.Meta().Version || !again.Meta().Metadata.Equal(md2) {
		t.Fatalf("an update without Metadata must keep it and write nothing: %+v, %v", again.Meta(), err)
	}
	bad := revision.Metadata{Labels: map[string]string{"no good": "x"}}
	if _, err := e.Update(ctx, "repo", key, files2, engine.UpdateOptions{Metadata: &bad}); !errors.Is(err, repository.ErrInvalidInput) {
		t.Fatalf("bad metadata: %v", err)
	}

	// Nesting either way is refused, a sibling with a common name prefix
	// is not.
	for _, p := range []string{"app/sub", "app/sub/deeper"} {
		if _, err := e.Init(ctx, "repo", revision.Key{Package: p, Workspace: "ws"}, engine.InitOptions{}); !errors.Is(err, repository.ErrInvalidInput) {
			t.Errorf("Init %s inside app: %v, want ErrInvalidInput", p, err)
		}
	}
	if _, err := e.Init(ctx, "repo", revision.Key{Package: "outer/inner", Workspace: "ws"}, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Init(ctx, "repo", revision.Key{Package: "outer", Workspace: "ws"}, engine.InitOptions{}); !errors.Is(err, repository.ErrInvalidInput) {
		t.Errorf("Init around outer/inner: %v, want ErrInvalidInput", err)
	}
	if _, err := e.Init(ctx, "repo", revision.Key{Package: "application", Workspace: "ws"}, engine.InitOptions{}); err != nil {
		t.Errorf("Init of a sibling sharing a name prefix: %v", err)
	}
	if _, err := e.Init(ctx, "repo", revision.Key{Package: "app", Workspace: "ws2"}, engine.InitOptions{}); !errors.Is(err, repository.ErrAlreadyExists) {
		t.Errorf("Init of an existing package: %v, want ErrAlreadyExists", err)
	}
	revs, err := e.List(ctx, "repo", repository.ListOptions{PackagePrefix: "outer"})
	if err != nil || len(revs) != 1 {
		t.Fatalf("List by prefix: %d, %v", len(revs), err)
	}
	if _, err := e.List(ctx, "nope", repository.ListOptions{}); !errors.Is(err, repository.ErrNotFound) {
		t.Fatalf("List of an unknown repository: %v", err)
	}
	if e.Repositories() == nil {
		t.Fatal("Repositories() is nil")
	}
}
