package gitrepo_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/repository/gitrepo/internal/tmpfile"
	"github.com/configasdata/cad/revision"
)

// The maintenance tests age a repository with cad's writes (single
// writes leave loose objects and loose tags, batches a pack each) and
// with the git CLI (packs holding deltas), run Repository.Maintain, and
// check with git (count-objects, fsck --strict) and with cad (every
// revision reads as before, from a new Repository).

func maintSpec(dir string) repository.Spec {
	return repository.Spec{Name: "maint", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: dir, CreateBranch: true}}
}

func openMaint(t testing.TB, dir string, opts *gitrepo.Options) *gitrepo.Repository {
	t.Helper()
	if opts == nil {
		opts = &gitrepo.Options{NoAutoMaintain: true}
	}
	r, err := gitrepo.Open(context.Background(), maintSpec(dir), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// ageRepo writes into r: singles revisions published one write at a
// time (draft, proposal, approval: loose objects and a loose tag each)
// and batches batches of two new drafts each (a pack each).
func ageRepo(t testing.TB, r *gitrepo.Repository, tag string, singles, batches int) {
	t.Helper()
	ctx := context.Background()
	for i := range singles {
		key := revision.Key{Package: fmt.Sprintf("single/%s%d", tag, i%7), Workspace: fmt.Sprintf("w%s%d", tag, i)}
		publishNewTB(t, r, key)
	}
	for i := range batches {
		b, err := r.BeginBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 2 {
			key := revision.Key{Package: fmt.Sprintf("batch/%s%d-%d", tag, i, j), Workspace: "w"}
			if err := writeDraft(ctx, b, key, fmt.Sprintf("b%d", i), true); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func publishNewTB(t testing.TB, r *gitrepo.Repository, key revision.Key) {
	t.Helper()
	ctx := context.Background()
	if err := writeDraft(ctx, r, key, "v-"+key.Workspace, true); err != nil {
		t.Fatal(err)
	}
	for _, lc := range []revision.Lifecycle{revision.LifecycleProposed, revision.LifecyclePublished} {
		if _, err := r.UpdateLifecycle(ctx, key, lc, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot lists the repository at dir from a new Repository and reads
// every revision's files: revision and lifecycle to a digest of its
// files.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, maintSpec(dir), &gitrepo.Options{NoAutoMaintain: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return snapshotOf(t, r)
}

func snapshotOf(t testing.TB, r *gitrepo.Repository) map[string]string {
	t.Helper()
	ctx := context.Background()
	revs, err := r.List(ctx, repository.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	out := map[string]string{}
	for _, pr := range revs {
		files, err := pr.Files(ctx)
		if err != nil {
			t.Fatalf("files of %s: %v", pr.Meta().Key, err)
		}
		h := sha256.New()
		for _, p := range files.Paths() {
			b, _ := files.Get(p)
			fmt.Fprintf(h, "%s %d %s\n", p, len(b), b)
		}
		out[pr.Meta().Key.String()+" "+string(pr.Meta().Lifecycle)] = fmt.Sprintf("%x", h.Sum(nil))
	}
	return out
}

// objectCounts returns git count-objects' loose objects and packs.
func objectCounts(t testing.TB, dir string) (loose, packs int) {
	t.Helper()
	for _, line := range strings.Split(git(t, dir, "count-objects", "-v"), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.Atoi(v)
		switch k {
		case "count":
			loose = n
		case "packs":
			packs = n
		}
	}
	return loose, packs
}

// looseRefs counts the loose ref files under refs/<sub>, and lock files.
func looseRefs(t testing.TB, dir, sub string) (refs, locks int) {
	t.Helper()
	_ = filepath.WalkDir(filepath.Join(dir, "refs", sub), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if strings.HasSuffix(p, ".lock") {
				locks++
			} else {
				refs++
			}
		}
		return nil
	})
	return refs, locks
}

// fsckStrict runs git fsck --strict and fails on any output.
func fsckStrict(t testing.TB, dir, what string) {
	t.Helper()
	cmd := exec.Command("git", "fsck", "--strict", "--no-progress", "--no-dangling")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("%s: git fsck --strict: %v\n%s", what, err, out)
	}
}

func sameSnapshot(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d revisions, want %d", what, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: revision %s reads %q, want %q", what, k, got[k], v)
		}
	}
}

func TestMaintainAged(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	r := openMaint(t, dir, nil)
	ageRepo(t, r, "a", 12, 20)
	loose0, packs0 := objectCounts(t, dir)
	tags0, _ := looseRefs(t, dir, "tags")
	if packs0 < 20 || loose0 < 50 || tags0 < 12 {
		t.Fatalf("aged: %d packs, %d loose objects, %d loose tags; want at least 20, 50, 12", packs0, loose0, tags0)
	}
	want := snapshot(t, dir)

	st, err := r.Maintain(ctx, gitrepo.MaintainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("maintain: %+v", st)
	loose, packs := objectCounts(t, dir)
	tags, locks := looseRefs(t, dir, "tags")
	if loose != 0 || tags != 0 || locks != 0 {
		t.Errorf("after: %d loose objects, %d loose tags, %d lock files; want none", loose, tags, locks)
	}
	if max := int(math.Log2(float64(loose0+packs0*4))) + 1; packs > max || packs >= packs0 {
		t.Errorf("after: %d packs (from %d); want at most %d", packs, packs0, max)
	}
	if st.PacksBefore != packs0 || st.PacksAfter != packs || st.LoosePacked != loose0 || st.RefsPacked != tags0 {
		t.Errorf("stats %+v; want packs %d -> %d, %d loose packed, %d refs packed", st, packs0, packs, loose0, tags0)
	}
	fsckStrict(t, dir, "after maintenance")
	sameSnapshot(t, "after maintenance", snapshot(t, dir), want)
	// The Repository that maintained reads and writes on.
	sameSnapshot(t, "same Repository", snapshotOf(t, r), want)

	// Aged again, the geometric rule keeps the packs few; Full makes one.
	ageRepo(t, r, "b", 3, 6)
	if _, err := r.Maintain(ctx, gitrepo.MaintainOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, packs := objectCounts(t, dir); packs > 4 {
		t.Errorf("after a second run: %d packs, want at most 4", packs)
	}
	if _, err := r.Maintain(ctx, gitrepo.MaintainOptions{Full: true}); err != nil {
		t.Fatal(err)
	}
	if loose, packs := objectCounts(t, dir); packs != 1 || loose != 0 {
		t.Errorf("after Full: %d packs, %d loose; want 1, 0", packs, loose)
	}
	fsckStrict(t, dir, "after Full")
	want = snapshot(t, dir)
	sameSnapshot(t, "same Repository after Full", snapshotOf(t, r), want)
	// Drafts and proposals stay loose until idle for IdleRefAge.
	if heads, _ := looseRefs(t, dir, "heads"); heads < 40 {
		t.Errorf("%d loose branches after runs with the default IdleRefAge; want the drafts loose", heads)
	}
	if _, err := r.Maintain(ctx, gitrepo.MaintainOptions{IdleRefAge: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	if heads, _ := looseRefs(t, dir, "heads"); heads != 1 {
		t.Errorf("%d loose branches after a run with IdleRefAge 1ns; want only main", heads)
	}
	fsckStrict(t, dir, "after packing drafts")
	sameSnapshot(t, "after packing drafts", snapshot(t, dir), want)
	// A packed draft is proposed (its ref deleted from packed-refs).
	draft := revision.Key{Package: "batch/a0-0", Workspace: "w"}
	if _, err := r.UpdateLifecycle(ctx, draft, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, dir); len(got) != len(want) || got["maint:batch/a0-0@w "+string(revision.LifecycleProposed)] == "" {
		t.Errorf("after proposing a packed draft: %d revisions, proposal %q", len(got), got["maint:batch/a0-0@w proposed"])
	}
	fsckStrict(t, dir, "after proposing a packed draft")
	want = snapshot(t, dir)
	// Nothing to do: nothing changes.
	st, err = r.Maintain(ctx, gitrepo.MaintainOptions{})
	if err != nil || st.PacksMerged != 0 || st.ObjectsWritten != 0 {
		t.Errorf("a run with nothing to do: %+v, %v", st, err)
	}
	// git reads it as cad wrote it: a tag deleted with git stays deleted.
	git(t, dir, "tag", "-d", "single/a0/v1")
	if _, err := r.Get(ctx, revision.Key{Package: "single/a0", Revision: 1}); !errors.Is(err, repository.ErrNotFound) {
		t.Errorf("a tag git deleted: %v, want ErrNotFound", err)
	}
}

// TestMaintainGitPacks merges packs the git CLI wrote, holding offset
// deltas (each copied as it is stored, its base offset rewritten), beside
// cad's.
func TestMaintainGitPacks(t *testing.T) {
	ctx := context.Background()
	work := filepath.Join(t.TempDir(), "work")
	git(t, "", "init", "--quiet", "-b", "main", work)
	big := strings.Repeat("line of a large file that deltas well\n", 400)
	for i := 1; i <= 9; i++ {
		if err := os.MkdirAll(filepath.Join(work, "pkg"), 0o755); err != nil {
			t.Fatal(err)
		}
		kpt := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n"
		if err := os.WriteFile(filepath.Join(work, "pkg", "Kptfile"), []byte(kpt), 0o644); err != nil {
			t.Fatal(err)
		}
		big += fmt.Sprintf("version %d\n", i)
		if err := os.WriteFile(filepath.Join(work, "pkg", "big.txt"), []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, work, "add", "-A")
		git(t, work, "commit", "--quiet", "-m", fmt.Sprintf("v%d", i))
		git(t, work, "tag", fmt.Sprintf("pkg/v%d", i))
		if i%3 == 0 {
			git(t, work, "repack", "-d", "-q")
		}
	}
	bare := filepath.Join(t.TempDir(), "repo.git")
	git(t, "", "clone", "--quiet", "--bare", "--no-local", work, bare)
	// Two more packs with deltas, then cad's own writes.
	r := openMaint(t, bare, nil)
	ageRepo(t, r, "g", 2, 3)
	_, packs0 := objectCounts(t, bare)
	want := snapshot(t, bare)
	if len(want) < 9 {
		t.Fatalf("%d revisions, want the 9 git tags and cad's", len(want))
	}
	before := git(t, bare, "count-objects", "-v")
	if _, err := r.Maintain(ctx, gitrepo.MaintainOptions{Full: true}); err != nil {
		t.Fatal(err)
	}
	loose, packs := objectCounts(t, bare)
	if packs != 1 || loose != 0 {
		t.Errorf("after Full: %d packs (from %d), %d loose; want 1, 0", packs, packs0, loose)
	}
	idx, err := filepath.Glob(filepath.Join(bare, "objects", "pack", "*.idx"))
	if out := git(t, bare, "verify-pack", "-v", must1(t, idx, err)); !strings.Contains(out, "chain length = 1") {
		t.Errorf("the merged pack holds no delta:\n%s", out)
	}
	t.Logf("before:\n%s\nafter:\n%s", before, git(t, bare, "count-objects", "-v"))
	fsckStrict(t, bare, "after maintenance")
	sameSnapshot(t, "after maintenance", snapshot(t, bare), want)
}

func must1(t testing.TB, names []string, err error) string {
	t.Helper()
	if err != nil || len(names) != 1 {
		t.Fatalf("%v, %v: want one file", names, err)
	}
	return names[0]
}

// TestMaintainAuto: writes run maintenance by themselves when the packs
// or the loose objects reach their limits.
func TestMaintainAuto(t *testing.T) {
	defer gitrepo.SetAutoCheckEvery(1)()
	dir := newBare(t)
	r := openMaint(t, dir, &gitrepo.Options{AutoMaintainPacks: 6, AutoMaintainLoose: -1})
	ageRepo(t, r, "a", 0, 30)
	if _, packs := objectCounts(t, dir); packs >= 6 {
		t.Errorf("%d packs after 30 batches with the automatic maintenance at 6", packs)
	}
	fsckStrict(t, dir, "after automatic maintenance")

	// Off: the packs pile up.
	dir = newBare(t)
	r = openMaint(t, dir, &gitrepo.Options{AutoMaintainPacks: 6, NoAutoMaintain: true})
	ageRepo(t, r, "a", 0, 10)
	if _, packs := objectCounts(t, dir); packs < 10 {
		t.Errorf("%d packs after 10 batches with the automatic maintenance off", packs)
	}
}

// The maintenance crash test: a child process runs Maintain on a copy of
// an aged repository and kills itself at the Nth step (every step in
// turn, until a run completes); after each kill git fsck --strict must
// pass, cad must read every revision as before, a new run must complete,
// and writes must work (no lock file left on a tag).

const (
	maintChildEnv = "CAD_MAINT_CHILD" // the repository
	maintAtEnv    = "CAD_MAINT_AT"
)

func init() {
	if dir := os.Getenv(maintChildEnv); dir != "" {
		os.Exit(maintChild(dir))
	}
}

func maintChild(dir string) int {
	ctx := context.Background()
	at, _ := strconv.Atoi(os.Getenv(maintAtEnv))
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
			select {}
		}
	})
	r, err := gitrepo.Open(ctx, maintSpec(dir), &gitrepo.Options{NoAutoMaintain: true})
	if err != nil {
		say("error %v", err)
		return 2
	}
	if _, err := r.Maintain(ctx, gitrepo.MaintainOptions{}); err != nil {
		say("error %v", err)
		return 2
	}
	say("done")
	return 0
}

func TestMaintainCrash(t *testing.T) {
	ctx := context.Background()
	base := newBare(t)
	r := openMaint(t, base, nil)
	ageRepo(t, r, "a", 4, 5)
	r.Close()
	want := snapshot(t, base)
	var steps []string
	for at := 1; ; at++ {
		if at > 200 {
			t.Fatal("maintenance never completed")
		}
		dir := copyRepo(t, base)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), maintChildEnv+"="+dir, maintAtEnv+"="+strconv.Itoa(at))
		out, err := cmd.Output()
		var ee *exec.ExitError
		killed := errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
		if err != nil && !killed {
			t.Fatalf("child at %d: %v\n%s\n%s", at, err, out, ee.Stderr)
		}
		step := strings.TrimPrefix(strings.TrimSpace(string(out)), "step ")
		what := fmt.Sprintf("killed at step %d (%s)", at, step)
		if !killed {
			what = "completed"
		}
		fsckStrict(t, dir, what)
		sameSnapshot(t, what, snapshot(t, dir), want)
		if !killed {
			break
		}
		steps = append(steps, step)
		// A new run completes what the dead one left, and writes work.
		r := openMaint(t, dir, nil)
		if _, err := r.Maintain(ctx, gitrepo.MaintainOptions{}); err != nil {
			t.Fatalf("%s: maintenance after: %v", what, err)
		}
		if loose, _ := objectCounts(t, dir); loose != 0 {
			t.Errorf("%s: %d loose objects after a new run", what, loose)
		}
		if _, locks := looseRefs(t, dir, ""); locks != 0 {
			t.Errorf("%s: %d lock files left", what, locks)
		}
		if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "single/a0", Revision: 1}, revision.LifecycleDeletionProposed, repository.UpdateOptions{}); err != nil {
			t.Fatalf("%s: a write after: %v", what, err)
		}
		fsckStrict(t, dir, what+", then a new run and a write")
		r.Close()
	}
	t.Logf("killed at %d steps: %s", len(steps), strings.Join(steps, ", "))
	for _, s := range []string{"maint-pack-written", "maint-idx-renamed", "maint-loose-removing", "maint-packed-renamed", "maint-refs-listed"} {
		if !slices.ContainsFunc(steps, func(x string) bool { return strings.HasPrefix(x, s) }) {
			t.Errorf("no kill at step %s", s)
		}
	}
}

// TestMaintainConcurrent runs maintenance while other Repositories on the
// same directory (each its own pack list and go-git storage, as another
// process has; across Repositories the file locks are separate open
// files, as across processes) read every revision and write new ones.
func TestMaintainConcurrent(t *testing.T) { testMaintainConcurrent(t, false) }

// TestMaintainConcurrentMultiPackIndex is TestMaintainConcurrent with
// git multi-pack-index write run before each Maintain: the readers find
// objects through a multi-pack-index that Maintain removes and git
// writes again, naming packs Maintain merges.
func TestMaintainConcurrentMultiPackIndex(t *testing.T) { testMaintainConcurrent(t, true) }

func testMaintainConcurrent(t *testing.T, midx bool) {
	ctx := context.Background()
	dir := newBare(t)
	w := openMaint(t, dir, nil)
	ageRepo(t, w, "a", 6, 8)
	if midx {
		git(t, dir, "multi-pack-index", "write")
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 2 {
		rd := openMaint(t, dir, nil)
		snapshotOf(t, rd) // its packs are open, its go-git storage indexed
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				revs, err := rd.List(ctx, repository.ListOptions{})
				if err != nil {
					errs <- fmt.Errorf("reader %d: list: %w", i, err)
					return
				}
				for _, pr := range revs {
					if _, err := pr.Files(ctx); err != nil {
						errs <- fmt.Errorf("reader %d: files of %s: %w", i, pr.Meta().Key, err)
						return
					}
				}
			}
		}()
	}
	wrote := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; !stop.Load(); n++ {
			key := revision.Key{Package: fmt.Sprintf("conc/p%d", n%3), Workspace: fmt.Sprintf("c%d", n)}
			if err := writeDraft(ctx, w, key, "c", true); err != nil {
				errs <- fmt.Errorf("writer: %w", err)
				return
			}
			wrote++
		}
	}()
	m := openMaint(t, dir, nil)
	merged, packed := 0, 0
	for range 4 {
		time.Sleep(100 * time.Millisecond)
		if midx {
			git(t, dir, "multi-pack-index", "write")
			time.Sleep(50 * time.Millisecond)
		}
		st, err := m.Maintain(ctx, gitrepo.MaintainOptions{})
		if err != nil {
			t.Error(err)
		}
		merged, packed = merged+st.PacksMerged, packed+st.LoosePacked
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	fsckStrict(t, dir, "after concurrent maintenance")
	got := snapshot(t, dir)
	drafts := 0
	for k := range got {
		if strings.Contains(k, ":conc/") {
			drafts++
		}
	}
	if merged == 0 || packed == 0 {
		t.Errorf("the runs merged %d packs and %d loose objects; want some of each", merged, packed)
	}
	if drafts != wrote || wrote == 0 {
		t.Errorf("%d drafts of the writer read, it wrote %d", drafts, wrote)
	}
}

// Maintenance removes the temporary files of every kind a dead writer
// left (tmpfile.RemoveStale's one rule: its lock free and last written
// over tmpfile.Grace ago), cad v0.1.0's cad-workspaces and the cad-index
// older versions wrote, and leaves a
// live writer's file (locked, however old), a file written within the
// grace, and git's own temporary files.
func TestMaintainRemovesStaleTemps(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no file locks: a repository on disk is not maintained here")
	}
	ctx := context.Background()
	dir := newBare(t)
	r := openDisk(t, dir)
	propose(t, r, "p", "ws")
	old := time.Now().Add(-tmpfile.Grace - time.Minute)
	plant := func(rel string, age time.Time) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("half written"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, age, age); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pack := filepath.Join("objects", "pack")
	stale := []string{
		plant(filepath.Join(pack, gitobj.StagePackPrefix+"1"), old), // a fetch's staging
		plant(filepath.Join(pack, gitobj.StageIdxPrefix+"1"), old),
		plant(filepath.Join(pack, gitobj.MaintPackPrefix+"1"), old), // a maintenance run's
		plant(filepath.Join(pack, gitobj.MaintIdxPrefix+"1"), old),
		plant(filepath.Join(pack, gitobj.WritePackPrefix+"1"), old), // a write's pack
		plant(filepath.Join(pack, gitobj.WriteIdxPrefix+"1"), old),
		plant(filepath.Join("objects", "ab", tmpfile.ObjPrefix+"1"), old), // a loose object
		plant("cad-paths-123.tmp", old),                                   // a rebuild of cad-paths
		plant(filepath.Join(pack, "tmp_pack_cad_2"), old),                 // cad v0.1.0's staging
		plant(filepath.Join("cad-workspaces", "0123"), time.Now()),        // cad v0.1.0's summaries
		plant("cad-index", time.Now()),                                    // the object index older versions kept
	}
	kept := []string{
		plant(filepath.Join(pack, gitobj.StagePackPrefix+"fresh"), time.Now()),
		plant(filepath.Join("objects", "cd", tmpfile.ObjPrefix+"fresh"), time.Now()),
		plant(filepath.Join(pack, "tmp_pack_git"), old), // git's own
		plant(filepath.Join("objects", "ab", "tmp_obj_git"), old),
	}
	live, err := tmpfile.Create(filepath.Join(dir, pack), gitobj.StagePackPrefix)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := os.Chtimes(live.Name(), old, old); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, live.Name())
	if _, err := r.Maintain(ctx, gitrepo.MaintainOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s was left: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "cad-workspaces")); !os.IsNotExist(err) {
		t.Errorf("cad-workspaces was left: %v", err)
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if keys, err := listKeys(ctx, r); err != nil || len(keys) != 1 {
		t.Fatalf("after maintenance: %v, %v", keys, err)
	}
}
