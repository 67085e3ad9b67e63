package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/examples/internal/fdcheck"
	"github.com/configasdata/cad/examples/internal/repopool"
)

// openRepoDirs returns the repositories under root (its direct children)
// that this process holds a descriptor of.
func openRepoDirs(t testing.TB, root string) map[string]bool {
	t.Helper()
	held, err := fdcheck.HeldDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// With more local repositories than Options.MaxOpenRepositories, the
// operator holds descriptors of at most about that many (plus those its
// reconciles use at the moment), every repository is still discovered and
// read at each poll, and a push to a repository it closed is found.
func TestRepositoryPoolBound(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd")
	}
	const n, maxOpen, workers = 12, 2, 2
	// Open at any instant: the bound, plus one per Repository and per
	// PackageRevision reconcile running.
	const bound = maxOpen + 2*workers
	e := newEnv(t)
	ctx := context.Background()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	name := func(i int) string { return fmt.Sprintf("pool-%02d", i) }
	want := map[string]bool{}
	for i := range n {
		dir := filepath.Join(root, name(i))
		require.NoError(t, fillRepository(dir, name(i), 1, 1))
		require.NoError(t, e.c.Create(ctx, &configv1alpha1.Repository{
			ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: e.ns},
			Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
				Git: &configv1alpha1.GitRepository{Repo: dir, Branch: "main"}},
		}))
		for _, ws := range []string{"v1", "main"} {
			want[name(i)+".pkg-00."+ws] = true
		}
	}
	if len(openRepoDirs(t, root)) != 0 {
		t.Fatalf("descriptors of repositories open before the operator: %v", openRepoDirs(t, root))
	}
	e.run(Options{Poll: time.Second, Workers: workers, MaxOpenRepositories: maxOpen, RepositoryRoots: []string{root, filepath.Dir(e.gitDir)}})

	// Sample the descriptors while everything is discovered and polled.
	most := 0
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			most = max(most, len(openRepoDirs(t, root)))
		}
	}()
	e.waitObjects(withBlueprints(e, want), time.Minute)
	e.waitRepositoriesReady(n)
	time.Sleep(3 * time.Second) // three polls of every repository
	close(stop)
	<-sampled
	require.LessOrEqual(t, most, bound, "repositories holding descriptors at once")
	require.Greater(t, most, 0, "the sampling saw no repository open at all")

	// A repository closed by the operator: a push to it is discovered
	// by its next poll.
	var closed string
	require.Eventually(t, func() bool {
		open := openRepoDirs(t, root)
		for i := range n {
			if !open[name(i)] {
				closed = name(i)
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	writeDraft(t, filepath.Join(root, closed), closed, "pushed")
	e.wait(closed+".pushed.v1", "discovered", func(*porchv1alpha2.PackageRevision) bool { return true })
	require.LessOrEqual(t, len(openRepoDirs(t, root)), bound)
}

// withBlueprints adds the objects of the env's own repository (none: it
// is empty) to want.
func withBlueprints(e *env, want map[string]bool) map[string]bool {
	var l porchv1alpha2.PackageRevisionList
	require.NoError(e.t, e.c.List(context.Background(), &l, client.InNamespace(e.ns), client.MatchingLabels{porchv1alpha2.RepositoryLabel: "blueprints"}))
	for _, pr := range l.Items {
		want[pr.Name] = true
	}
	return want
}

// A poll of a repository whose version and objects are those of a
// discovery that found nothing to do lists no revisions; a change of
// either (a push, an object deleted by someone) is discovered.
func TestUnchangedPollListsNothing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "good.git")
	require.NoError(t, fillRepository(dir, "good", 1, 1))
	obj := gitRepository("good", dir)
	u := newUnitEnv(t, root, obj)
	poll := func() { t.Helper(); u.pollRepository(obj) }
	poll() // creates the objects
	require.ElementsMatch(t, []string{"good.pkg-00.v1", "good.pkg-00.main"}, u.objectNames())
	u.realise()
	poll() // finds nothing to do
	listed := u.rr.listed.Load()
	poll()
	poll()
	require.Equal(t, listed, u.rr.listed.Load(), "polls of an unchanged repository listed its revisions")

	// An object deleted behind the operator's back comes back.
	require.NoError(t, u.c.Delete(ctx, &porchv1alpha2.PackageRevision{ObjectMeta: metav1.ObjectMeta{Namespace: unitNS, Name: "good.pkg-00.v1"}}))
	poll()
	require.ElementsMatch(t, []string{"good.pkg-00.v1", "good.pkg-00.main"}, u.objectNames())

	// A push is discovered.
	writeDraft(t, dir, "good", "pushed")
	poll()
	require.Contains(t, u.objectNames(), "good.pushed.v1")
}

// A poll of a local repository the pool closed while idle does not open
// it when its refs did not change (gitrepo.CachedVersion), and still
// lists nothing; a push to it is discovered by the next poll, which opens
// it.
func TestIdlePollOpensNothing(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "idle.git")
	require.NoError(t, fillRepository(dir, "idle", 1, 1))
	obj := gitRepository("idle", dir)
	u := newUnitEnv(t, root, obj)
	u.repos.pool = repopool.New(&repopool.Options{IdleTimeout: time.Nanosecond})
	// Ref files changed in the last 3 seconds are not trusted to show
	// the next change (the racy window): a repository polled while idle
	// was written longer ago.
	time.Sleep(3100 * time.Millisecond)
	poll := func() { t.Helper(); u.pollRepository(obj) }
	poll() // creates the objects
	u.realise()
	poll() // finds nothing to do
	listed := u.rr.listed.Load()
	time.Sleep(time.Millisecond)
	u.repos.pool.CloseIdle()
	require.Equal(t, 0, u.repos.pool.Stats().Open, "open after CloseIdle")
	poll()
	poll()
	require.Equal(t, 0, u.repos.pool.Stats().Open, "polls of an unchanged closed repository opened it")
	require.Equal(t, listed, u.rr.listed.Load(), "polls of an unchanged repository listed its revisions")

	writeDraft(t, dir, "idle", "pushed")
	poll()
	require.Contains(t, u.objectNames(), "idle.pushed.v1")
	require.Equal(t, 1, u.repos.pool.Stats().Open, "the poll after a push did not open the repository")
}
