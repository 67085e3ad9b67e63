package gitrepo_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// The crash test: a child process runs one write on a repository on disk
// and is killed with SIGKILL, either by itself at the Nth step of its ref
// transaction (every step in turn) or by this process after a random
// delay. After each kill the repository must pass git fsck, list without
// errors or damaged refs, hold every revision in exactly one state with
// no revision number twice, and the write, retried when it did not
// happen, must complete.
//
//	go test -run TestCrash ./repository/gitrepo/ -args -crash.trials=50  (the full run in README.md)

var crashTrials = flag.Int("crash.trials", 3, "random SIGKILLs per operation in TestCrash")

const (
	crashChildEnv = "CAD_CRASH_CHILD" // the operation the child runs
	crashDirEnv   = "CAD_CRASH_DIR"   // the repository
	crashAtEnv    = "CAD_CRASH_AT"    // the transaction step to die at, from 1; 0: none
)

var (
	appDraft = revision.Key{Package: "apps/app", Workspace: "w2"}
	appV1    = revision.Key{Package: "apps/app", Revision: 1}
	newLabel = revision.Metadata{Labels: map[string]string{"team": "blue"}}
)

// crashOp is one write under test: the state before it, the write, and
// how to tell whether it happened.
type crashOp struct {
	name string
	// prepare brings the base fixture to the state before the write.
	prepare func(ctx context.Context, r *gitrepo.Repository) error
	run     func(ctx context.Context, r *gitrepo.Repository) error
	// done reports whether the write happened, from a listing.
	done func(ctx context.Context, r *gitrepo.Repository, revs []revision.PackageRevision) (bool, error)
}

var crashOps = []crashOp{
	{
		name:    "init",
		prepare: func(context.Context, *gitrepo.Repository) error { return nil },
		run: func(ctx context.Context, r *gitrepo.Repository) error {
			return writeDraft(ctx, r, appDraft, "init", true)
		},
		done: func(_ context.Context, _ *gitrepo.Repository, revs []revision.PackageRevision) (bool, error) {
			return find(revs, appDraft.Package, appDraft.Workspace) != nil, nil
		},
	},
	{
		name: "save",
		prepare: func(ctx context.Context, r *gitrepo.Repository) error {
			return writeDraft(ctx, r, appDraft, "init", true)
		},
		run: func(ctx context.Context, r *gitrepo.Repository) error {
			return writeDraft(ctx, r, appDraft, "saved", false)
		},
		done: func(ctx context.Context, _ *gitrepo.Repository, revs []revision.PackageRevision) (bool, error) {
			pr := find(revs, appDraft.Package, appDraft.Workspace)
			if pr == nil {
				return false, errors.New("the draft is gone")
			}
			files, err := pr.Files(ctx)
			if err != nil {
				return false, err
			}
			data, _ := files.ReadFile("data.yaml")
			return strings.Contains(string(data), "saved"), nil
		},
	},
	{
		name: "propose",
		prepare: func(ctx context.Context, r *gitrepo.Repository) error {
			return writeDraft(ctx, r, appDraft, "init", true)
		},
		run:  lifecycle(appDraft, revision.LifecycleProposed),
		done: isLifecycle(appDraft, revision.LifecycleProposed, revision.LifecycleDraft),
	},
	{
		name: "approve",
		prepare: func(ctx context.Context, r *gitrepo.Repository) error {
			if err := writeDraft(ctx, r, appDraft, "init", true); err != nil {
				return err
			}
			return lifecycle(appDraft, revision.LifecycleProposed)(ctx, r)
		},
		run:  lifecycle(appDraft, revision.LifecyclePublished),
		done: isLifecycle(appDraft, revision.LifecyclePublished, revision.LifecycleProposed),
	},
	{
		name: "metadata",
		prepare: func(ctx context.Context, r *gitrepo.Repository) error {
			if err := writeDraft(ctx, r, appDraft, "init", true); err != nil {
				return err
			}
			return lifecycle(appDraft, revision.LifecycleProposed)(ctx, r)
		},
		run: func(ctx context.Context, r *gitrepo.Repository) error {
			_, err := r.SetMetadata(ctx, appDraft, newLabel, repository.UpdateOptions{})
			return err
		},
		done: func(_ context.Context, _ *gitrepo.Repository, revs []revision.PackageRevision) (bool, error) {
			pr := find(revs, appDraft.Package, appDraft.Workspace)
			if pr == nil {
				return false, errors.New("the proposal is gone")
			}
			return pr.Meta().Metadata.Equal(newLabel), nil
		},
	},
	{
		name:    "propose-delete",
		prepare: func(context.Context, *gitrepo.Repository) error { return nil },
		run:     lifecycle(appV1, revision.LifecycleDeletionProposed),
		done:    isLifecycle(appV1, revision.LifecycleDeletionProposed, revision.LifecyclePublished),
	},
	{
		name:    "delete",
		prepare: lifecycle(appV1, revision.LifecycleDeletionProposed),
		run: func(ctx context.Context, r *gitrepo.Repository) error {
			return r.Delete(ctx, appV1, repository.UpdateOptions{})
		},
		done: func(_ context.Context, _ *gitrepo.Repository, revs []revision.PackageRevision) (bool, error) {
			return find(revs, appV1.Package, "w1") == nil, nil
		},
	},
}

func writeDraft(ctx context.Context, r repository.Repository, key revision.Key, data string, create bool) error {
	var d revision.Draft
	var err error
	if create {
		d, err = r.CreateDraft(ctx, key, repository.CreateDraftOptions{})
	} else {
		d, err = r.OpenDraft(ctx, key)
	}
	if err != nil {
		return err
	}
	if err := d.SetFile("Kptfile", []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: "+filepath.Base(key.Package)+"\n")); err != nil {
		return err
	}
	if err := d.SetFile("data.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: data\ndata:\n  state: "+data+"\n")); err != nil {
		return err
	}
	_, err = d.Commit(ctx, revision.CommitOptions{})
	return err
}

func lifecycle(key revision.Key, to revision.Lifecycle) func(context.Context, *gitrepo.Repository) error {
	return func(ctx context.Context, r *gitrepo.Repository) error {
		_, err := r.UpdateLifecycle(ctx, key, to, repository.UpdateOptions{})
		return err
	}
}

// isLifecycle reports whether the revision of key's package and
// workspace is in lifecycle to; it must otherwise be in from.
func isLifecycle(key revision.Key, to, from revision.Lifecycle) func(context.Context, *gitrepo.Repository, []revision.PackageRevision) (bool, error) {
	return func(_ context.Context, _ *gitrepo.Repository, revs []revision.PackageRevision) (bool, error) {
		ws := key.Workspace
		if ws == "" {
			ws = "w1"
		}
		pr := find(revs, key.Package, ws)
		if pr == nil {
			return false, fmt.Errorf("%s@%s is gone", key.Package, ws)
		}
		switch lc := pr.Meta().Lifecycle; lc {
		case to:
			return true, nil
		case from:
			return false, nil
		default:
			return false, fmt.Errorf("%s@%s is %s, want %s or %s", key.Package, ws, lc, from, to)
		}
	}
}

// find returns the revision of pkg with workspace ws, not a placeholder.
func find(revs []revision.PackageRevision, pkg, ws string) revision.PackageRevision {
	for _, pr := range revs {
		if k := pr.Meta().Key; k.Package == pkg && k.Workspace == ws && !k.IsPlaceholder() {
			return pr
		}
	}
	return nil
}

func crashSpec(dir string) repository.Spec {
	// createBranch is set, as a server registers a repository: a crash
	// must never make it create the branch again.
	return repository.Spec{Name: "crash", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: dir, CreateBranch: true}}
}

// crashChild is the child process: it opens the repository, says
// "ready", runs the write and says "done <nanoseconds>". With
// CAD_CRASH_AT=N it kills itself at the Nth step of a ref transaction,
// saying "step <name>" first.
func crashChild(op string) int {
	ctx := context.Background()
	at, _ := strconv.Atoi(os.Getenv(crashAtEnv))
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	n := 0
	gitrepo.SetFaultHook(func(step string) {
		if n++; n == at {
			say("step %s", step)
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				_ = p.Kill() // SIGKILL on unix
			}
			select {} // the signal is on its way
		}
	})
	// Open completes what a dead writer left, within the hook's reach.
	r, err := gitrepo.Open(ctx, crashSpec(os.Getenv(crashDirEnv)), nil)
	if err != nil {
		say("error %v", err)
		return 2
	}
	run := func(ctx context.Context, r *gitrepo.Repository) error {
		_, err := r.List(ctx, repository.ListOptions{}) // "recover": a reader completes a dead write
		return err
	}
	for _, o := range crashOps {
		if o.name == op {
			run = o.run
		}
	}
	say("ready")
	start := time.Now()
	if err := run(ctx, r); err != nil {
		say("error %v", err)
		return 2
	}
	say("done %d", time.Since(start).Nanoseconds())
	return 0
}

// child is the outcome of one child process.
type child struct {
	killed bool          // by SIGKILL
	step   string        // the step it killed itself at
	took   time.Duration // how long the write took, when it finished
}

// runChild runs op in a child on the repository dir. With at > 0 the child
// dies at that step; with delay >= 0 this process kills it that long after
// it is ready.
func runChild(t *testing.T, dir, op string, at int, delay time.Duration) child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+op, crashDirEnv+"="+dir, crashAtEnv+"="+strconv.Itoa(at))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var c child
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		switch {
		case line == "ready" && delay >= 0:
			time.AfterFunc(delay, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		case strings.HasPrefix(line, "step "):
			c.step = strings.TrimPrefix(line, "step ")
		case strings.HasPrefix(line, "done "):
			ns, _ := strconv.ParseInt(strings.TrimPrefix(line, "done "), 10, 64)
			c.took = time.Duration(ns)
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		c.killed = true
	default:
		t.Fatalf("child %s at %d: %v\n%s\n%s", op, at, err, strings.Join(lines, "\n"), stderr.String())
	}
	return c
}

// publishNew creates, proposes and approves the revision key.
func publishNew(t *testing.T, r *gitrepo.Repository, key revision.Key) {
	t.Helper()
	ctx := context.Background()
	if err := writeDraft(ctx, r, key, "v", true); err != nil {
		t.Fatal(err)
	}
	for _, lc := range []revision.Lifecycle{revision.LifecycleProposed, revision.LifecyclePublished} {
		if _, err := r.UpdateLifecycle(ctx, key, lc, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// crashFixture returns a bare repository in the state before op: a
// branch of three packages with published revisions in packed-refs (as
// git gc leaves them) and loose ones.
func crashFixture(t *testing.T, op crashOp) string {
	t.Helper()
	ctx := context.Background()
	dir := newBare(t)
	r, err := gitrepo.Open(ctx, crashSpec(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	publish := func(key revision.Key) { publishNew(t, r, key) }
	for _, p := range []string{"base/a", "base/b"} {
		publish(revision.Key{Package: p, Workspace: "w1"})
		publish(revision.Key{Package: p, Workspace: "w2"})
	}
	publish(revision.Key{Package: appV1.Package, Workspace: "w1"})
	git(t, dir, "pack-refs", "--all")
	publish(revision.Key{Package: "base/a", Workspace: "w3"}) // a loose tag
	if err := op.prepare(ctx, r); err != nil {
		t.Fatalf("prepare %s: %v", op.name, err)
	}
	return dir
}

// copyRepo copies the repository at src to a new directory.
func copyRepo(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "repo.git")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	return dst
}

// checkCrashed checks the repository after a kill and completes op when it
// did not happen; what says which kill it was.
func checkCrashed(t *testing.T, dir string, op crashOp, what string) {
	t.Helper()
	ctx := context.Background()
	// git reads every ref and object, before cad touches the repository.
	fsck(t, dir, what)
	var logs bytes.Buffer
	r, err := gitrepo.Open(ctx, crashSpec(dir), &gitrepo.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatalf("%s: open after the crash: %v", what, err)
	}
	defer r.Close()
	revs := checkListing(t, r, what)
	done, err := op.done(ctx, r, revs)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !done {
		if err := op.run(ctx, r); err != nil {
			t.Fatalf("%s: retrying %s: %v", what, op.name, err)
		}
		revs = checkListing(t, r, what+", retried")
		if done, err := op.done(ctx, r, revs); err != nil || !done {
			t.Fatalf("%s: retried %s did not happen (%v)", what, op.name, err)
		}
	}
	if op.name == "approve" {
		// Revision 2: published exactly once, with the next number.
		if pr := find(revs, appDraft.Package, appDraft.Workspace); pr.Meta().Key.Revision != 2 {
			t.Fatalf("%s: approved as revision %d, want 2", what, pr.Meta().Key.Revision)
		}
	}
	if logs.Len() > 0 {
		t.Fatalf("%s: warnings:\n%s", what, logs.String())
	}
	fsck(t, dir, what+", at the end")
	// The git CLI sees the layout: the registered branch with all its
	// packages.
	if got := git(t, dir, "ls-tree", "--name-only", "main", "base/"); got != "base/a\nbase/b" {
		t.Fatalf("%s: branch main holds %q", what, got)
	}
}

// checkListing lists everything and checks that no revision is in two
// states and no number is handed out twice.
func checkListing(t *testing.T, r *gitrepo.Repository, what string) []revision.PackageRevision {
	t.Helper()
	revs, err := r.List(context.Background(), repository.ListOptions{})
	if err != nil {
		t.Fatalf("%s: list: %v", what, err)
	}
	workspaces := map[string]revision.Lifecycle{}
	numbers := map[string]bool{}
	placeholders := 0
	for _, pr := range revs {
		m := pr.Meta()
		if m.Key.IsPlaceholder() {
			placeholders++
			continue
		}
		ws := m.Key.Package + "@" + m.Key.Workspace
		if lc, ok := workspaces[ws]; ok {
			t.Fatalf("%s: %s is both %s and %s", what, ws, lc, m.Lifecycle)
		}
		workspaces[ws] = m.Lifecycle
		if m.Key.Revision > 0 {
			n := m.Key.Package + "/v" + strconv.Itoa(m.Key.Revision)
			if numbers[n] {
				t.Fatalf("%s: %s twice", what, n)
			}
			numbers[n] = true
		}
	}
	if placeholders < 3 {
		t.Fatalf("%s: %d packages on the branch, want 3", what, placeholders)
	}
	return revs
}

func fsck(t *testing.T, dir, what string) {
	t.Helper()
	cmd := exec.Command("git", "fsck", "--no-progress", "--no-dangling")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("%s: git fsck: %v\n%s", what, err, out)
	}
}

func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process per kill")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	for _, op := range crashOps {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			base := crashFixture(t, op)

			// Unharmed, the child finishes: its time bounds the random
			// kills below.
			dir := copyRepo(t, base)
			c := runChild(t, dir, op.name, 0, -1)
			if c.killed {
				t.Fatal("child killed without a kill")
			}
			checkCrashed(t, dir, op, "no kill")
			took := c.took

			// A kill at every step of the write's ref transactions.
			steps := 0
			for at := 1; ; at++ {
				if at > 200 {
					t.Fatal("the write has more than 200 steps")
				}
				dir := copyRepo(t, base)
				c := runChild(t, dir, op.name, at, -1)
				if !c.killed {
					break
				}
				steps++
				what := fmt.Sprintf("killed at step %d (%s)", at, c.step)
				if op.name == "approve" || op.name == "delete" {
					crashRecovery(t, dir, what)
				}
				checkCrashed(t, dir, op, what)
			}
			if steps < 5 {
				t.Fatalf("only %d steps", steps)
			}

			// Kills at random moments.
			killed, mid := 0, 0
			for i := range *crashTrials {
				dir := copyRepo(t, base)
				delay := time.Duration(rand.Int64N(int64(took)*3/2 + 1))
				c := runChild(t, dir, op.name, 0, delay)
				if c.killed {
					killed++
				}
				if halfDone(dir) {
					mid++
				}
				checkCrashed(t, dir, op, fmt.Sprintf("random kill %d after %v", i, delay))
			}
			t.Logf("%s: %d steps, each killed; %d random kills, %d before the write ended, %d of them in a ref transaction (the write takes %v)", op.name, steps, *crashTrials, killed, mid, took)
		})
	}
}

// halfDone reports whether a ref transaction was cut short at dir: its
// intent or journal is there.
func halfDone(dir string) bool {
	for _, f := range []string{"cad-journal", "cad-journal.lock"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// crashRecovery kills readers that complete the interrupted write at dir
// at every step of that completion, until one finishes.
func crashRecovery(t *testing.T, dir, what string) {
	t.Helper()
	for at := 1; at < 100; at++ {
		if c := runChild(t, dir, "recover", at, -1); !c.killed {
			return
		} else {
			fsck(t, dir, fmt.Sprintf("%s, then the reader completing it killed at step %d (%s)", what, at, c.step))
		}
	}
	t.Fatal("the reader was killed 100 times")
}
