package variant_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitDisk opens a git repository on disk called name, in a new bare
// repository; the variant tests run on it too, where SyncSet writes
// through a write batch.
func gitDisk(t testing.TB, name string) repository.Repository {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name+".git")
	if out, err := exec.Command("git", "init", "--quiet", "--bare", "-b", "main", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	r, err := gitrepo.Open(context.Background(), repository.Spec{Name: name, Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir, CreateBranch: true}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

func init() {
	// Without the git CLI (to make the bare repositories) the backend is
	// left out, except under CI, where its tests then fail.
	if _, err := exec.LookPath("git"); err == nil || os.Getenv("CI") == "true" {
		backends = append(backends, backend{"gitrepo-disk", gitDisk})
	}
}

// needGit skips t without the git CLI, and fails it under CI.
func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git CLI not found")
		}
		t.Skip("git CLI not found")
	}
}

// noBatch is a git repository on disk that does not batch, as a
// repository without the capability.
type noBatch struct{ *gitrepo.Repository }

func (noBatch) BeginBatch(ctx context.Context) (repository.Batch, error) {
	return nil, fmt.Errorf("no batch here: %w", repository.ErrNotSupported)
}

// revState is what a revision holds, without what depends on the time
// it was written (commit ids, Versions).
type revState struct {
	Key       revision.Key
	Lifecycle revision.Lifecycle
	Metadata  revision.Metadata
	Files     map[string]string
}

var timeless = regexp.MustCompile(`(repo: \S*blueprints\.git|commit: [0-9a-f]{40})`)

func repoState(t *testing.T, r repository.Repository) []revState {
	t.Helper()
	ctx := context.Background()
	revs, err := r.List(ctx, repository.ListOptions{})
	require.NoError(t, err)
	var out []revState
	for _, pr := range revs {
		m := pr.Meta()
		files, err := pr.Files(ctx)
		require.NoError(t, err)
		fm := map[string]string{}
		for _, p := range files.Paths() {
			b, _ := files.Get(p)
			// The upstream's directory and commit ids differ between
			// runs.
			fm[p] = timeless.ReplaceAllString(string(b), "<varies>")
		}
		out = append(out, revState{Key: m.Key, Lifecycle: m.Lifecycle, Metadata: m.Metadata, Files: fm})
	}
	return out
}

func resultState(res *variant.SetResult) []string {
	var out []string
	for _, r := range res.Results {
		out = append(out, fmt.Sprintf("%s %s %v %v ready=%v", r.Variant, r.Action, r.Changes, r.Targets, r.Ready()))
	}
	return out
}

// SyncSet writes the same revisions, files and metadata, and reports the
// same results, with a write batch and without, through creation, an
// upstream upgrade, a template change and a resync.
func TestSyncSetBatchSameAsDirect(t *testing.T) {
	needGit(t)
	type run struct {
		v       *env
		results [][]string
	}
	var runs []*run
	for _, batched := range []bool{true, false} {
		open := func(t testing.TB, name string) repository.Repository {
			r := gitDisk(t, name)
			if !batched {
				return noBatch{r.(*gitrepo.Repository)}
			}
			return r
		}
		v := newEnv(t, backend{"disk", open})
		ru := &run{v: v}
		runs = append(runs, ru)
		v.publish("blueprints", "bucket", upstreamFiles())
		names := []string{"a", "b", "c", "d", "e"}
		pvs := newSet("fan", variant.Target{
			Repositories: []variant.RepositoryTarget{{Name: "deployments", PackageNames: names}},
			Template: &variant.PackageVariantTemplate{
				LabelExprs:     []variant.MapExpr{{Key: ptr("pkg"), ValueExpr: ptr("target.package")}},
				PackageContext: &variant.PackageContextTemplate{DataExprs: []variant.MapExpr{{Key: ptr("pkg"), ValueExpr: ptr("packageDefault")}}},
			},
		})
		sync := func() {
			res, err := variant.SyncSet(v.ctx, v.e, pvs, v.opts)
			require.NoError(t, err)
			require.True(t, res.Ready())
			ru.results = append(ru.results, resultState(res))
		}
		sync() // created
		// Publish two downstreams, then move the upstream: upgrades of
		// published downstreams and of drafts.
		v.approve(revision.Key{Repository: "deployments", Package: "a", Workspace: "packagevariant-1"})
		v.approve(revision.Key{Repository: "deployments", Package: "b", Workspace: "packagevariant-1"})
		v.publish("blueprints", "bucket", map[string]string{"bucket.yaml": bucket + "# v2\n", "package-context.yaml": pkgContext})
		pvs.Spec.Upstream.Revision = 0
		sync()
		// A template change: every draft updated in place.
		pvs.Spec.Targets[0].Template.Annotations = map[string]string{"new": "yes"}
		sync()
		sync() // unchanged
	}
	// The batched run wrote packs, the other loose objects only.
	packs := func(r repository.Repository) int {
		m, _ := filepath.Glob(filepath.Join(repository.Specified.Spec(r.(repository.Specified)).Git.Repo, "objects", "pack", "*.pack"))
		return len(m)
	}
	assert.Equal(t, 3, packs(runs[0].v.repos["deployments"]), "one pack per sync that wrote")
	assert.Equal(t, 0, packs(runs[1].v.repos["deployments"]))
	assert.Equal(t, runs[0].results, runs[1].results)
	assert.Equal(t, repoState(t, runs[1].v.repos["deployments"]), repoState(t, runs[0].v.repos["deployments"]))
}

// failingEngine fails Clone for one package, and can write behind the
// set's back to the downstream repository after another clone.
type failingEngine struct {
	*engine.Engine
	failPkg string
	after   func(ctx context.Context, pkg string)
}

// Scope keeps the set's writes batched through the wrapper.
func (e *failingEngine) Scope(repos []repository.Repository, refSnapshot bool) variant.Engine {
	c := *e
	c.Engine = e.Engine.Using(repos...)
	if refSnapshot {
		c.Engine = c.Engine.WithReferenceSnapshot()
	}
	return &c
}

func (e *failingEngine) Clone(ctx context.Context, repo string, key revision.Key, src engine.CloneSource, opts engine.CloneOptions) (revision.PackageRevision, error) {
	if key.Package == e.failPkg {
		return nil, fmt.Errorf("clone %s: injected failure", key.Package)
	}
	pr, err := e.Engine.Clone(ctx, repo, key, src, opts)
	if err == nil && e.after != nil {
		e.after(ctx, key.Package)
	}
	return pr, err
}

// A variant that fails leaves the others' writes in the batch, which
// commits; a commit that loses a race writes nothing, and the variants
// are synced again without a batch.
func TestSyncSetBatchFailures(t *testing.T) {
	needGit(t)
	names := []string{"a", "b", "c", "d"}
	set := func() *variant.PackageVariantSet {
		return newSet("fan", variant.Target{Repositories: []variant.RepositoryTarget{{Name: "deployments", PackageNames: names}}})
	}
	t.Run("variant", func(t *testing.T) {
		v := newEnv(t, backend{"disk", gitDisk})
		v.publish("blueprints", "bucket", upstreamFiles())
		e := &failingEngine{Engine: v.e, failPkg: "b"}
		res, err := variant.SyncSet(v.ctx, e, set(), v.opts)
		require.Error(t, err)
		for i, r := range res.Results {
			if names[i] == "b" {
				assert.False(t, r.Ready(), "%s", r)
				assert.Empty(t, v.revisions("deployments", "b"))
				continue
			}
			assert.True(t, r.Ready(), "%s", r)
			assert.Len(t, v.revisions("deployments", names[i]), 1, names[i])
		}
	})
	t.Run("commit", func(t *testing.T) {
		v := newEnv(t, backend{"disk", gitDisk})
		v.publish("blueprints", "bucket", upstreamFiles())
		e := &failingEngine{Engine: v.e, after: func(ctx context.Context, pkg string) {
			if pkg != "c" {
				return
			}
			// Another writer, outside the batch, creates the draft the
			// batch created for c.
			d, err := v.repos["deployments"].CreateDraft(context.Background(), revision.Key{Package: "c", Workspace: "packagevariant-1"},
				repository.CreateDraftOptions{Files: revision.MustFiles(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: c\n"})})
			require.NoError(t, err)
			_, err = d.Commit(context.Background(), revision.CommitOptions{})
			require.NoError(t, err)
		}}
		// The batch loses the race on c's draft and writes nothing; its
		// variants are synced again without it: the others land, c's
		// package is another writer's.
		res, err := variant.SyncSet(v.ctx, e, set(), v.opts)
		require.Error(t, err)
		for i, r := range res.Results {
			revs := v.revisions("deployments", names[i])
			require.Len(t, revs, 1, names[i])
			if names[i] == "c" {
				assert.False(t, r.Ready(), "%s", r)
				assert.Empty(t, revs[0].Meta().Metadata.Annotations[variant.OwnerAnnotation], "the other writer's draft")
				continue
			}
			assert.True(t, r.Ready(), "%s", r)
			assert.Equal(t, variant.ActionCreated, r.Action, "%s", r)
		}
		res, err = variant.SyncSet(v.ctx, v.e, set(), v.opts)
		require.Error(t, err)
		for i, r := range res.Results {
			if names[i] == "c" {
				assert.False(t, r.Ready(), "%s", r)
				continue
			}
			assert.Equal(t, variant.ActionUnchanged, r.Action, "%s", r)
		}
	})
}

// failingBatches is a git repository on disk whose batches fail to
// commit, with an error other than a conflict.
type failingBatches struct{ *gitrepo.Repository }

type failingBatch struct{ repository.Batch }

func (f failingBatches) BeginBatch(ctx context.Context) (repository.Batch, error) {
	b, err := f.Repository.BeginBatch(ctx)
	if err != nil {
		return nil, err
	}
	return failingBatch{b}, nil
}

func (b failingBatch) SetMetadata(ctx context.Context, key revision.Key, md revision.Metadata, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	return repository.SetMetadata(ctx, b.Batch, key, md, opts)
}

func (b failingBatch) Commit(ctx context.Context) error {
	b.Discard()
	return fmt.Errorf("injected: %w", repository.ErrUnavailable)
}

// A commit that fails for another reason than a race writes nothing and
// fails every variant that wrote, with its error.
func TestSyncSetBatchCommitFails(t *testing.T) {
	needGit(t)
	v := newEnv(t, backend{"disk", func(t testing.TB, name string) repository.Repository {
		r := gitDisk(t, name)
		if name == "deployments" {
			return failingBatches{r.(*gitrepo.Repository)}
		}
		return r
	}})
	v.publish("blueprints", "bucket", upstreamFiles())
	names := []string{"a", "b", "c"}
	res, err := variant.SyncSet(v.ctx, v.e, newSet("fan", variant.Target{Repositories: []variant.RepositoryTarget{{Name: "deployments", PackageNames: names}}}), v.opts)
	require.ErrorIs(t, err, repository.ErrUnavailable)
	for i, r := range res.Results {
		assert.False(t, r.Ready(), "%s", r)
		assert.Contains(t, r.String(), "injected", "%s", r)
		assert.Empty(t, v.revisions("deployments", names[i]))
	}
}

// Two sets synced at once into one repository, each through its own
// batch, both land: their packages differ, and the metadata each writes
// is laid over the other's.
func TestSyncSetBatchConcurrentSets(t *testing.T) {
	needGit(t)
	v := newEnv(t, backend{"disk", gitDisk})
	v.publish("blueprints", "bucket", upstreamFiles())
	sets := []*variant.PackageVariantSet{
		newSet("one", variant.Target{Repositories: []variant.RepositoryTarget{{Name: "deployments", PackageNames: []string{"a1", "a2", "a3", "a4"}}}}),
		newSet("two", variant.Target{Repositories: []variant.RepositoryTarget{{Name: "deployments", PackageNames: []string{"b1", "b2", "b3", "b4"}}}}),
	}
	errs := make([]error, len(sets))
	var wg sync.WaitGroup
	for i, pvs := range sets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = variant.SyncSet(v.ctx, v.e, pvs, v.opts)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, sets[i].Name)
	}
	for _, pvs := range sets {
		res, err := variant.SyncSet(v.ctx, v.e, pvs, v.opts)
		require.NoError(t, err)
		for _, r := range res.Results {
			assert.Equal(t, variant.ActionUnchanged, r.Action, "%s", r)
			pr, err := v.e.Get(v.ctx, "deployments", r.Key)
			require.NoError(t, err)
			assert.Equal(t, pvs.Name, pr.Meta().Metadata.Labels[variant.SetLabel], "%s", r.Key)
		}
	}
}

// setResultState is resultState for the removals of a set's sync or
// removal.
func removedState(res *variant.SetResult) []string {
	var out []string
	for _, r := range res.Removed {
		out = append(out, fmt.Sprintf("%s %s %v ready=%v", r.Variant, r.Action, r.Changes, r.Ready()))
	}
	return out
}

// Removing variants (a set that targets fewer packages, then RemoveSet)
// writes the same revisions and metadata, and reports the same results,
// with a write batch and without: drafts deleted, published revisions
// proposed for deletion and released.
func TestRemoveSetBatchSameAsDirect(t *testing.T) {
	needGit(t)
	type run struct {
		v       *env
		results [][]string
		packs   int
	}
	var runs []*run
	packs := func(r repository.Repository) int {
		m, _ := filepath.Glob(filepath.Join(repository.Specified.Spec(r.(repository.Specified)).Git.Repo, "objects", "pack", "*.pack"))
		return len(m)
	}
	for _, batched := range []bool{true, false} {
		open := func(t testing.TB, name string) repository.Repository {
			r := gitDisk(t, name)
			if !batched {
				return noBatch{r.(*gitrepo.Repository)}
			}
			return r
		}
		v := newEnv(t, backend{"disk", open})
		ru := &run{v: v}
		runs = append(runs, ru)
		v.publish("blueprints", "bucket", upstreamFiles())
		pvs := newSet("fan", variant.Target{Repositories: []variant.RepositoryTarget{{Name: "deployments", PackageNames: []string{"a", "b", "c", "d", "e"}}}})
		res, err := variant.SyncSet(v.ctx, v.e, pvs, v.opts)
		require.NoError(t, err)
		require.True(t, res.Ready())
		for _, p := range []string{"a", "c", "d"} {
			v.approve(revision.Key{Repository: "deployments", Package: p, Workspace: "packagevariant-1"})
		}
		before := packs(v.repos["deployments"])
		// Three variants fewer: a and c published, b a draft.
		pvs.Spec.Targets[0].Repositories[0].PackageNames = []string{"d", "e"}
		res, err = variant.SyncSet(v.ctx, v.e, pvs, v.opts)
		require.NoError(t, err)
		require.True(t, res.Ready())
		require.Len(t, res.Removed, 3)
		ru.results = append(ru.results, removedState(res))
		// The rest.
		res, err = variant.RemoveSet(v.ctx, v.e, pvs, v.opts)
		require.NoError(t, err)
		require.Len(t, res.Removed, 2)
		ru.results = append(ru.results, removedState(res))
		ru.packs = packs(v.repos["deployments"]) - before
	}
	assert.Equal(t, 2, runs[0].packs, "one pack per removal that wrote")
	assert.Equal(t, 0, runs[1].packs)
	assert.Equal(t, runs[0].results, runs[1].results)
	assert.Equal(t, repoState(t, runs[1].v.repos["deployments"]), repoState(t, runs[0].v.repos["deployments"]))
}

// metadataRacer writes behind a removal's back: after the removal writes
// pkg's metadata (in its batch), another writer changes it.
type metadataRacer struct {
	*engine.Engine
	pkg    string
	behind func()
}

// Scope keeps the removal's writes batched through the wrapper; the
// scoped Engine shares the racer's one write behind the removal's back.
func (e *metadataRacer) Scope(repos []repository.Repository, refSnapshot bool) variant.Engine {
	inner := e.Engine.Using(repos...)
	if refSnapshot {
		inner = inner.WithReferenceSnapshot()
	}
	return &scopedRacer{Engine: inner, racer: e}
}

// scopedRacer is a metadataRacer's Engine over a removal's batches.
type scopedRacer struct {
	*engine.Engine
	racer *metadataRacer
}

func (s *scopedRacer) SetMetadata(ctx context.Context, repo string, key revision.Key, md revision.Metadata, version string) (revision.PackageRevision, error) {
	pr, err := s.Engine.SetMetadata(ctx, repo, key, md, version)
	if err == nil {
		s.racer.after(key)
	}
	return pr, err
}

// after runs the racer's write behind the removal's back after a write of
// key's package, once.
func (e *metadataRacer) after(key revision.Key) {
	if key.Package == e.pkg && e.behind != nil {
		behind := e.behind
		e.behind = nil
		behind()
	}
}

func (e *metadataRacer) SetMetadata(ctx context.Context, repo string, key revision.Key, md revision.Metadata, version string) (revision.PackageRevision, error) {
	pr, err := e.Engine.SetMetadata(ctx, repo, key, md, version)
	if err == nil {
		e.after(key)
	}
	return pr, err
}

// A removal's batch that loses a race writes nothing; the variants are
// released again without it, on what the other writer left.
func TestRemoveSetBatchConflict(t *testing.T) {
	needGit(t)
	v := newEnv(t, backend{"disk", gitDisk})
	v.publish("blueprints", "bucket", upstreamFiles())
	pvs := newSet("fan", variant.Target{Repositories: []variant.RepositoryTarget{{Name: "deployments", PackageNames: []string{"a", "b", "c"}}}})
	_, err := variant.SyncSet(v.ctx, v.e, pvs, v.opts)
	require.NoError(t, err)
	for _, p := range []string{"a", "b", "c"} {
		v.approve(revision.Key{Repository: "deployments", Package: p, Workspace: "packagevariant-1"})
	}
	down := v.repos["deployments"]
	e := &metadataRacer{Engine: v.e, pkg: "b", behind: func() {
		// Outside the batch: the write lands at once.
		ctx := context.Background()
		pr, err := down.Get(ctx, revision.Key{Package: "b", Revision: 1})
		require.NoError(t, err)
		md := pr.Meta().Metadata.Clone()
		if md.Annotations == nil {
			md.Annotations = map[string]string{}
		}
		md.Annotations["other"] = "writer"
		_, err = repository.SetMetadata(ctx, down, pr.Meta().Key, md, repository.UpdateOptions{Version: pr.Meta().Version})
		require.NoError(t, err)
	}}
	res, err := variant.RemoveSet(v.ctx, e, pvs, v.opts)
	require.NoError(t, err)
	require.True(t, res.Ready())
	for _, r := range res.Removed {
		assert.True(t, r.Ready(), "%s", r)
	}
	for _, p := range []string{"a", "b", "c"} {
		revs := v.revisions("deployments", p)
		require.Len(t, revs, 1, p)
		m := revs[0].Meta()
		assert.Equal(t, revision.LifecycleDeletionProposed, m.Lifecycle, p)
		assert.Empty(t, m.Metadata.Annotations[variant.OwnerAnnotation], p)
		if p == "b" {
			assert.Equal(t, "writer", m.Metadata.Annotations["other"], "the other writer's change is kept")
		}
	}
}

// A set's sync into a remote repository (git http-backend on loopback)
// writes all its downstream drafts in one atomic push: the remote's
// post-receive hook, run once per push, runs once.
func TestSyncSetRemoteOnePush(t *testing.T) {
	needGit(t)
	root := t.TempDir()
	srv := repotest.NewGitServer(t, root, nil)
	srv.InitBare(t, "deployments.git")
	dir := filepath.Join(root, "deployments.git")
	pushes := filepath.Join(t.TempDir(), "pushes")
	hook := "#!/bin/sh\necho push >> " + pushes + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hooks", "post-receive"), []byte(hook), 0o755))
	v := newEnv(t, backend{"remote", func(t testing.TB, name string) repository.Repository {
		if name != "deployments" {
			return gitDisk(t, name)
		}
		r, err := gitrepo.Open(context.Background(), repository.Spec{Name: name, Type: repository.TypeGit,
			Git: &repository.GitSpec{Repo: srv.RepoURL("deployments.git"), CreateBranch: true}}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { r.Close() })
		return r
	}})
	v.publish("blueprints", "bucket", upstreamFiles())
	_ = os.Remove(pushes) // the branch's creation
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("p%02d", i))
	}
	res, err := variant.SyncSet(v.ctx, v.e, newSet("fan", variant.Target{Repositories: []variant.RepositoryTarget{{Name: "deployments", PackageNames: names}}}), v.opts)
	require.NoError(t, err)
	require.True(t, res.Ready())
	out, err := exec.Command("git", "-C", dir, "for-each-ref", "--format=%(refname)", "refs/heads/drafts/").Output()
	require.NoError(t, err)
	assert.Len(t, strings.Fields(string(out)), 12, "%s", out)
	log, err := os.ReadFile(pushes)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(log), "push"), "pushes of the set's sync")
}
