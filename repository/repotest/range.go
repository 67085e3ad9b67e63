package repotest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// collect runs seq to its end and returns what it yielded: the revisions
// and the errors, which must come last and once.
func collect(t *testing.T, seq func(func(revision.PackageRevision, error) bool)) ([]revision.PackageRevision, error) {
	t.Helper()
	var revs []revision.PackageRevision
	var failed error
	for pr, err := range seq {
		if failed != nil {
			t.Fatalf("Range yielded %v after its error %v", pr, failed)
		}
		if err != nil {
			if pr != nil {
				t.Errorf("Range yielded revision %s with error %v", pr.Meta().Key, err)
			}
			failed = err
			continue
		}
		if pr == nil {
			t.Fatal("Range yielded a nil revision without an error")
		}
		revs = append(revs, pr)
	}
	return revs, failed
}

// metas returns the Meta of each revision, in List order.
func metas(revs []revision.PackageRevision) []revision.Meta {
	revs = slices.Clone(revs)
	repository.SortRevisions(revs)
	out := make([]revision.Meta, len(revs))
	for i, pr := range revs {
		out[i] = pr.Meta()
	}
	return out
}

// testRange checks repository.Range (the backend's Range when it is a
// repository.RangeLister): the same revisions as List for every filter,
// a loop body that calls the repository, an early break, cancellation
// and Close.
func (s *suite) testRange(t *testing.T) {
	r := s.open(t)
	listFiltersRepo(t, r)
	cases := append(listFilterCases(), listCase{opts: repository.ListOptions{}}, listCase{opts: repository.ListOptions{Revision: revision.Placeholder}})
	for _, c := range cases {
		want := list(t, r, c.opts)
		got, err := collect(t, repository.Range(ctx(t), r, c.opts))
		if err != nil {
			t.Fatalf("Range(%+v): %v", c.opts, err)
		}
		gm, wm := metas(got), metas(want)
		if len(gm) != len(wm) {
			t.Errorf("Range(%+v) yielded %v, List returned %v", c.opts, keys(got, true), keys(want, true))
			continue
		}
		for i := range gm {
			if gm[i].Key != wm[i].Key || gm[i].Version != wm[i].Version || gm[i].Lifecycle != wm[i].Lifecycle || gm[i].Commit != wm[i].Commit {
				t.Errorf("Range(%+v) yielded %+v, List returned %+v", c.opts, gm[i], wm[i])
			}
		}
	}

	t.Run("BodyCallsRepository", func(t *testing.T) {
		// The loop body reads files and writes: Range holds no lock
		// while it runs.
		n := 0
		for pr, err := range repository.Range(ctx(t), r, repository.ListOptions{Package: "a"}) {
			if err != nil {
				t.Fatal(err)
			}
			if len(files(t, pr).Paths()) == 0 {
				t.Errorf("%s has no files", pr.Meta().Key)
			}
			if _, err := r.Get(ctx(t), pr.Meta().Key); err != nil {
				t.Errorf("Get(%s) in the loop: %v", pr.Meta().Key, err)
			}
			if n == 0 {
				createDraft(t, r, "in-loop", "ws", "x")
			}
			n++
		}
		if n < 2 {
			t.Fatalf("Range(package a) yielded %d revisions, want at least 2", n)
		}
		if err := r.Delete(ctx(t), key("in-loop", "ws"), repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Break", func(t *testing.T) {
		for _, err := range repository.Range(ctx(t), r, repository.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		// Nothing stays held: a write goes through, and a new Range lists
		// it.
		createDraft(t, r, "after-break", "ws", "x")
		got, err := collect(t, repository.Range(ctx(t), r, repository.ListOptions{Package: "after-break"}))
		if err != nil || len(keys(got, false)) != 1 {
			t.Fatalf("Range after a break: %v, %v", keys(got, false), err)
		}
		if err := r.Delete(ctx(t), key("after-break", "ws"), repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Cancelled", func(t *testing.T) {
		c, cancel := context.WithCancel(context.Background())
		cancel()
		got, err := collect(t, repository.Range(c, r, repository.ListOptions{}))
		if !errors.Is(err, context.Canceled) || len(got) != 0 {
			t.Fatalf("Range with a cancelled context: %d revisions, %v; want none and context.Canceled", len(got), err)
		}
		// Cancelled during the loop: the loop ends with ctx's error, or
		// without one when nothing was left to read.
		c, cancel = context.WithCancel(context.Background())
		defer cancel()
		n := 0
		var last error
		for _, err := range repository.Range(c, r, repository.ListOptions{}) {
			if err != nil {
				last = err
				break
			}
			n++
			cancel()
		}
		if last != nil && !errors.Is(last, context.Canceled) {
			t.Fatalf("Range cancelled during the loop: %v, want context.Canceled", last)
		}
	})

	t.Run("Closed", func(t *testing.T) {
		r2 := s.h.New(t)
		createDraft(t, r2, "p", "ws", "x")
		if err := r2.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := collect(t, repository.Range(ctx(t), r2, repository.ListOptions{}))
		if len(got) != 0 {
			t.Errorf("Range after Close yielded %v", keys(got, true))
		}
		wantErr(t, err, repository.ErrClosed, "Range after Close")
	})
}
