package gitrepo

import (
	"context"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Reads of a repository on disk run side by side: one that holds the
// read lock (here stopped inside it) keeps no other read waiting, and
// many reads at once (under -race) share the packs, refs and caches
// safely.
func TestDiskReadsShareTheLock(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "repo.git")
	if out, err := exec.Command("git", "init", "--quiet", "--bare", "-b", "main", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	spec := repository.Spec{Name: "disk", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: dir, Branch: "main", CreateBranch: true}}
	r, err := Open(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, p := range []string{"a", "b", "c"} {
		key := revision.Key{Package: p, Workspace: "w"}
		d, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SetFile("Kptfile", []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: "+p+"\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, lc := range []revision.Lifecycle{revision.LifecycleProposed, revision.LifecyclePublished} {
			if _, err := r.UpdateLifecycle(ctx, key, lc, repository.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if out, err := exec.Command("git", "-C", dir, "gc", "--quiet").CombinedOutput(); err != nil {
		t.Fatalf("git gc: %v\n%s", err, out)
	}

	inside, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- r.st.read(ctx, func() error {
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			revs, err := r.List(ctx, repository.ListOptions{})
			if err != nil {
				errs <- err
				return
			}
			pr := revs[i%len(revs)]
			if _, err := pr.Files(ctx); err != nil {
				errs <- err
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		close(release)
		t.Fatal("reads waited for a read holding the lock")
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Fatalf("a concurrent read: %v", err)
	}
}
