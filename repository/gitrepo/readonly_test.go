package gitrepo_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

type stopHere struct{}

// interrupt runs write and stops it at the transaction step named at, as
// a process killed there would leave it (the journal committed, the refs
// partly moved).
func interrupt(t *testing.T, at string, write func() error) {
	t.Helper()
	reached := false
	gitrepo.SetFaultHook(func(step string) {
		if step == at {
			reached = true
			panic(stopHere{})
		}
	})
	defer gitrepo.SetFaultHook(nil)
	func() {
		defer func() {
			if p := recover(); p != nil && p != (stopHere{}) {
				panic(p)
			}
		}()
		_ = write()
	}()
	if !reached {
		t.Fatalf("the write never reached step %q", at)
	}
}

// lifecycles returns the lifecycle of every revision of package pkg by
// its key.
func lifecycles(t *testing.T, r *gitrepo.Repository, pkg string) []string {
	t.Helper()
	revs, err := r.List(context.Background(), repository.ListOptions{Package: pkg})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var out []string
	for _, pr := range revs {
		k := pr.Meta().Key
		k.Repository = ""
		out = append(out, k.String()+" "+string(pr.Meta().Lifecycle))
	}
	slices.Sort(out)
	return out
}

// A reader that may not write finds an approval its writer left half
// done (tag set, proposal not yet removed): it sees the approval
// complete, as a reader that rolls the journal forward does, and changes
// nothing on disk.
func TestReadOnlyReaderSeesCommittedState(t *testing.T) {
	ctx := context.Background()
	var approve crashOp
	for _, op := range crashOps {
		if op.name == "approve" {
			approve = op
		}
	}
	dir := crashFixture(t, approve)
	r, err := gitrepo.Open(ctx, crashSpec(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	interrupt(t, "renamed refs/tags/apps/app/v2", func() error { return approve.run(ctx, r) })
	journal := filepath.Join(dir, "cad-journal")
	if _, err := os.Stat(journal); err != nil {
		t.Fatalf("no journal after the interrupted write: %v", err)
	}
	want := []string{"apps/app@main/placeholder Published", "apps/app@w1/v1 Published", "apps/app@w2/v2 Published"}

	gitrepo.SetDenyWrite(func(gitDir string) bool { return gitDir == dir })
	defer gitrepo.SetDenyWrite(nil)
	ro, err := gitrepo.Open(ctx, crashSpec(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for range 2 { // the second from the overlay kept
		if got := lifecycles(t, ro, "apps/app"); !slices.Equal(got, want) {
			t.Fatalf("a read-only reader lists %v, want %v", got, want)
		}
	}
	if _, err := ro.Get(ctx, revision.Key{Package: "apps/app", Workspace: "w2"}); err != nil {
		t.Fatalf("get the approved revision by workspace: %v", err)
	}
	pr, err := ro.Get(ctx, revision.Key{Package: "apps/app", Revision: revision.Placeholder})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(journal); err != nil {
		t.Fatalf("the read-only reader changed the repository: %v", err)
	}
	placeholderV := pr.Meta().Version

	// A reader that may write completes the journal and sees the same.
	gitrepo.SetDenyWrite(nil)
	if got := lifecycles(t, r, "apps/app"); !slices.Equal(got, want) {
		t.Fatalf("after rolling forward: %v, want %v", got, want)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Fatalf("the journal is still there: %v", err)
	}
	pr, err = ro.Get(ctx, revision.Key{Package: "apps/app", Revision: revision.Placeholder})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Meta().Version != placeholderV {
		t.Fatalf("the placeholder after rolling forward is version %q, the read-only reader saw %q", pr.Meta().Version, placeholderV)
	}
}
