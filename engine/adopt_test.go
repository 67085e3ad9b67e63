package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

func newEngineFor(t *testing.T, r repository.Repository) *engine.Engine {
	t.Helper()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{r.Name(): r}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func publishIn(t *testing.T, e *engine.Engine, repo string, k revision.Key) revision.PackageRevision {
	t.Helper()
	if _, err := e.Propose(context.Background(), repo, k); err != nil {
		t.Fatal(err)
	}
	pr, err := e.Approve(context.Background(), repo, k)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// noAdopter is a repository without the Adopter capability.
type noAdopter struct{ repository.Repository }

func TestAdoptErrors(t *testing.T) {
	ctx := context.Background()
	r := memrepo.New(repoName, nil)
	defer r.Close()
	e := newEngineFor(t, r)
	pr, err := e.Init(ctx, repoName, revision.Key{Package: "app", Workspace: "ws"}, engine.InitOptions{NoKptfile: true})
	if err != nil {
		t.Fatal(err)
	}
	ref := pr.Meta().Commit
	for _, tc := range []struct {
		what string
		repo string
		key  revision.Key
		want error
	}{
		{"unknown repository", "nope", revision.Key{Package: "x", Revision: 1}, repository.ErrNotFound},
		{"nested in a package", repoName, revision.Key{Package: "app/sub", Revision: 1}, repository.ErrInvalidInput},
		{"bad path", repoName, revision.Key{Package: "/abs", Revision: 1}, repository.ErrInvalidInput},
	} {
		if _, err := e.Adopt(ctx, tc.repo, tc.key, repository.AdoptOptions{Ref: ref}); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, err, tc.want)
		}
	}
	// A further revision of an existing package is fine.
	if _, err := e.Adopt(ctx, repoName, revision.Key{Package: "app", Revision: 2}, repository.AdoptOptions{Ref: ref}); err != nil {
		t.Fatal(err)
	}
	plain := newEngineFor(t, noAdopter{r})
	if _, err := plain.Adopt(ctx, repoName, revision.Key{Package: "b", Revision: 1}, repository.AdoptOptions{Ref: ref}); !errors.Is(err, repository.ErrNotSupported) {
		t.Fatalf("a backend without Adopter: %v", err)
	}
}

// CloneOptions.Kptfile adds a Kptfile to a clone of an upstream without
// one; an upstream's package file is carried and its name, upstream and
// lock rewritten, keeping its other fields.
func TestCloneWithoutKptfileOptions(t *testing.T) {
	ctx := context.Background()
	r := memrepo.New(repoName, nil)
	defer r.Close()
	e := newEngineFor(t, r)
	pf := "apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nmetadata:\n  name: base # the blueprint\nspec:\n  pipeline:\n    mutators:\n    - image: set-labels:v0.1.5\n"
	base := revision.Key{Package: "base", Workspace: "ws"}
	if _, err := e.Init(ctx, repoName, base, engine.InitOptions{NoKptfile: true}); err != nil {
		t.Fatal(err)
	}
	d, _ := e.Get(ctx, repoName, base)
	f, _ := files(t, d).With(revision.PackageFileName, []byte(pf))
	if _, err := e.Update(ctx, repoName, base, f, engine.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	publishIn(t, e, repoName, base)
	src := &revision.Key{Package: "base", Revision: 1}

	pr, err := e.Clone(ctx, repoName, revision.Key{Package: "a", Workspace: "ws"}, engine.CloneSource{Revision: src}, engine.CloneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := files(t, pr).Get(revision.PackageFileName)
	for _, want := range []string{"name: a", "# the blueprint", "image: set-labels:v0.1.5", "ref: base/v1"} {
		if !strings.Contains(string(got), want) {
			t.Fatalf("clone's package file lacks %q:\n%s", want, got)
		}
	}
	if files(t, pr).Has(revision.KptfileName) {
		t.Fatal("clone got a Kptfile")
	}
	pr, err = e.Clone(ctx, repoName, revision.Key{Package: "b", Workspace: "ws"}, engine.CloneSource{Revision: src}, engine.CloneOptions{Kptfile: true})
	if err != nil {
		t.Fatal(err)
	}
	kf, ok := files(t, pr).Get(revision.KptfileName)
	if !ok || !strings.Contains(string(kf), "ref: base/v1") {
		t.Fatalf("CloneOptions.Kptfile: Kptfile %q", kf)
	}
	if info, _ := pr.Info(ctx); info.UpstreamLock == nil || info.UpstreamLock.Git.Ref != "base/v1" {
		t.Fatalf("the Kptfile's lock wins: %+v", info.UpstreamLock)
	}
}
