package engine_test

import (
	"errors"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// TestE2EMetadata: TestPackageRevisionMetadata (labels and annotations
// given at create survive propose and approve, can be changed after
// publishing, and are not inherited by a clone) and
// RegisteredPackageRevisionLabels, against the repository.MetadataWriter
// contract: the metadata also survives a reopen of the repository, goes
// with the revision, and is not inherited by a copy or an upgrade either.
func TestE2EMetadata(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eTest)
		md := revision.Metadata{
			Labels:      map[string]string{"kpt.dev/test-label": "test-value", "app": "istio"},
			Annotations: map[string]string{"example.com/note": "a note\non two lines", "test-annotation": "true"},
		}
		key := revision.Key{Package: "with-metadata", Workspace: "v1"}
		// Every backend of the matrix keeps metadata (repotest covers the
		// refusal of one that does not).
		if _, ok := env.repo[e2eTest].Repository.(repository.MetadataWriter); !ok {
			t.Fatalf("%s keeps no metadata (not a repository.MetadataWriter)", b.name)
		}
		want := func(what string, pr revision.PackageRevision, md revision.Metadata) {
			t.Helper()
			if got := pr.Meta().Metadata; !got.Equal(md) {
				t.Fatalf("%s: metadata %+v, want %+v", what, got, md)
			}
		}
		listed := func(what string, env *e2eEnv, k revision.Key, md revision.Metadata) {
			t.Helper()
			revs, err := env.repos.Repos[e2eTest].List(e2eCtx, repository.ListOptions{Package: k.Package})
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range revs {
				if k.Matches(pr.Meta().Key) {
					want(what+" (List)", pr, md)
					return
				}
			}
			t.Fatalf("%s: %s not listed", what, k)
		}

		pr, err := env.e.Init(e2eCtx, e2eTest, key, engine.InitOptions{Description: "metadata", Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		want("init", pr, md)
		want("get", env.mustGet(e2eTest, key), md)
		if pr, err = env.e.Propose(e2eCtx, e2eTest, key); err != nil {
			t.Fatal(err)
		}
		want("propose", pr, md)
		if pr, err = env.e.Approve(e2eCtx, e2eTest, key); err != nil {
			t.Fatal(err)
		}
		want("approve", pr, md)
		v1 := pr.Meta().Key
		listed("approve", env, v1, md)
		// Every process sees it, after a restart too.
		other := env.reopened()
		if pr, err := other.e.Get(e2eCtx, e2eTest, v1); err != nil {
			t.Fatal(err)
		} else {
			want("reopened", pr, md)
		}

		// Edits after publishing apply; the content does not change.
		cur := env.mustGet(e2eTest, v1)
		changed := revision.Metadata{Labels: map[string]string{"app": "istio", "stage": "prod"}}
		pr, err = env.e.SetMetadata(e2eCtx, e2eTest, v1, changed, cur.Meta().Version)
		if err != nil {
			t.Fatalf("set metadata of a published revision: %v", err)
		}
		want("set metadata", pr, changed)
		if pr.Meta().Version == cur.Meta().Version || pr.Meta().Commit != cur.Meta().Commit || !e2eFiles(t, pr).Equal(e2eFiles(t, cur)) {
			t.Fatalf("set metadata: version %s→%s, commit %s→%s", cur.Meta().Version, pr.Meta().Version, cur.Meta().Commit, pr.Meta().Commit)
		}
		listed("set metadata", env.reopened(), v1, changed)
		// A stale version conflicts; bad metadata is refused; neither
		// changes anything.
		if _, err := env.e.SetMetadata(e2eCtx, e2eTest, v1, md, cur.Meta().Version); !errors.Is(err, repository.ErrConflict) {
			t.Fatalf("set metadata with a stale version: %v, want ErrConflict", err)
		}
		var me *revision.MetadataError
		if _, err := env.e.SetMetadata(e2eCtx, e2eTest, v1, revision.Metadata{Labels: map[string]string{"bad key!": "x"}}, ""); !errors.As(err, &me) || !errors.Is(err, repository.ErrInvalidInput) {
			t.Fatalf("set bad metadata: %v, want a *revision.MetadataError", err)
		}
		if _, err := env.e.Init(e2eCtx, e2eTest, revision.Key{Package: "bad-metadata", Workspace: "v1"},
			engine.InitOptions{Metadata: revision.Metadata{Annotations: map[string]string{"-bad": "x"}}}); !errors.Is(err, repository.ErrInvalidInput) {
			t.Fatalf("init with bad metadata: %v, want ErrInvalidInput", err)
		}
		env.gone(e2eTest, revision.Key{Package: "bad-metadata", Workspace: "v1"})
		want("after refusals", env.mustGet(e2eTest, v1), changed)
		// Setting the same metadata again writes nothing.
		again, err := env.e.SetMetadata(e2eCtx, e2eTest, v1, changed.Clone(), "")
		if err != nil || again.Meta().Version != pr.Meta().Version {
			t.Fatalf("same metadata again: %v, version changed", err)
		}
		// It stays through lifecycle changes after publishing.
		if pr, err = env.e.ProposeDelete(e2eCtx, e2eTest, v1); err != nil {
			t.Fatal(err)
		}
		want("propose delete", pr, changed)
		if pr, err = env.e.Reject(e2eCtx, e2eTest, v1); err != nil {
			t.Fatal(err)
		}
		want("undo propose delete", pr, changed)

		// A clone, copy or upgrade starts without it, or with exactly
		// what it is given.
		src := revision.Key{Repository: e2eTest, Package: "with-metadata", Revision: 1}
		cl := revision.Key{Package: "clone", Workspace: "v1"}
		pr, err = env.e.Clone(e2eCtx, e2eTest, cl, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want("clone", pr, revision.Metadata{})
		own := revision.Metadata{Labels: map[string]string{"cloned": "yes"}}
		pr, err = env.e.Clone(e2eCtx, e2eTest, revision.Key{Package: "clone-with-metadata", Workspace: "v1"}, engine.CloneSource{Revision: &src}, engine.CloneOptions{Metadata: own})
		if err != nil {
			t.Fatal(err)
		}
		want("clone with metadata", pr, own)
		pr, err = env.e.Copy(e2eCtx, e2eTest, v1, "v2", engine.CopyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want("copy", pr, revision.Metadata{})
		if err := env.e.Delete(e2eCtx, e2eTest, pr.Meta().Key); err != nil {
			t.Fatal(err)
		}
		copied := revision.Metadata{Annotations: map[string]string{"copied": "yes"}}
		pr, err = env.e.Copy(e2eCtx, e2eTest, v1, "v2", engine.CopyOptions{Metadata: copied})
		if err != nil {
			t.Fatal(err)
		}
		want("copy with metadata", pr, copied)
		v2 := env.publish(e2eTest, pr.Meta().Key)
		want("published copy", v2, copied)
		want("v1 after v2", env.mustGet(e2eTest, v1), changed)
		clone1 := env.publish(e2eTest, cl).Meta().Key
		upgraded := revision.Metadata{Labels: map[string]string{"upgraded": "true"}}
		pr, err = env.e.Upgrade(e2eCtx, e2eTest, clone1, engine.Ref{Key: v1}, engine.Ref{Key: v2.Meta().Key}, "v2", engine.UpgradeOptions{Metadata: upgraded})
		if err != nil {
			t.Fatal(err)
		}
		want("upgrade with metadata", pr, upgraded)
		pr, err = env.e.Upgrade(e2eCtx, e2eTest, clone1, engine.Ref{Key: v1}, engine.Ref{Key: v2.Meta().Key}, "v3", engine.UpgradeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want("upgrade", pr, revision.Metadata{})

		// The placeholder has none of the published revision's metadata.
		want("placeholder", env.mustGet(e2eTest, revision.Key{Package: "with-metadata", Revision: revision.Placeholder}), revision.Metadata{})

		// Metadata goes with its revision: a draft deleted and created
		// again with the same workspace starts without it, and so does a
		// published revision whose number is handed out again.
		dk := revision.Key{Package: "clone", Workspace: "scratch"}
		if _, err := env.e.Copy(e2eCtx, e2eTest, clone1, dk.Workspace, engine.CopyOptions{Metadata: own}); err != nil {
			t.Fatal(err)
		}
		if err := env.e.Delete(e2eCtx, e2eTest, dk); err != nil {
			t.Fatal(err)
		}
		pr, err = env.e.Copy(e2eCtx, e2eTest, clone1, dk.Workspace, engine.CopyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want("recreated draft", pr, revision.Metadata{})
		for _, ws := range []string{"v2", "v3"} { // the upgrades name v2 as upstream
			if err := env.e.Delete(e2eCtx, e2eTest, revision.Key{Package: "clone", Workspace: ws}); err != nil {
				t.Fatal(err)
			}
		}
		env.remove(e2eTest, v2.Meta().Key)
		pr, err = env.e.Copy(e2eCtx, e2eTest, v1, "v2", engine.CopyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want("recreated workspace", pr, revision.Metadata{})
		pr = env.publish(e2eTest, pr.Meta().Key)
		if pr.Meta().Key.Revision != 2 {
			t.Fatalf("revision %d handed out again, want 2", pr.Meta().Key.Revision)
		}
		want("revision handed out again", pr, revision.Metadata{})
		listed("revision handed out again", env.reopened(), pr.Meta().Key, revision.Metadata{})
	})
}

// TestE2EMetadataDiscovered: RegisteredPackageRevisionLabels. Revisions
// another writer published have no metadata, and can be given some.
func TestE2EMetadataDiscovered(t *testing.T) {
	t.Parallel()
	up := newE2EGitUpstream(t)
	r := e2eOpenGit(t, e2eGitSpec(e2eBlueprints, up.url, e2eSpec{}), nil)
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{e2eBlueprints: r}})
	if err != nil {
		t.Fatal(err)
	}
	v1 := revision.Key{Package: "basens", Revision: 1}
	pr, err := e.Get(e2eCtx, e2eBlueprints, v1)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.Meta().Metadata.IsZero() {
		t.Fatalf("discovered revision has metadata %+v", pr.Meta().Metadata)
	}
	if _, ok := r.(repository.MetadataWriter); !ok {
		t.Fatal("gitrepo keeps no metadata (not a repository.MetadataWriter)")
	}
	md := revision.Metadata{Labels: map[string]string{"added": "later"}}
	if pr, err = e.SetMetadata(e2eCtx, e2eBlueprints, v1, md, pr.Meta().Version); err != nil {
		t.Fatal(err)
	}
	if !pr.Meta().Metadata.Equal(md) {
		t.Fatalf("metadata %+v, want %+v", pr.Meta().Metadata, md)
	}
	// The git CLI still sees the tag where it was: metadata is not content.
	if tag := e2eGit(t, up.bare, "rev-parse", "refs/tags/basens/v1^{commit}"); tag != pr.Meta().Commit {
		t.Fatalf("tag basens/v1 at %s, revision commit %s", tag, pr.Meta().Commit)
	}
}
