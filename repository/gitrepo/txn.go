package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
	"github.com/configasdata/cad/revision"
)

var (
	errUnavailable  = repository.ErrUnavailable
	errRepoNotFound = repository.ErrNotFound
)

// maxAttempts bounds how often a write is planned again after losing a
// race on a ref it does not own (the branch, moved by another approval).
const maxAttempts = 8

// txn is the ref updates of one write, applied all or nothing.
type txn struct {
	updates []refstore.RefUpdate
	// keeps are refs the plan read to decide and leaves as they are. A
	// fetch can see a push of another writer half applied (a git server
	// moves the refs of one push one after another), so for a remote
	// the push carries each as a command from its value to the same
	// value, and lands only while they all still hold it. Locally the
	// write lock already makes them hold: they are not written.
	keeps []refstore.RefUpdate
}

// keep adds to t that ref name must still be at h (zero: absent) for t
// to apply; see txn.keeps.
func (t *txn) keep(name plumbing.ReferenceName, h plumbing.Hash) {
	t.keeps = append(t.keeps, refstore.RefUpdate{Name: name, Old: h, New: h})
}

func (t *txn) set(name plumbing.ReferenceName, old, new plumbing.Hash) {
	t.updates = append(t.updates, refstore.RefUpdate{Name: name, Old: old, New: new})
}

func (t *txn) del(name plumbing.ReferenceName, old plumbing.Hash) {
	t.updates = append(t.updates, refstore.RefUpdate{Name: name, Old: old})
}

// update plans a write with plan and applies it. Locally, plan and apply
// run under the exclusive lock (in-process and across processes) and the
// refs are swapped with go-git's check-and-set, rolled back when one of
// them fails. For a remote, the mirror is synced, plan runs on it and the
// updates are pushed with their expected old values in one atomic push;
// when the remote moved meanwhile, all of it runs again on the new state.
// Only the local steps of a remote write hold the store's lock
// (pushwrite.go).
//
// plan may return a nil txn to write nothing. It must check its own
// preconditions each time it runs.
func (r *Repository) update(ctx context.Context, plan func(v *view) (*txn, error)) error {
	if r.bt != nil {
		return r.updateBatch(ctx, plan)
	}
	for attempt := 1; ; attempt++ {
		var err error
		if r.remote != nil {
			err = r.updateRemote(ctx, plan)
		} else {
			err = r.st.write(ctx, func() error {
				v := r.newView()
				t, err := plan(v)
				if err != nil || t == nil || len(t.updates) == 0 {
					return err
				}
				defer r.written()
				if err := ctx.Err(); err != nil {
					return err
				}
				return applyRefs(v, t.updates, true)
			})
		}
		if errors.Is(err, refstore.ErrRetry) {
			if attempt < maxAttempts {
				r.log.Debug("retrying write", "attempt", attempt, "reason", err)
				// Back off a little, at random, so that racing writers spread out.
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Duration(rand.Int64N(int64(attempt) * int64(5*time.Millisecond)))):
				}
				continue
			}
			return fmt.Errorf("%w: %w", repository.ErrConflict, err)
		}
		if err == nil {
			r.autoMaintain(ctx) // maintenance.go
		}
		return err
	}
}

// applyRefs applies updates to local storage, all or nothing. With
// check, every ref must be at its old value (else it returns an error
// matching ErrConflictRef and changes nothing). On disk this is a
// crash-safe transaction (internal/refstore); in memory each ref is swapped with
// go-git's check-and-set and the swaps made are rolled back on a failure.
func applyRefs(v *view, updates []refstore.RefUpdate, check bool) error {
	if v.fr != nil {
		return v.fr.Transact(updates, check, v.written)
	}
	if check {
		for _, u := range updates {
			cur, _, err := v.ref(u.Name)
			if err != nil {
				return err
			}
			if cur != u.Old {
				return fmt.Errorf("%w: %s is %s, expected %s", refstore.ErrConflictRef, u.Name, refstore.HashOrNone(cur), refstore.HashOrNone(u.Old))
			}
		}
	}
	for i, u := range updates {
		if err := swapRef(v, u.Name, u.Old, u.New, check); err != nil {
			for j := i - 1; j >= 0; j-- {
				p := updates[j]
				_ = swapRef(v, p.Name, p.New, p.Old, true)
			}
			return err
		}
	}
	return nil
}

// swapRef moves ref name from old to new (zero: absent) in go-git
// storage (memory).
func swapRef(v *view, name plumbing.ReferenceName, old, new plumbing.Hash, check bool) error {
	if check {
		cur, _, err := v.ref(name)
		if err != nil {
			return err
		}
		if cur != old {
			return fmt.Errorf("%w: %s is %s, expected %s", refstore.ErrConflictRef, name, refstore.HashOrNone(cur), refstore.HashOrNone(old))
		}
	}
	if new.IsZero() {
		if err := v.s.RemoveReference(name); err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
			return err
		}
		return nil
	}
	var oldRef *plumbing.Reference
	if check && !old.IsZero() {
		oldRef = plumbing.NewHashReference(name, old)
	}
	if err := v.s.CheckAndSetReference(plumbing.NewHashReference(name, new), oldRef); err != nil {
		if errors.Is(err, storage.ErrReferenceHasChanged) {
			return fmt.Errorf("%w: %s: %w", refstore.ErrConflictRef, name, err)
		}
		return err
	}
	return nil
}

// errorf returns an *repository.Error for op on key.
func (r *Repository) errorf(op string, key revision.Key, sentinel error, format string, args ...any) error {
	return repository.Errorf(op, r.name, key, sentinel, format, args...)
}

// wrapErr returns err as an *repository.Error for op on key. An error
// that already is one keeps its key and cause and gets op.
func (r *Repository) wrapErr(op string, key revision.Key, err error) error {
	if err == nil {
		return nil
	}
	var re *repository.Error
	if errors.As(err, &re) {
		if re.Op == op {
			return re
		}
		return &repository.Error{Op: op, Repository: re.Repository, Key: re.Key, Err: re.Err}
	}
	return &repository.Error{Op: op, Repository: r.name, Key: key, Err: err}
}
