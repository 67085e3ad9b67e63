package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// operatorChildEnv, set in a process's environment, makes the test binary
// run as the operator (TestMain), with its arguments as the flags;
// operatorIdentityEnv names the replica in the sharding Leases.
const (
	operatorChildEnv    = "CAD_OPERATOR_TEST_CHILD"
	operatorIdentityEnv = "CAD_OPERATOR_TEST_IDENTITY"
)

// replica is an operator process started by a test.
type replica struct {
	id  string
	cmd *exec.Cmd
	log string
}

// startReplica starts the test binary as an operator process named id
// with args (after --kubeconfig and --namespace), logging to a file; it
// is killed when the test ends.
func (e *env) startReplica(id string, args ...string) *replica {
	e.t.Helper()
	logFile := filepath.Join(e.t.TempDir(), id+".log")
	f, err := os.Create(logFile)
	require.NoError(e.t, err)
	cmd := exec.Command(os.Args[0], append([]string{"--kubeconfig", e.kubeconfig, "--namespace", e.ns}, args...)...)
	cmd.Env = append(os.Environ(), operatorChildEnv+"=1", operatorIdentityEnv+"="+id)
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(e.t, cmd.Start())
	r := &replica{id: id, cmd: cmd, log: logFile}
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		f.Close()
		data, _ := os.ReadFile(logFile)
		lines := strings.Split(string(data), "\n")
		switch {
		case e.t.Failed():
			e.t.Logf("last lines of replica %s:\n%s", id, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		case testing.Verbose():
			lines = slices.DeleteFunc(lines, func(l string) bool { return !strings.Contains(l, "sharding") })
			e.t.Logf("replica %s's sharding:\n%s", id, strings.Join(lines, "\n"))
		}
	})
	return r
}

// shardHolders returns the holder of each shard Lease of group (by
// shard), "" for a released or missing one.
func (e *env) shardHolders(group string, shards int) []string {
	e.t.Helper()
	var l coordinationv1.LeaseList
	require.NoError(e.t, e.c.List(context.Background(), &l, client.InNamespace(e.ns),
		client.MatchingLabels{leaseGroupLabel: group, leaseRoleLabel: roleShard}))
	out := make([]string, shards)
	for _, it := range l.Items {
		var i int
		if _, err := fmt.Sscanf(it.Name, group+"-shard-%d", &i); err == nil && i < shards {
			out[i] = holderOf(&it)
		}
	}
	return out
}

// TestShardedReplicasKill runs three operator processes (this test
// binary) with --shards over 200 repositories, half of them with a
// published package already in git, at the default lease settings and a
// poll of ten minutes (so nothing below is the poll's doing). Once every
// revision is discovered, a published package is asked for in each of
// the other half and, while the replicas work on them, one replica is
// killed with SIGKILL. Its shards move to the other two, which finish
// its repositories' work; no object is made twice, no revision approved
// twice (git holds exactly revision 1 of each package). A fourth replica
// then joins and takes only its share, which it serves at once.
func TestShardedReplicasKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four operator processes")
	}
	e := newEnv(t)
	const (
		repos  = 200
		shards = 32
		group  = "cad-shard-test"
	)
	ctx := context.Background()
	root := t.TempDir()
	name := func(i int) string { return fmt.Sprintf("r%03d", i) }
	dirs := make([]string, repos)
	start := time.Now()
	var wg sync.WaitGroup
	seeded := func(i int) bool { return i%2 == 0 }
	for w := range 2 {
		wg.Go(func() {
			for i := w; i < repos; i += 2 {
				dirs[i] = filepath.Join(root, name(i)+".git")
				_, err := git.PlainInit(dirs[i], true)
				require.NoError(t, err)
				if seeded(i) {
					publish(t, dirs[i], name(i), "seed", nil)
				}
			}
		})
	}
	wg.Wait()
	for i := range repos {
		require.NoError(t, e.c.Create(ctx, &configv1alpha1.Repository{
			ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: e.ns},
			Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
				Git: &configv1alpha1.GitRepository{Repo: dirs[i], Branch: "main", CreateBranch: true}},
		}))
	}
	t.Logf("%d repositories, half with a published package, made in %s", repos, time.Since(start).Round(time.Millisecond))

	args := []string{"--shards", fmt.Sprint(shards), "--leader-election-id", group, "--leader-election-namespace", e.ns,
		"--repository-root", root, "--repository-root", filepath.Dir(e.gitDir), "--poll", "10m"}
	reps := []*replica{e.startReplica("replica-a", args...), e.startReplica("replica-b", args...), e.startReplica("replica-c", args...)}

	// Every revision discovered: seed v1 and its placeholder in each.
	want := map[string]bool{}
	for i := range repos {
		if seeded(i) {
			want[name(i)+".seed.v1"], want[name(i)+".seed.main"] = true, true
		}
	}
	start = time.Now()
	e.waitObjects(want, 3*time.Minute)
	t.Logf("three replicas discovered the %d revisions of %d repositories in %s; shards: %v", len(want), repos,
		time.Since(start).Round(time.Millisecond), e.shardHolders(group, shards))
	e.waitRepositoriesReady(repos)

	// Work in flight: a published package in every repository.
	holders := e.shardHolders(group, shards)
	victim := reps[1]
	var victims []int // the repositories of the victim's shards with work asked for
	victimShards, victimRepos := 0, 0
	for _, h := range holders {
		if h == victim.id {
			victimShards++
		}
	}
	for i := range repos {
		if holders[shardOf(repoKey(e.ns, name(i)), shards)] == victim.id {
			victimRepos++
		}
		if !seeded(i) && holders[shardOf(repoKey(e.ns, name(i)), shards)] == victim.id {
			victims = append(victims, i)
		}
	}
	require.NotEmpty(t, victims, "the victim holds shards: %v", holders)
	// The victim is killed (SIGKILL) once it has published some of its
	// packages, and before it could publish all of them: the requests go
	// on meanwhile.
	var killed time.Time
	kill := func(done int) {
		t.Logf("killing %s (SIGKILL) with %d of its %d repositories' packages published", victim.id, done, len(victims))
		require.NoError(t, victim.cmd.Process.Kill())
		killed = time.Now()
		_ = victim.cmd.Wait()
	}
	for i := range repos {
		if seeded(i) {
			continue
		}
		e.create(name(i)+".app.ws1", "app", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}},
			func(pr *porchv1alpha2.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished })
		want[name(i)+".app.ws1"], want[name(i)+".app.main"] = true, true
		if killed.IsZero() && i%10 == 9 {
			if done := e.publishedApps(victims, name); done > 0 {
				kill(done)
			}
		}
	}
	for deadline := time.Now().Add(time.Minute); killed.IsZero(); {
		if done := e.publishedApps(victims, name); done > 0 || time.Now().After(deadline) {
			kill(done)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Meanwhile another client of git writes a draft into each of the
	// victim's seeded repositories: with a poll of ten minutes, only the
	// new owners' reading at once what they inherit makes their objects.
	var late []string
	for i := range repos {
		if seeded(i) && holders[shardOf(repoKey(e.ns, name(i)), shards)] == victim.id {
			writeDraft(t, dirs[i], name(i), "late")
			late = append(late, name(i)+".late.v1")
			want[name(i)+".late.v1"] = true
		}
	}
	lateWritten := time.Since(killed)

	// Its shards move; its repositories' work is finished by the others.
	var leasesMoved time.Duration
	require.Eventually(t, func() bool {
		h := e.shardHolders(group, shards)
		if slices.Contains(h, victim.id) || slices.Contains(h, "") {
			return false
		}
		leasesMoved = time.Since(killed)
		return true
	}, time.Minute, 100*time.Millisecond, "the killed replica's shards were not taken over")
	var others []int
	for i := range repos {
		if !seeded(i) && !slices.Contains(victims, i) {
			others = append(others, i)
		}
	}
	var progress []string
	othersDone, lateSeen := "not yet", "not yet"
	for next := 1; next <= 4 || lateSeen == "not yet"; {
		if lateSeen == "not yet" && e.haveObjects(late) {
			lateSeen = time.Since(killed).Round(100 * time.Millisecond).String()
		}
		if othersDone == "not yet" && e.publishedApps(others, name) == len(others) {
			othersDone = time.Since(killed).Round(100 * time.Millisecond).String()
		}
		if done := e.publishedApps(victims, name); next <= 4 && done*4 >= next*len(victims) {
			progress = append(progress, fmt.Sprintf("%d%% after %s", next*25, time.Since(killed).Round(100*time.Millisecond)))
			next++
			continue
		}
		require.Less(t, time.Since(killed), 2*time.Minute, "the killed replica's work is not done: %v; late drafts seen: %s", progress, lateSeen)
		time.Sleep(100 * time.Millisecond)
	}
	e.waitObjects(want, 2*time.Minute)
	for i := range repos {
		if !seeded(i) {
			pr := e.wait(name(i)+".app.ws1", "published", readyAt(porchv1alpha2.LifecyclePublished))
			require.Equal(t, 1, pr.Status.Revision, "%s", pr.Name)
		}
	}
	handedOver := time.Since(killed)
	t.Logf("hand-over after SIGKILL of %s (%d of %d shards, %d repositories): its shards held by the others after %s; "+
		"drafts written straight into git in %d of its repositories (written by %s) discovered after %s; "+
		"the packages asked for in its %d other repositories published and Ready: %s; every object right after %s "+
		"(the packages of the survivors' own %d repositories were all published %s after the kill)",
		victim.id, victimShards, shards, victimRepos, leasesMoved.Round(time.Millisecond),
		len(late), lateWritten.Round(100*time.Millisecond), lateSeen,
		len(victims), strings.Join(progress, ", "), handedOver.Round(time.Millisecond),
		len(others), othersDone)

	// A fourth replica joins: only the shards whose choice it is move,
	// all to it.
	before := e.shardHolders(group, shards)
	joined := time.Now()
	d := e.startReplica("replica-d", args...)
	live := []string{reps[0].id, reps[2].id, d.id}
	slices.Sort(live)
	var after []string
	require.Eventually(t, func() bool {
		after = e.shardHolders(group, shards)
		for i := range shards {
			if after[i] != choose(i, live) {
				return false
			}
		}
		return true
	}, time.Minute, 100*time.Millisecond, "the fourth replica did not get its share")
	var moved []int
	for i := range shards {
		if before[i] != after[i] {
			require.Equal(t, d.id, after[i], "shard %d moved between the old replicas", i)
			moved = append(moved, i)
		}
	}
	require.NotEmpty(t, moved)
	t.Logf("a fourth replica took its %d shards of %d in %s", len(moved), shards, time.Since(joined).Round(time.Millisecond))
	// It serves them: a new package in one repository of each moved shard.
	for i := range repos {
		if s := shardOf(repoKey(e.ns, name(i)), shards); slices.Contains(moved, s) {
			moved = slices.DeleteFunc(moved, func(x int) bool { return x == s })
			e.create(name(i)+".more.ws1", "more", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}},
				func(pr *porchv1alpha2.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished })
			want[name(i)+".more.ws1"], want[name(i)+".more.main"] = true, true
			e.wait(name(i)+".more.ws1", "published by the new replica", readyAt(porchv1alpha2.LifecyclePublished))
		}
	}

	// No object twice, none missing, none left over; git holds each
	// package's revision 1 once and nothing else.
	e.waitObjects(want, time.Minute)
	for i := range repos {
		got := e.gitRevisions(dirs[i])
		exp := map[string]revision.Lifecycle{"app/ws1/1": revision.LifecyclePublished, "app/main/-1": revision.LifecyclePublished}
		if seeded(i) {
			exp = map[string]revision.Lifecycle{"seed/v1/1": revision.LifecyclePublished, "seed/main/-1": revision.LifecyclePublished}
			if want[name(i)+".late.v1"] {
				exp["late/v1/0"] = revision.LifecycleDraft
			}
		}
		if want[name(i)+".more.ws1"] {
			exp["more/ws1/1"], exp["more/main/-1"] = revision.LifecyclePublished, revision.LifecyclePublished
		}
		require.Equal(t, exp, got, "repository %s", name(i))
	}
}

// writeDraft writes a draft of package pkg, workspace v1, straight into
// the git repository at dir (a path or a URL), as another client of the
// repository would.
func writeDraft(tb testing.TB, dir, repoName, pkg string) {
	tb.Helper()
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, repository.Spec{Name: repoName, Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir, Branch: "main"}}, nil)
	require.NoError(tb, err)
	defer r.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{repoName: r}})
	require.NoError(tb, err)
	_, err = e.Init(ctx, repoName, revision.Key{Repository: repoName, Package: pkg, Workspace: "v1"}, engine.InitOptions{Description: pkg})
	require.NoError(tb, err)
}

// haveObjects reports whether the PackageRevision objects names exist.
func (e *env) haveObjects(names []string) bool {
	var l porchv1alpha2.PackageRevisionList
	if err := e.c.List(context.Background(), &l, client.InNamespace(e.ns)); err != nil {
		return false
	}
	have := map[string]bool{}
	for _, pr := range l.Items {
		have[pr.Name] = true
	}
	for _, n := range names {
		if !have[n] {
			return false
		}
	}
	return true
}

// waitObjects waits until the PackageRevision objects of the namespace
// are exactly want (none being deleted), and fails with the difference.
func (e *env) waitObjects(want map[string]bool, within time.Duration) {
	e.t.Helper()
	var missing, extra []string
	deadline := time.Now().Add(within)
	for {
		var l porchv1alpha2.PackageRevisionList
		require.NoError(e.t, e.c.List(context.Background(), &l, client.InNamespace(e.ns)))
		missing, extra = nil, nil
		have := map[string]bool{}
		for _, pr := range l.Items {
			have[pr.Name] = true
			if !want[pr.Name] || pr.DeletionTimestamp != nil {
				extra = append(extra, pr.Name)
			}
		}
		for n := range want {
			if !have[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 && len(extra) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	slices.Sort(missing)
	e.t.Fatalf("after %s: %d objects missing (%v), %d not wanted (%v)", within, len(missing), missing[:min(len(missing), 10)], len(extra), extra)
}

// waitRepositoriesReady waits until n Repositories of the namespace (and
// blueprints) are Ready.
func (e *env) waitRepositoriesReady(n int) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		var l configv1alpha1.RepositoryList
		require.NoError(e.t, e.c.List(context.Background(), &l, client.InNamespace(e.ns)))
		ok := 0
		for _, r := range l.Items {
			if meta.IsStatusConditionTrue(r.Status.Conditions, configv1alpha1.RepositoryReady) {
				ok++
			}
		}
		return ok == n+1
	}, time.Minute, 200*time.Millisecond, "repositories not Ready")
}

// publishedApps counts the repositories among idx whose app.ws1 object
// is Ready and Published.
func (e *env) publishedApps(idx []int, name func(int) string) int {
	var l porchv1alpha2.PackageRevisionList
	if err := e.c.List(context.Background(), &l, client.InNamespace(e.ns)); err != nil {
		return 0
	}
	mine := map[string]bool{}
	for _, i := range idx {
		mine[name(i)+".app.ws1"] = true
	}
	n := 0
	for i := range l.Items {
		if pr := &l.Items[i]; mine[pr.Name] && readyAt(porchv1alpha2.LifecyclePublished)(pr) {
			n++
		}
	}
	return n
}
