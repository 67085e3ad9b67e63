package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// packTags moves the loose tags of the git directory dir into a sorted
// packed-refs file, as git pack-refs does, and returns its lines.
func packTags(t *testing.T, dir string) []string {
	t.Helper()
	lines := []string{}
	root := filepath.Join(dir, "refs", "tags")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		lines = append(lines, strings.TrimSpace(string(data))+" "+filepath.ToSlash(rel))
		return os.Remove(p)
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[41:], b[41:]) })
	return append([]string{"# pack-refs with: peeled fully-peeled sorted "}, lines...)
}

// A damaged line of packed-refs is reported as a damaged loose ref is:
// the revision it holds is left out of List with a warning, Get returns
// ErrCorrupt, and approving never hands out a number the line may hold;
// nothing rewrites the file.
func TestDamagedPackedRefs(t *testing.T) {
	ctx := context.Background()
	bv1 := "refs/tags/b/v1"
	for _, tc := range []struct {
		name string
		// damage returns packed-refs with lines (header, a/v1, b/v1)
		// damaged.
		damage func(lines []string) string
		gone   string // the revision left out, if any
		rev    int    // the approval's number; 0: refused with ErrCorrupt
	}{
		{"garbage line", func(l []string) string { l[2] = "this is not a ref line"; return join(l) }, "b@w1/v1", 0},
		{"truncated line", func(l []string) string { s := join(l); return s[:len(s)-5] }, "b@w1/v1", 0},
		{"truncated hash", func(l []string) string { return join(l[:2]) + l[2][:20] }, "b@w1/v1", 0},
		{"bad hash", func(l []string) string { l[2] = strings.Repeat("z", 40) + l[2][40:]; return join(l) }, "b@w1/v1", 2},
		{"bad peeled value", func(l []string) string { return join(l) + "^0123\n" }, "b@w1/v1", 2},
		// In a sorted file a nameless line may only hold a name between
		// its neighbours': a/v1 and b/v1 are read, b's next number may
		// be taken, and the drafts (sorted before) are not concerned.
		{"garbage between a and b", func(l []string) string { return join([]string{l[0], l[1], "garbage", l[2]}) }, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, logs, opts := damagedFixture(t)
			packed := tc.damage(packTags(t, dir))
			p := filepath.Join(dir, "packed-refs")
			if err := os.WriteFile(p, []byte(packed), 0o644); err != nil {
				t.Fatal(err)
			}
			r, revs := openAndListDamaged(t, dir, opts, "packed-refs line")
			got := keysOf(revs)
			want := []string{"a@draft", "a@main/placeholder", "a@w1/v1", "b@main/placeholder", "b@prop", "b@w1/v1"}
			if tc.gone != "" {
				want = slices.DeleteFunc(want, func(s string) bool { return s == tc.gone })
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("listed %v, want %v", got, want)
			}
			if !strings.Contains(logs.String(), "packed-refs line") {
				t.Fatalf("no warning about packed-refs: %s", logs.String())
			}
			if tc.gone != "" {
				_, err := r.Get(ctx, revision.Key{Package: "b", Revision: 1})
				var damaged *gitrepo.DamagedRefError
				if !errors.Is(err, repository.ErrCorrupt) || !errors.As(err, &damaged) || damaged.Ref != bv1 {
					t.Fatalf("get b v1: %v, want a damaged-ref error for %s", err, bv1)
				}
			}
			pr, err := r.UpdateLifecycle(ctx, revision.Key{Package: "b", Workspace: "prop"}, revision.LifecyclePublished, repository.UpdateOptions{})
			switch {
			case tc.rev == 0 && !errors.Is(err, repository.ErrCorrupt):
				t.Fatalf("approve: %v, want ErrCorrupt", err)
			case tc.rev == 0:
				if pr, err := r.Get(ctx, revision.Key{Package: "b", Workspace: "prop"}); err != nil || pr.Meta().Lifecycle != revision.LifecycleProposed {
					t.Fatalf("the proposal after a refused approve: %v", err)
				}
				if _, err := os.Stat(filepath.Join(dir, bv1)); err == nil {
					t.Fatalf("a refused approve wrote %s", bv1)
				}
			case err != nil:
				t.Fatalf("approve: %v", err)
			case pr.Meta().Key.Revision != tc.rev:
				t.Fatalf("approved as revision %d, want %d", pr.Meta().Key.Revision, tc.rev)
			}
			if data, err := os.ReadFile(p); err != nil || string(data) != packed {
				t.Fatalf("packed-refs was rewritten: %q, %v", data, err)
			}
			// Other packages still take writes.
			if err := writeDraft(ctx, r, revision.Key{Package: "c", Workspace: "new"}, "c", true); err != nil {
				t.Fatalf("a write elsewhere: %v", err)
			}
		})
	}
}

func join(lines []string) string { return strings.Join(lines, "\n") + "\n" }

// Reading revisions out of a damaged pack fails with errors matching
// repository.ErrCorrupt, as the repository contract says.
func TestDamagedPackIsErrCorrupt(t *testing.T) {
	ctx := context.Background()
	dir, _, opts := damagedFixture(t)
	git(t, dir, "gc", "--quiet")
	packs, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	if len(packs) != 1 {
		t.Fatalf("packs after gc: %v", packs)
	}
	data, err := os.ReadFile(packs[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := 12; i < len(data)-20; i++ {
		data[i] ^= 0x5a
	}
	os.Chmod(packs[0], 0o644)
	if err := os.WriteFile(packs[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := gitrepo.Open(ctx, crashSpec(dir), opts)
	if err != nil {
		if !errors.Is(err, repository.ErrCorrupt) {
			t.Fatalf("open: %v, want ErrCorrupt", err)
		}
		return
	}
	defer r.Close()
	failed := 0
	check := func(what string, err error) {
		if err == nil {
			return
		}
		failed++
		if !errors.Is(err, repository.ErrCorrupt) {
			t.Fatalf("%s: %v, want an error matching ErrCorrupt", what, err)
		}
	}
	revs, err := r.List(ctx, repository.ListOptions{})
	check("list", err)
	for _, k := range []revision.Key{{Package: "a", Revision: 1}, {Package: "b", Revision: 1}, {Package: "a", Workspace: "draft"}, {Package: "a", Revision: revision.Placeholder}} {
		pr, err := r.Get(ctx, k)
		check("get "+k.String(), err)
		if err == nil {
			_, err := pr.Files(ctx)
			check("files of "+k.String(), err)
		}
	}
	if failed == 0 {
		t.Fatalf("nothing failed reading a damaged pack (%d revisions listed)", len(revs))
	}
}
