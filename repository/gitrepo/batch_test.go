package gitrepo_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// The write batch (batch.go): writes held in memory, seen only through
// the batch, committed as one pack and one ref transaction.

// batchReaderEnv, set to a git directory, makes the test binary a
// reader in another process (TestBatchAnotherProcess): it lists the
// repository until it sees the batch's batchReaderN revisions, failing
// if it ever sees some but not all.
const (
	batchReaderEnv = "CAD_BATCH_READER"
	batchReaderN   = 40
)

func init() {
	if dir := os.Getenv(batchReaderEnv); dir != "" {
		os.Exit(batchReader(dir))
	}
	// TestCrash kills a batch of three new drafts (with metadata), a
	// metadata change and the deletion of a revision whose tag is in
	// packed-refs at every step of its commit: all five writes or none.
	crashOps = append(crashOps, crashOp{
		name:    "batch",
		prepare: lifecycle(appV1, revision.LifecycleDeletionProposed),
		run: func(ctx context.Context, r *gitrepo.Repository) error {
			b, err := r.BeginBatch(ctx)
			if err != nil {
				return err
			}
			for _, k := range batchKeys {
				if err := newDraftMD(ctx, b, k, "b", batchLabel); err != nil {
					b.Discard()
					return err
				}
			}
			if _, err := repository.SetMetadata(ctx, b, baseBV1, newLabel, repository.UpdateOptions{}); err != nil {
				b.Discard()
				return err
			}
			if err := b.Delete(ctx, appV1, repository.UpdateOptions{}); err != nil {
				b.Discard()
				return err
			}
			return b.Commit(ctx)
		},
		done: func(_ context.Context, _ *gitrepo.Repository, revs []revision.PackageRevision) (bool, error) {
			n := 0
			for _, k := range batchKeys {
				if pr := find(revs, k.Package, k.Workspace); pr != nil {
					if !pr.Meta().Metadata.Equal(batchLabel) {
						return false, fmt.Errorf("%s has metadata %v", k.Package, pr.Meta().Metadata)
					}
					n++
				}
			}
			bv1 := find(revs, baseBV1.Package, "w1")
			if bv1 == nil {
				return false, errors.New("base/b v1 is gone")
			}
			if bv1.Meta().Metadata.Equal(newLabel) {
				n++
			}
			if find(revs, appV1.Package, "w1") == nil {
				n++
			}
			switch n {
			case 0:
				return false, nil
			case len(batchKeys) + 2:
				return true, nil
			}
			return false, fmt.Errorf("%d of the batch's %d writes happened", n, len(batchKeys)+2)
		},
	})
}

var (
	batchKeys = []revision.Key{
		{Package: "fan/a", Workspace: "w1"},
		{Package: "fan/b", Workspace: "w1"},
		{Package: "fan/c", Workspace: "w1"},
	}
	batchLabel = revision.Metadata{Labels: map[string]string{"set": "fan"}}
	baseBV1    = revision.Key{Package: "base/b", Revision: 1}
)

// newDraftMD creates and commits a new draft of key with metadata md.
func newDraftMD(ctx context.Context, r repository.Repository, key revision.Key, data string, md revision.Metadata) error {
	d, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{})
	if err != nil {
		return err
	}
	if err := d.SetFile("Kptfile", []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: "+filepath.Base(key.Package)+"\n")); err != nil {
		return err
	}
	if err := d.SetFile("data.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: data\ndata:\n  state: "+data+"\n")); err != nil {
		return err
	}
	_, err = d.Commit(ctx, revision.CommitOptions{Metadata: &md})
	return err
}

// openDisk opens the repository at dir.
func openDisk(t *testing.T, dir string) *gitrepo.Repository {
	t.Helper()
	r, err := gitrepo.Open(context.Background(), crashSpec(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// has reports whether r lists a revision of key's package and workspace.
func has(t *testing.T, ctx context.Context, r repository.Repository, key revision.Key) bool {
	t.Helper()
	revs, err := r.List(ctx, repository.ListOptions{Package: key.Package, Workspace: key.Workspace})
	if err != nil {
		t.Fatal(err)
	}
	return len(revs) > 0
}

// objectFiles returns the loose objects and packs of the git directory.
func objectFiles(t *testing.T, dir string) (loose, packs []string) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(dir, "objects"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(dir, "objects"), p)
		switch {
		case strings.HasPrefix(rel, "pack"+string(filepath.Separator)):
			packs = append(packs, rel)
		case strings.HasPrefix(rel, "info"):
		default:
			loose = append(loose, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return loose, packs
}

func TestBatchCommitsAllAtOnce(t *testing.T) {
	ctx := context.Background()
	dir := crashFixture(t, crashOps[1]) // three published packages, one draft
	r := openDisk(t, dir)
	if _, err := r.SetMetadata(ctx, appDraft, newLabel, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := openDisk(t, dir) // another Repository on the same directory, as another process
	loose0, packs0 := objectFiles(t, dir)
	refs0 := git(t, dir, "for-each-ref")
	mdLog0 := git(t, dir, "rev-list", "--count", "refs/cad/metadata")

	b, err := r.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range batchKeys {
		if err := newDraftMD(ctx, b, k, "b", batchLabel); err != nil {
			t.Fatal(err)
		}
	}
	v1, err := repository.SetMetadata(ctx, b, appV1, newLabel, repository.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A later write of the batch sees the earlier ones: the draft and
	// its metadata, at the Version the batch gave it.
	pr, err := b.Get(ctx, batchKeys[0])
	if err != nil {
		t.Fatalf("get in the batch: %v", err)
	}
	if !pr.Meta().Metadata.Equal(batchLabel) {
		t.Fatalf("in the batch: metadata %v", pr.Meta().Metadata)
	}
	files, err := pr.Files(ctx)
	if err != nil {
		t.Fatalf("files in the batch: %v", err)
	}
	if data, _ := files.ReadFile("data.yaml"); !strings.Contains(string(data), "state: b") {
		t.Fatalf("in the batch: data.yaml %q", data)
	}
	if _, err := repository.SetMetadata(ctx, b, batchKeys[1], revision.Metadata{Labels: map[string]string{"set": "fan", "x": "1"}}, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := repository.SetMetadata(ctx, b, batchKeys[1], batchLabel, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Before the commit, nothing is seen by anyone else, nor written.
	for _, k := range batchKeys {
		if has(t, ctx, r, k) || has(t, ctx, other, k) {
			t.Fatalf("%s seen before the commit", k.Package)
		}
	}
	if got, _ := r.Get(ctx, appV1); !got.Meta().Metadata.IsZero() {
		t.Fatalf("v1's metadata seen before the commit: %v", got.Meta().Metadata)
	}
	if got := git(t, dir, "for-each-ref"); got != refs0 {
		t.Fatalf("refs changed before the commit:\n%s", got)
	}
	if loose, packs := objectFiles(t, dir); len(loose) != len(loose0) || len(packs) != len(packs0) {
		t.Fatalf("objects written before the commit: %d loose, %d packs (were %d, %d)", len(loose), len(packs), len(loose0), len(packs0))
	}

	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range batchKeys {
		for _, rr := range []repository.Repository{r, other} {
			pr, err := rr.Get(ctx, k)
			if err != nil {
				t.Fatalf("%s after the commit: %v", k.Package, err)
			}
			if !pr.Meta().Metadata.Equal(batchLabel) {
				t.Fatalf("%s after the commit: metadata %v", k.Package, pr.Meta().Metadata)
			}
		}
	}
	got, err := other.Get(ctx, appV1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta().Version != v1.Meta().Version {
		t.Fatalf("v1's Version %s after the commit, the batch said %s", got.Meta().Version, v1.Meta().Version)
	}
	// One pack (and its index), no loose object, one metadata commit.
	loose, packs := objectFiles(t, dir)
	if len(loose) != len(loose0) || len(packs) != len(packs0)+2 {
		t.Fatalf("after the commit: %d loose, %d pack files (were %d, %d)", len(loose), len(packs), len(loose0), len(packs0))
	}
	if n := git(t, dir, "rev-list", "--count", "refs/cad/metadata"); n != fmt.Sprint(atoiT(t, mdLog0)+1) {
		t.Fatalf("metadata history %s commits, was %s: want one more", n, mdLog0)
	}
	fsck(t, dir, "after the batch")
	// The batch is done: a write through it fails and writes nothing.
	refs1 := git(t, dir, "for-each-ref")
	if err := newDraftMD(ctx, b, revision.Key{Package: "fan/d", Workspace: "w1"}, "d", batchLabel); !errors.Is(err, repository.ErrBatchDone) {
		t.Fatalf("a write through a committed batch: %v, want ErrBatchDone", err)
	}
	if _, err := pr.Files(ctx); !errors.Is(err, repository.ErrBatchDone) {
		t.Fatalf("reading a revision of a committed batch: %v, want ErrBatchDone", err)
	}
	if has(t, ctx, other, revision.Key{Package: "fan/d", Workspace: "w1"}) || git(t, dir, "for-each-ref") != refs1 {
		t.Fatal("a write through a committed batch was written")
	}
	if err := b.Commit(ctx); !errors.Is(err, repository.ErrBatchDone) {
		t.Fatalf("second commit: %v, want ErrBatchDone", err)
	}
}

func atoiT(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A write of a batch that fails leaves nothing in the batch; the others
// commit.
func TestBatchFailedWriteLeavesOthers(t *testing.T) {
	ctx := context.Background()
	dir := crashFixture(t, crashOps[1])
	r := openDisk(t, dir)
	b, err := r.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := newDraftMD(ctx, b, batchKeys[0], "a", batchLabel); err != nil {
		t.Fatal(err)
	}
	// The same workspace again, in the batch: taken.
	if err := newDraftMD(ctx, b, batchKeys[0], "again", revision.Metadata{}); !errors.Is(err, repository.ErrAlreadyExists) {
		t.Fatalf("a workspace the batch took: %v, want ErrAlreadyExists", err)
	}
	// A draft with no files.
	d, err := b.CreateDraft(ctx, revision.Key{Package: "fan/empty", Workspace: "w1"}, repository.CreateDraftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{Metadata: &batchLabel}); !errors.Is(err, repository.ErrInvalidInput) {
		t.Fatalf("empty draft: %v, want ErrInvalidInput", err)
	}
	// A stale Version.
	if _, err := repository.SetMetadata(ctx, b, appV1, newLabel, repository.UpdateOptions{Version: "0000000000000000000000000000000000000000.published"}); !errors.Is(err, repository.ErrConflict) {
		t.Fatalf("stale version: %v, want ErrConflict", err)
	}
	if err := newDraftMD(ctx, b, batchKeys[1], "b", batchLabel); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range batchKeys[:2] {
		pr, err := r.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		files, err := pr.Files(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if data, _ := files.ReadFile("data.yaml"); strings.Contains(string(data), "again") {
			t.Fatalf("%s holds the failed write", k.Package)
		}
	}
	if has(t, ctx, r, revision.Key{Package: "fan/empty"}) {
		t.Fatal("the empty draft was written")
	}
	if got, _ := r.Get(ctx, appV1); !got.Meta().Metadata.IsZero() {
		t.Fatalf("the stale metadata change was written: %v", got.Meta().Metadata)
	}
	fsck(t, dir, "after the batch")
}

// A ref the batch changed that another writer moved meanwhile makes the
// whole commit fail, writing nothing of it: a draft the batch created, or
// the metadata of a revision the batch changed too.
func TestBatchConflict(t *testing.T) {
	ctx := context.Background()
	for _, what := range []string{"draft", "same-metadata", "workspace", "readiness"} {
		t.Run(what, func(t *testing.T) {
			dir := crashFixture(t, crashOps[1])
			r := openDisk(t, dir)
			other := openDisk(t, dir)
			refs0 := git(t, dir, "for-each-ref")
			b, err := r.BeginBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range batchKeys {
				if err := newDraftMD(ctx, b, k, "b", batchLabel); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := repository.SetMetadata(ctx, b, appV1, newLabel, repository.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if what == "readiness" {
				// The batch approves the proposal; another writer then
				// changes its metadata (a condition, say): the approval
				// was decided on what is no longer there.
				if _, err := r.UpdateLifecycle(ctx, appDraft, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				refs0 = git(t, dir, "for-each-ref")
				if _, err := b.UpdateLifecycle(ctx, appDraft, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			switch what {
			case "draft": // the same draft, by another writer
				err = newDraftMD(ctx, other, batchKeys[2], "other", revision.Metadata{})
			case "same-metadata":
				_, err = other.SetMetadata(ctx, appV1, batchLabel, repository.UpdateOptions{})
			case "workspace": // the same workspace, proposed: no draft ref
				if err = newDraftMD(ctx, other, batchKeys[2], "other", revision.Metadata{}); err == nil {
					_, err = other.UpdateLifecycle(ctx, batchKeys[2], revision.LifecycleProposed, repository.UpdateOptions{})
				}
			case "readiness":
				_, err = other.SetMetadata(ctx, appDraft, revision.Metadata{Labels: map[string]string{"checked": "no"}}, repository.UpdateOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
			refs1 := git(t, dir, "for-each-ref")
			if refs1 == refs0 {
				t.Fatal("the other writer wrote nothing")
			}
			if err := b.Commit(ctx); !errors.Is(err, repository.ErrConflict) {
				t.Fatalf("commit: %v, want ErrConflict", err)
			}
			if got := git(t, dir, "for-each-ref"); got != refs1 {
				t.Fatalf("a failed commit changed refs:\n%s\nwas\n%s", got, refs1)
			}
			for _, k := range batchKeys[:2] {
				if has(t, ctx, r, k) {
					t.Fatalf("%s written by a failed commit", k.Package)
				}
			}
			fsck(t, dir, "after the failed commit")
		})
	}
}

// Metadata another writer changed meanwhile on other revisions (setting,
// changing and removing it) is kept: the batch's metadata changes are laid
// over it.
func TestBatchMetadataRebased(t *testing.T) {
	ctx := context.Background()
	dir := crashFixture(t, crashOps[1])
	r := openDisk(t, dir)
	other := openDisk(t, dir)
	baseB := revision.Key{Package: "base/b", Revision: 1}
	baseA := revision.Key{Package: "base/a", Revision: 1}
	for _, k := range []revision.Key{baseA, baseB} {
		if _, err := r.SetMetadata(ctx, k, newLabel, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := r.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range batchKeys {
		if err := newDraftMD(ctx, b, k, "b", batchLabel); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := repository.SetMetadata(ctx, b, appV1, newLabel, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := repository.SetMetadata(ctx, b, baseA, revision.Metadata{}, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Meanwhile, another writer: a new label on the draft, another on
	// base/b v1, and a new draft with metadata under the batch's fan/.
	otherLabel := revision.Metadata{Labels: map[string]string{"by": "other"}}
	if _, err := other.SetMetadata(ctx, appDraft, otherLabel, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.SetMetadata(ctx, baseB, otherLabel, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fanZ := revision.Key{Package: "fan/z", Workspace: "w1"}
	if err := newDraftMD(ctx, other, fanZ, "z", otherLabel); err != nil {
		t.Fatal(err)
	}
	before := git(t, dir, "rev-list", "--count", "refs/cad/metadata")
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[revision.Key]revision.Metadata{
		batchKeys[0]: batchLabel, batchKeys[1]: batchLabel, batchKeys[2]: batchLabel,
		appV1: newLabel, baseA: {}, appDraft: otherLabel, baseB: otherLabel, fanZ: otherLabel,
	}
	for k, md := range want {
		pr, err := other.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if got := pr.Meta().Metadata; !got.Equal(md) {
			t.Errorf("%s: metadata %v, want %v", k, got, md)
		}
	}
	if n := git(t, dir, "rev-list", "--count", "refs/cad/metadata"); atoiT(t, n) != atoiT(t, before)+1 {
		t.Fatalf("metadata history %s commits, was %s: want one more", n, before)
	}
	fsck(t, dir, "after the batch")
}

func TestBatchDiscard(t *testing.T) {
	ctx := context.Background()
	dir := crashFixture(t, crashOps[1])
	r := openDisk(t, dir)
	loose0, packs0 := objectFiles(t, dir)
	refs0 := git(t, dir, "for-each-ref")
	b, err := r.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := newDraftMD(ctx, b, batchKeys[0], "a", batchLabel); err != nil {
		t.Fatal(err)
	}
	b.Discard()
	if err := b.Commit(ctx); !errors.Is(err, repository.ErrBatchDone) {
		t.Fatalf("Commit after Discard: %v, want ErrBatchDone", err)
	}
	if _, err := b.List(ctx, repository.ListOptions{}); !errors.Is(err, repository.ErrBatchDone) {
		t.Fatalf("List through a discarded batch: %v, want ErrBatchDone", err)
	}
	if has(t, ctx, r, batchKeys[0]) {
		t.Fatal("a discarded write is seen")
	}
	if loose, packs := objectFiles(t, dir); len(loose) != len(loose0) || len(packs) != len(packs0) {
		t.Fatal("a discarded batch wrote objects")
	}
	if got := git(t, dir, "for-each-ref"); got != refs0 {
		t.Fatalf("a discarded batch changed refs:\n%s", got)
	}
}

// A memory repository does not batch, and says so: nothing falls back
// to writing without a batch.
func TestBatchNotSupportedInMemory(t *testing.T) {
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, repository.Spec{Name: "m", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: "mem://", CreateBranch: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.BeginBatch(ctx); !errors.Is(err, repository.ErrNotSupported) {
		t.Fatalf("BeginBatch in memory: %v, want ErrNotSupported", err)
	}
	if b, err := repository.BeginBatch(ctx, r); !errors.Is(err, repository.ErrNotSupported) || b != nil {
		t.Fatalf("repository.BeginBatch in memory: %v, %v, want ErrNotSupported", b, err)
	}
}

// Readers outside the batch, in this Repository and another, never see
// a batch's writes before its commit, and see all of them after, while
// the batch is written from several goroutines.
func TestBatchConcurrentReaders(t *testing.T) {
	ctx := context.Background()
	dir := crashFixture(t, crashOps[1])
	r := openDisk(t, dir)
	other := openDisk(t, dir)
	b, err := r.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	var committed atomic.Bool
	stop := make(chan struct{})
	var readers sync.WaitGroup
	var bad atomic.Value
	for _, rr := range []repository.Repository{r, other} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				revs, err := rr.List(ctx, repository.ListOptions{PackagePrefix: "fan"})
				if err != nil {
					bad.Store(err.Error())
					return
				}
				// committed is set before Commit is called: a list that
				// saw the batch ended after it.
				if len(revs) > 0 && !committed.Load() {
					bad.Store(fmt.Sprintf("%d revisions of the batch seen before its commit", len(revs)))
					return
				}
				if len(revs) != 0 && len(revs) != n {
					bad.Store(fmt.Sprintf("%d of the batch's %d revisions seen", len(revs), n))
					return
				}
			}
		}()
	}
	var writers sync.WaitGroup
	for i := range n {
		writers.Add(1)
		go func() {
			defer writers.Done()
			if err := newDraftMD(ctx, b, revision.Key{Package: fmt.Sprintf("fan/p%02d", i), Workspace: "w1"}, "x", batchLabel); err != nil {
				bad.Store(err.Error())
			}
		}()
	}
	writers.Wait()
	if revs, err := b.List(ctx, repository.ListOptions{PackagePrefix: "fan"}); err != nil || len(revs) != n {
		t.Fatalf("the batch sees %d of its revisions (%v)", len(revs), err)
	}
	committed.Store(true)
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	close(stop)
	readers.Wait()
	if s := bad.Load(); s != nil {
		t.Fatal(s)
	}
	revs, err := other.List(ctx, repository.ListOptions{PackagePrefix: "fan"})
	if err != nil || len(revs) != n {
		t.Fatalf("after the commit: %d revisions (%v)", len(revs), err)
	}
	for _, pr := range revs {
		if !pr.Meta().Metadata.Equal(batchLabel) {
			t.Fatalf("%s: metadata %v", pr.Meta().Key, pr.Meta().Metadata)
		}
	}
}

// A loose object a batch's write uses, already stored (by git here, so
// never synced by this process), is synced before the batch's refs name
// it, as a write without a batch syncs it; the batch's own objects are in
// its pack and sync no loose object.
func TestBatchSyncsStoredLooseObjects(t *testing.T) {
	var mu sync.Mutex
	var synced []plumbing.Hash
	gitrepo.SetObjectSyncHook(func(h plumbing.Hash) {
		mu.Lock()
		synced = append(synced, h)
		mu.Unlock()
	})
	t.Cleanup(func() { gitrepo.SetObjectSyncHook(nil) })
	ctx := context.Background()
	dir := crashFixture(t, crashOps[1])
	r := openDisk(t, dir)
	data := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: data\ndata:\n  state: b\n"
	loose := plumbing.NewHash(gitStdin(t, dir, data, "hash-object", "-w", "--stdin"))
	mu.Lock()
	synced = nil
	mu.Unlock()
	b, err := r.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := newDraftMD(ctx, b, batchKeys[0], "b", batchLabel); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(synced, loose) {
		t.Fatalf("synced %v, not the stored loose blob %s", synced, loose)
	}
	for _, h := range synced {
		// The fixture's loose objects the batch used (the Kptfile of
		// base/a is fan/a's), never one of the pack's.
		hex := h.String()
		if _, err := os.Stat(filepath.Join(dir, "objects", hex[:2], hex[2:])); err != nil {
			t.Fatalf("synced %s, not a loose object: %v", h, err)
		}
	}
}

// gitStdin runs git in dir with stdin and returns its trimmed output.
func gitStdin(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// batchReader is the reader process of TestBatchAnotherProcess.
func batchReader(dir string) int {
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, crashSpec(dir), nil)
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	defer r.Close()
	fmt.Println("ready")
	before := 0
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		revs, err := r.List(ctx, repository.ListOptions{PackagePrefix: "fan"})
		if err != nil {
			fmt.Println("error", err)
			return 2
		}
		switch n := len(revs); {
		case n == 0:
			before++
		case n == batchReaderN:
			fmt.Println("done", before)
			return 0
		default:
			fmt.Println("partial", n)
			return 1
		}
	}
	fmt.Println("timeout")
	return 1
}

// Another process, listing all the while, sees none of a batch's writes
// and then all of them.
func TestBatchAnotherProcess(t *testing.T) {
	ctx := context.Background()
	dir := crashFixture(t, crashOps[1])
	r := openDisk(t, dir)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), batchReaderEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("reader: %q", sc.Text())
	}
	b, err := r.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range batchReaderN {
		if err := newDraftMD(ctx, b, revision.Key{Package: fmt.Sprintf("fan/p%02d", i), Workspace: "w1"}, "x", batchLabel); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("reader: %v: %v", err, lines)
	}
	var before int
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "done ") {
		t.Fatalf("reader: %v", lines)
	}
	fmt.Sscan(strings.TrimPrefix(lines[0], "done "), &before)
	if before == 0 {
		t.Fatal("the reader never listed before the commit")
	}
	t.Logf("the reader listed %d times before the commit", before)
}

// A revision approved in a batch is found by its workspace through the
// batch (the workspace lookup reads the batch's tags, not only the
// files'), and not outside it.
func TestBatchApprovedFoundByWorkspace(t *testing.T) {
	ctx := context.Background()
	r := openDisk(t, newBare(t))
	key := revision.Key{Package: "pkg", Workspace: "ws"}
	if err := newDraftMD(ctx, r, key, "a", batchLabel); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UpdateLifecycle(ctx, key, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := r.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Discard()
	if _, err := b.UpdateLifecycle(ctx, key, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx, key)
	if err != nil {
		t.Fatalf("get by workspace in the batch: %v", err)
	}
	if got.Meta().Lifecycle != revision.LifecyclePublished || got.Meta().Key.Revision != 1 {
		t.Fatalf("in the batch: %+v", got.Meta())
	}
	got, err = r.Get(ctx, key)
	if err != nil || got.Meta().Lifecycle != revision.LifecycleProposed {
		t.Fatalf("outside the batch: %v %+v", err, got)
	}
}
