package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// e2eRace runs fn n times at once and returns the number of calls that
// succeeded and the errors of the others.
func e2eRace(n int, fn func(i int) error) (wins int, errs []error) {
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i := range n {
		wg.Go(func() {
			<-start
			err := fn(i)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			} else {
				errs = append(errs, err)
			}
		})
	}
	close(start)
	wg.Wait()
	return wins, errs
}

// e2eOneWins checks that exactly one of n identical requests won and every
// loser failed with one of the sentinels allowed.
func e2eOneWins(t *testing.T, what string, n int, fn func() error, allowed ...error) {
	t.Helper()
	wins, errs := e2eRace(n, func(int) error { return fn() })
	if wins != 1 {
		t.Fatalf("%s: %d of %d won, errors %v", what, wins, n, errs)
	}
	for _, err := range errs {
		if !slices.ContainsFunc(allowed, func(s error) bool { return errors.Is(err, s) }) {
			t.Fatalf("%s: a loser failed with %v, want one of %v", what, err, allowed)
		}
	}
}

// TestE2EConcurrency: Porch's concurrent_test.go. Of N identical
// requests exactly one wins and the others fail cleanly with a conflict
// (Porch answers "another request is already in progress"; cad needs no
// lock: the repository's compare-and-swap decides).
func TestE2EConcurrency(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eBlueprints, e2eTest)
		n := b.n
		v1, v2 := env.blueprints(e2eBlueprints)
		key := revision.Key{Package: "concurrent", Workspace: "workspace"}

		e2eOneWins(t, "init", n, func() error {
			_, err := env.e.Init(e2eCtx, e2eTest, key, engine.InitOptions{})
			return err
		}, repository.ErrAlreadyExists, repository.ErrConflict)
		if got := env.list(e2eTest, "concurrent"); !slices.Equal(got, []string{"concurrent@workspace/0:Draft"}) {
			t.Fatalf("after the init race: %v", got)
		}

		// TestConcurrentResourceUpdates: concurrent updates of one draft
		// never lose a write silently. Each either lands whole, or fails
		// with a conflict; identical content may also find its work done.
		base := e2eFiles(t, env.mustGet(e2eTest, key))
		wins, errs := e2eRace(n, func(i int) error {
			f := e2eWith(t, base, map[string]string{"cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  writer: w%d\n", i)})
			_, err := env.e.Update(e2eCtx, e2eTest, key, f, engine.UpdateOptions{})
			return err
		})
		if wins == 0 {
			t.Fatalf("update: no writer won: %v", errs)
		}
		for _, err := range errs {
			if !errors.Is(err, repository.ErrConflict) {
				t.Fatalf("update loser: %v", err)
			}
		}
		if cm := e2eFile(t, e2eFiles(t, env.mustGet(e2eTest, key)), "cm.yaml"); !strings.Contains(cm, "writer: w") {
			t.Fatalf("cm.yaml after the update race:\n%s", cm)
		}

		e2eOneWins(t, "propose", n, func() error {
			_, err := env.e.Propose(e2eCtx, e2eTest, key)
			return err
		}, repository.ErrInvalidTransition, repository.ErrConflict, repository.ErrNotFound)
		e2eOneWins(t, "approve", n, func() error {
			_, err := env.e.Approve(e2eCtx, e2eTest, key)
			return err
		}, repository.ErrInvalidTransition, repository.ErrConflict, repository.ErrNotFound)
		if got := env.list(e2eTest, "concurrent"); !slices.Equal(got, []string{"concurrent@main/-1:Published", "concurrent@workspace/1:Published"}) {
			t.Fatalf("after the approve race: %v", got)
		}
		if r := env.repo[e2eTest]; r.bare != "" {
			if tags := r.git(t, "tag", "--list", "concurrent/*"); tags != "concurrent/v1" {
				t.Fatalf("tags after the approve race: %q", tags)
			}
		}

		// TestConcurrentEdits.
		v1Key := revision.Key{Package: "concurrent", Revision: 1}
		e2eOneWins(t, "copy", n, func() error {
			_, err := env.e.Copy(e2eCtx, e2eTest, v1Key, "edit", engine.CopyOptions{})
			return err
		}, repository.ErrAlreadyExists, repository.ErrConflict)

		// TestConcurrentClones.
		src := v1.Meta().Key
		src.Repository = e2eBlueprints
		clone := revision.Key{Package: "cloned", Workspace: "workspace"}
		e2eOneWins(t, "clone", n, func() error {
			_, err := env.e.Clone(e2eCtx, e2eTest, clone, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
			return err
		}, repository.ErrAlreadyExists, repository.ErrConflict)
		cloned := env.publish(e2eTest, clone).Meta().Key
		e2eOneWins(t, "upgrade", n, func() error {
			_, err := env.e.Upgrade(e2eCtx, e2eTest, cloned, engine.Ref{Repository: e2eBlueprints, Key: v1.Meta().Key},
				engine.Ref{Repository: e2eBlueprints, Key: v2.Meta().Key}, "upgrade", engine.UpgradeOptions{})
			return err
		}, repository.ErrAlreadyExists, repository.ErrConflict)

		// TestConcurrentProposeDeletes and TestConcurrentDeletes.
		e2eOneWins(t, "propose delete", n, func() error {
			_, err := env.e.ProposeDelete(e2eCtx, e2eTest, v1Key)
			return err
		}, repository.ErrInvalidTransition, repository.ErrConflict)
		e2eOneWins(t, "delete", n, func() error {
			return env.e.Delete(e2eCtx, e2eTest, v1Key)
		}, repository.ErrNotFound, repository.ErrConflict)
		env.gone(e2eTest, v1Key)
		e2eOneWins(t, "delete draft", n, func() error {
			return env.e.Delete(e2eCtx, e2eTest, revision.Key{Package: "concurrent", Workspace: "edit"})
		}, repository.ErrNotFound, repository.ErrConflict)

		// Metadata updates against one version.
		if _, ok := env.repo[e2eTest].Repository.(repository.MetadataWriter); ok {
			cur := env.mustGet(e2eTest, cloned)
			wins, errs := e2eRace(n, func(i int) error {
				_, err := env.e.SetMetadata(e2eCtx, e2eTest, cloned, revision.Metadata{Labels: map[string]string{"writer": fmt.Sprint(i)}}, cur.Meta().Version)
				return err
			})
			if wins != 1 {
				t.Fatalf("set metadata: %d of %d won: %v", wins, n, errs)
			}
			for _, err := range errs {
				if !errors.Is(err, repository.ErrConflict) {
					t.Fatalf("set metadata loser: %v", err)
				}
			}
		}
		if r := env.repo[e2eTest]; r.bare != "" {
			r.git(t, "fsck", "--no-progress", "--no-dangling")
		}
	})
}

// TestE2EConcurrentInits: Inits of different packages, each with its own
// workspace, all succeed at once; Inits of one package with different
// workspaces leave exactly the drafts of those that succeeded.
func TestE2EConcurrentInits(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eTest)
		n := b.n
		wins, errs := e2eRace(n, func(i int) error {
			_, err := env.e.Init(e2eCtx, e2eTest, revision.Key{Package: fmt.Sprintf("pkg-%d", i), Workspace: fmt.Sprintf("ws-%d", i)}, engine.InitOptions{})
			return err
		})
		if wins != n {
			t.Fatalf("%d of %d inits of different packages succeeded: %v", wins, n, errs)
		}
		var want []string
		for i := range n {
			want = append(want, fmt.Sprintf("pkg-%d@ws-%d/0:Draft", i, i))
		}
		sort.Strings(want)
		if got := env.list(e2eTest, ""); !slices.Equal(got, want) {
			t.Fatalf("drafts %v, want %v", got, want)
		}
		if r := env.repo[e2eTest]; r.bare != "" {
			if got := strings.Count(r.git(t, "for-each-ref", "refs/heads/drafts/"), "\n") + 1; got != n {
				t.Fatalf("git sees %d draft branches, want %d", got, n)
			}
		}

		wins, errs = e2eRace(n, func(i int) error {
			_, err := env.e.Init(e2eCtx, e2eTest, revision.Key{Package: "shared", Workspace: fmt.Sprintf("ws-%d", i)}, engine.InitOptions{})
			return err
		})
		if wins < 1 {
			t.Fatalf("no init of the shared package succeeded: %v", errs)
		}
		for _, err := range errs {
			if !errors.Is(err, repository.ErrAlreadyExists) && !errors.Is(err, repository.ErrConflict) {
				t.Fatalf("init loser: %v", err)
			}
		}
		if got := env.list(e2eTest, "shared"); len(got) != wins {
			t.Fatalf("%d inits of the shared package succeeded, and it has %v", wins, got)
		}
	})
}

// TestE2ETwoEngines: two engines, each over its own handle on one
// repository (as two processes would be), share it: each sees the other's
// writes, neither hands out a revision number twice, and of two
// approvals of one proposal exactly one wins. A watch on one sees the
// other's approval.
func TestE2ETwoEngines(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		a := newE2E(t, b, e2eTest)
		o := a.reopened()
		key := revision.Key{Package: "shared", Workspace: "a"}
		a.init(e2eTest, key, nil)
		if _, err := o.e.Propose(e2eCtx, e2eTest, key); err != nil {
			t.Fatalf("the other engine proposes: %v", err)
		}
		v1, err := a.e.Approve(e2eCtx, e2eTest, key)
		if err != nil {
			t.Fatal(err)
		}
		if l, err := o.e.Latest(e2eCtx, e2eTest, "shared"); err != nil || l.Meta().Key.Revision != 1 || l.Meta().Version != v1.Meta().Version {
			t.Fatalf("the other engine's latest: %v", err)
		}

		// Proposals approved from both engines at once get distinct numbers.
		n := b.n
		var keys []revision.Key
		for i := range n {
			k := revision.Key{Package: "shared", Workspace: fmt.Sprintf("p%d", i)}
			if _, err := a.e.Copy(e2eCtx, e2eTest, v1.Meta().Key, k.Workspace, engine.CopyOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := a.e.Propose(e2eCtx, e2eTest, k); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		nums := make([]int, n)
		wins, errs := e2eRace(n, func(i int) error {
			e := a.e
			if i%2 == 1 {
				e = o.e
			}
			return engine.RetryOnConflict(e2eCtx, 100, func() error {
				pr, err := e.Approve(e2eCtx, e2eTest, keys[i])
				if err == nil {
					nums[i] = pr.Meta().Key.Revision
				}
				return err
			})
		})
		if wins != n {
			t.Fatalf("%d of %d approvals succeeded: %v", wins, n, errs)
		}
		slices.Sort(nums)
		for i, got := range nums {
			if got != i+2 {
				t.Fatalf("revision numbers %v, want 2..%d", nums, n+1)
			}
		}
		if r := a.repo[e2eTest]; r.bare != "" {
			if got := strings.Count(r.git(t, "tag", "--list", "shared/v*"), "\n") + 1; got != n+1 {
				t.Fatalf("git sees %d tags, want %d", got, n+1)
			}
		}

		// One proposal, approved by both: exactly one wins.
		last := revision.Key{Package: "shared", Workspace: "last"}
		if _, err := o.e.Copy(e2eCtx, e2eTest, v1.Meta().Key, last.Workspace, engine.CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		// A watch on the other engine sees the approval, whoever makes it.
		// It starts asynchronously, and reports changes from then on:
		// touch the draft until the watch has seen a change.
		ready := make(chan struct{}, 1)
		seen := make(chan revision.Meta, 1)
		stop := errors.New("seen")
		watched := make(chan error, 1)
		go func() {
			watched <- o.e.Watch(e2eCtx, []string{e2eTest}, repository.ListOptions{Package: "shared", Workspace: "last"}, func(ev repository.Event) error {
				switch m := ev.Revision.Meta(); m.Lifecycle {
				case revision.LifecycleDraft:
					select {
					case ready <- struct{}{}:
					default:
					}
				case revision.LifecyclePublished:
					seen <- m
					return stop
				}
				return nil
			})
		}()
	touch:
		for i := 0; ; i++ {
			if i == 200 {
				t.Fatal("the watch saw none of 200 changes of the draft")
			}
			if _, err := a.e.SetConditions(e2eCtx, e2eTest, last, revision.Condition{Type: "Probe", Status: revision.ConditionTrue, Reason: fmt.Sprint("touch", i)}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ready:
				break touch
			case <-time.After(3 * b.poll):
			}
		}
		if _, err := o.e.Propose(e2eCtx, e2eTest, last); err != nil {
			t.Fatal(err)
		}
		wins, errs = e2eRace(2, func(i int) error {
			e := a.e
			if i == 1 {
				e = o.e
			}
			_, err := e.Approve(e2eCtx, e2eTest, last)
			return err
		})
		if wins != 1 {
			t.Fatalf("%d of 2 approvals of one proposal won: %v", wins, errs)
		}
		for _, err := range errs {
			if !errors.Is(err, repository.ErrConflict) && !errors.Is(err, repository.ErrInvalidTransition) && !errors.Is(err, repository.ErrNotFound) {
				t.Fatalf("approve loser: %v", err)
			}
		}
		select {
		case m := <-seen:
			if m.Key.Revision != n+2 {
				t.Fatalf("watch saw %s", m.Key)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the watch did not see the approval")
		}
		if err := <-watched; !errors.Is(err, stop) {
			t.Fatalf("watch: %v", err)
		}
		if r := a.repo[e2eTest]; r.bare != "" {
			r.git(t, "fsck", "--no-progress", "--no-dangling")
		}
	})
}
