package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

func crashOpNamed(t *testing.T, name string) crashOp {
	t.Helper()
	for _, op := range crashOps {
		if op.name == name {
			return op
		}
	}
	t.Fatalf("no crash op %s", name)
	return crashOp{}
}

// Recovery never removes a packed-refs.lock it did not create: one held
// by another program (git pack-refs) while an interrupted deletion of a
// packed tag waits to be completed stays, writes wait for it (and fail
// with ErrConflict when it stays), reads show the deletion all the same,
// and once the lock is gone the next write completes the deletion.
func TestRecoveryLeavesForeignPackedRefsLock(t *testing.T) {
	ctx := context.Background()
	del := crashOpNamed(t, "delete")
	dir := crashFixture(t, del)
	r, err := gitrepo.Open(ctx, crashSpec(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	interrupt(t, "journal-committed", func() error { return del.run(ctx, r) })
	lock := filepath.Join(dir, "packed-refs.lock")
	const foreign = "git pack-refs is writing this\n"
	if err := os.WriteFile(lock, []byte(foreign), 0o644); err != nil {
		t.Fatal(err)
	}
	err = writeDraft(ctx, r, revision.Key{Package: "other", Workspace: "w"}, "x", true)
	if !errors.Is(err, repository.ErrConflict) {
		t.Fatalf("a write while another program holds packed-refs.lock: %v, want ErrConflict", err)
	}
	if data, err := os.ReadFile(lock); err != nil || string(data) != foreign {
		t.Fatalf("packed-refs.lock of another program was removed or changed: %q, %v", data, err)
	}
	want := []string{"apps/app@main/placeholder Published"}
	if got := lifecycles(t, r, "apps/app"); !slices.Equal(got, want) {
		t.Fatalf("listed %v while the deletion waits, want %v", got, want)
	}
	if err := os.Remove(lock); err != nil { // git is done
		t.Fatal(err)
	}
	if err := writeDraft(ctx, r, revision.Key{Package: "other", Workspace: "w"}, "x", true); err != nil {
		t.Fatalf("a write once the lock is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cad-journal")); !os.IsNotExist(err) {
		t.Fatalf("the journal was not completed: %v", err)
	}
	if got := lifecycles(t, r, "apps/app"); !slices.Equal(got, want) {
		t.Fatalf("listed %v after completing, want %v", got, want)
	}
	if out := git(t, dir, "show-ref"); strings.Contains(out, "refs/tags/apps/app/v1\n") {
		t.Fatalf("git still sees the deleted tag:\n%s", out)
	}
}

// What a writer killed while rewriting packed-refs leaves (its new
// content, and packed-refs.lock linked to it) is cad's, and the next write
// removes it and completes the deletion.
func TestRecoveryRemovesOwnPackedRefsLock(t *testing.T) {
	ctx := context.Background()
	del := crashOpNamed(t, "delete")
	for _, at := range []string{"packed-written", "packed-locked"} {
		t.Run(at, func(t *testing.T) {
			dir := crashFixture(t, del)
			r, err := gitrepo.Open(ctx, crashSpec(dir), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			interrupt(t, at, func() error { return del.run(ctx, r) })
			tmp := filepath.Join(dir, "cad-packed-refs.tmp")
			if _, err := os.Stat(tmp); err != nil {
				t.Fatalf("nothing left at %s: %v", at, err)
			}
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := writeDraft(wctx, r, revision.Key{Package: "other", Workspace: "w"}, "x", true); err != nil {
				t.Fatalf("the next write: %v", err)
			}
			for _, p := range []string{tmp, filepath.Join(dir, "packed-refs.lock"), filepath.Join(dir, "cad-journal")} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Fatalf("%s left: %v", filepath.Base(p), err)
				}
			}
			if got, want := lifecycles(t, r, "apps/app"), []string{"apps/app@main/placeholder Published"}; !slices.Equal(got, want) {
				t.Fatalf("listed %v, want %v", got, want)
			}
		})
	}
}
