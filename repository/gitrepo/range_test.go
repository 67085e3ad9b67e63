package gitrepo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// metaLines returns one line per revision (its key, lifecycle, version,
// publisher and creation), in List order.
func metaLines(revs []revision.PackageRevision) string {
	revs = slices.Clone(revs)
	repository.SortRevisions(revs)
	var b strings.Builder
	for _, pr := range revs {
		m := pr.Meta()
		fmt.Fprintf(&b, "%s %s %s %s %s %v %v\n", m.Key, m.Lifecycle, m.Version, m.PublishedBy, m.PublishedAt.UTC(), m.Creation, m.Metadata)
	}
	return b.String()
}

// Range over a repository of several batches yields List's revisions,
// those of the moment it started even when a write comes between two
// batches, and can be left and cancelled between batches.
func TestRangeManyBatches(t *testing.T) {
	ctx := context.Background()
	s := porchShape{Packages: 40, Revisions: 700, Dirs: 4, Drafts: 6, Proposals: 4}
	want := s.Revisions + s.Packages + s.Drafts + s.Proposals
	dir := copyDir(t, porchFixture(t, s))
	r := mustOpen(t, benchSpec(dir), nil)
	defer r.Close()
	listed, err := r.List(ctx, repository.ListOptions{})
	if err != nil || len(listed) != want {
		t.Fatalf("List: %d revisions, %v; want %d", len(listed), err, want)
	}
	var ranged []revision.PackageRevision
	wrote := false
	for pr, err := range r.Range(ctx, repository.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		ranged = append(ranged, pr)
		if len(ranged) == 10 {
			// Between batches: a new proposal is not in this loop.
			propose(t, r, s.pkg(3), "during-range")
			wrote = true
		}
	}
	if !wrote {
		t.Fatal("the loop ended before its tenth revision")
	}
	if got, wantLines := metaLines(ranged), metaLines(listed); got != wantLines {
		t.Fatalf("Range yielded:\n%s\nList returned:\n%s", got, wantLines)
	}
	// The proposal made during the loop is in the next one; a filtered
	// Range is the filtered List.
	for _, opts := range []repository.ListOptions{
		{},
		{PackagePrefix: "team-001"},
		{Lifecycles: []revision.Lifecycle{revision.LifecycleProposed}},
		{Revision: 3},
		{Package: s.pkg(3)},
	} {
		l, err := r.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		var g []revision.PackageRevision
		for pr, err := range r.Range(ctx, opts) {
			if err != nil {
				t.Fatal(err)
			}
			g = append(g, pr)
		}
		if metaLines(g) != metaLines(l) {
			t.Errorf("Range(%+v) yielded %d revisions, List %d", opts, len(g), len(l))
		}
	}

	// Cancelled in the loop body: the next batch does not start.
	c, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 0
	var last error
	for _, err := range r.Range(c, repository.ListOptions{}) {
		if err != nil {
			last = err
			break
		}
		n++
		cancel()
	}
	if !errors.Is(last, context.Canceled) || n >= want {
		t.Fatalf("Range cancelled after its first revision: %d yielded, then %v", n, last)
	}
	var re *repository.Error
	if !errors.As(last, &re) || re.Op != "list" {
		t.Fatalf("Range's error %v is not a *repository.Error of list", last)
	}

	// Closed in the loop body: ErrClosed, not a read of a closed pack.
	r2 := mustOpen(t, benchSpec(dir), nil)
	n, last = 0, nil
	for _, err := range r2.Range(ctx, repository.ListOptions{}) {
		if err != nil {
			last = err
			break
		}
		n++
		if n == 1 {
			r2.Close()
		}
	}
	if !errors.Is(last, repository.ErrClosed) || n >= want {
		t.Fatalf("Range closed after its first revision: %d yielded, then %v", n, last)
	}
}

// Two processes making the first list of one repository at the same time
// both add what they learnt to cad-paths; the file they leave is valid,
// in whole records, and lists what a list without it does.
func TestPathsListsAcrossProcesses(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("the list child reports from /proc/self/status")
	}
	s := porchShape{Packages: 30, Revisions: 400, Dirs: 3, Drafts: 3, Proposals: 2}
	want := s.Revisions + s.Packages + s.Drafts + s.Proposals
	dir := copyDir(t, porchFixture(t, s))
	paths := filepath.Join(dir, "cad-paths")
	for round := range 2 {
		os.Remove(paths)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), listChildEnv+"="+dir, listModeEnv+"=list")
				out, err := cmd.CombinedOutput()
				if err == nil && !strings.HasPrefix(string(out), strconv.Itoa(want)+" ") {
					err = fmt.Errorf("listed %q, want %d revisions", out, want)
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		// The drafts' and proposals' package trees at least (a list
		// leaves the tags' to the first read of their files).
		count, ok := gitrepo.PathsCount(dir)
		tail := gitrepo.PathsTail(dir)
		if !ok || tail%gitrepo.PathsRecordSize != 0 || int64(count)+tail/gitrepo.PathsRecordSize < int64(s.Drafts+s.Proposals) {
			t.Fatalf("round %d: cad-paths of %d sorted records and a tail of %d bytes (%v)", round, count, tail, ok)
		}
	}
	// And what is listed from it is what is listed without it.
	r := mustOpen(t, benchSpec(dir), nil)
	defer r.Close()
	got, err := r.List(context.Background(), repository.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(paths)
	r2 := mustOpen(t, benchSpec(dir), nil)
	defer r2.Close()
	fresh, err := r2.List(context.Background(), repository.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if metaLines(got) != metaLines(fresh) {
		t.Fatal("the list with the shared cad-paths differs from a list without it")
	}
}
