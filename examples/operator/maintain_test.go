package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/examples/internal/maintsched"
	"github.com/configasdata/cad/examples/internal/repopool"
)

// gitCLI runs git in dir with stdin and returns its trimmed output.
func gitCLI(t *testing.T, dir string, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// countPacksLoose counts the packs and the loose objects of gitDir.
func countPacksLoose(t *testing.T, gitDir string) (packs, loose int) {
	t.Helper()
	idx, err := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.idx"))
	require.NoError(t, err)
	obj, err := filepath.Glob(filepath.Join(gitDir, "objects", "[0-9a-f][0-9a-f]", "*"))
	require.NoError(t, err)
	return len(idx), len(obj)
}

// With Options.MaintainInterval the leader packs the open repositories on
// its schedule: a repository given 20 one-object packs and loose objects
// by the git CLI ends with few packs and no loose object, and git fsck
// finds nothing wrong. A run that fails shows in the Repository's
// ConditionMaintenanceFailed, which goes when a run succeeds.
func TestScheduledMaintenance(t *testing.T) {
	e := newEnv(t)
	for i := range 20 {
		h := gitCLI(t, e.gitDir, fmt.Sprintf("blob %d\n", i), "hash-object", "-w", "--stdin")
		gitCLI(t, e.gitDir, h+"\n", "pack-objects", "-q", "objects/pack/pack")
	}
	packs, loose := countPacksLoose(t, e.gitDir)
	require.Equal(t, 20, packs)
	require.Equal(t, 20, loose)
	e.run(Options{MaintainInterval: 50 * time.Millisecond})
	e.create("blueprints.app.ws", "app", "ws", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{Description: "the app"}})
	e.wait("blueprints.app.ws", "a ready draft", readyAt(porchv1alpha2.LifecycleDraft))
	require.Eventually(t, func() bool {
		p, l := countPacksLoose(t, e.gitDir)
		return p <= 2 && l == 0
	}, 60*time.Second, 50*time.Millisecond, "not maintained")
	gitCLI(t, e.gitDir, "", "fsck", "--strict", "--no-dangling")

	// A small pack whose objects do not read, with a loose object beside
	// it so that the geometric rule merges it, fails the run.
	// Made in another repository, so that no run packs its object
	// first; the index goes last, as git puts a pack in place.
	other := t.TempDir()
	gitCLI(t, other, "", "init", "--quiet", "--bare")
	h := gitCLI(t, other, "unreachable\n", "hash-object", "-w", "--stdin")
	name := "pack-" + gitCLI(t, other, h+"\n", "pack-objects", "-q", "objects/pack/pack")
	base := filepath.Join(e.gitDir, "objects", "pack", name)
	data, err := os.ReadFile(filepath.Join(other, "objects", "pack", name+".pack"))
	require.NoError(t, err)
	for i := 12; i < len(data)-20; i++ {
		data[i] = 0
	}
	require.NoError(t, os.WriteFile(base+".pack", data, 0o444))
	idx, err := os.ReadFile(filepath.Join(other, "objects", "pack", name+".idx"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(base+".idx", idx, 0o444))
	// A loose object beside it, so that the geometric rule merges it:
	// one more each time, as a run may pack one before it sees the pack.
	n := 0
	addLoose := func() {
		n++
		gitCLI(t, e.gitDir, fmt.Sprintf("loose %d\n", n), "hash-object", "-w", "--stdin")
	}
	repo := &configv1alpha1.Repository{}
	condition := func() *metav1.Condition {
		require.NoError(t, e.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "blueprints"}, repo))
		return meta.FindStatusCondition(repo.Status.Conditions, ConditionMaintenanceFailed)
	}
	require.Eventually(t, func() bool { addLoose(); return condition() != nil }, 60*time.Second, 50*time.Millisecond, "no MaintenanceFailed condition")
	c := condition()
	require.Equal(t, metav1.ConditionTrue, c.Status)
	require.Equal(t, ReasonMaintenanceError, c.Reason)
	require.Contains(t, c.Message, filepath.Base(base))
	rc := meta.FindStatusCondition(repo.Status.Conditions, configv1alpha1.RepositoryReady)
	require.Equal(t, metav1.ConditionTrue, rc.Status, rc.Message)

	for _, ext := range []string{".pack", ".idx"} {
		require.NoError(t, os.Remove(base+ext))
	}
	require.Eventually(t, func() bool { return condition() == nil }, 60*time.Second, 50*time.Millisecond, "MaintenanceFailed stays after a run succeeded")
	gitCLI(t, e.gitDir, "", "fsck", "--strict", "--no-dangling")
}

// A maintenance pass covers every registered repository, open or closed:
// with a pool bound of one, the repositories the pool closed are opened
// for their run (the pass once listed only the open ones, so a fleet
// larger than the bound was never maintained in full).
func TestMaintenanceOfClosedRepositories(t *testing.T) {
	root := t.TempDir()
	u := newUnitEnv(t, root)
	u.repos.pool = repopool.New(&repopool.Options{MaxOpen: 1})
	t.Cleanup(func() { u.repos.pool.Close() })
	ctx := context.Background()
	var dirs []string
	for i := range 3 {
		dir := filepath.Join(root, fmt.Sprintf("r%d", i))
		_, err := git.PlainInit(dir, true)
		require.NoError(t, err)
		obj := gitRepository(fmt.Sprintf("r%d", i), dir)
		require.NoError(t, u.c.Create(ctx, obj))
		sc := u.repos.scope()
		_, _, err = sc.get(ctx, unitNS, obj.Name)
		require.NoError(t, err)
		sc.done()
		for j := range 3 {
			gitCLI(t, dir, fmt.Sprintf("loose %d %d\n", i, j), "hash-object", "-w", "--stdin")
		}
		dirs = append(dirs, dir)
	}
	require.Len(t, u.repos.pool.Keys(), 1, "the bound closed the others")

	loop := &maintsched.Loop{Interval: time.Hour, Repos: u.repos.maintainable}
	loop.Pass(ctx)
	for _, dir := range dirs {
		_, loose := countPacksLoose(t, dir)
		require.Zero(t, loose, "%s not maintained", dir)
	}
	require.LessOrEqual(t, len(u.repos.pool.Keys()), 1, "a pass keeps the bound")
}
