package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
	"github.com/configasdata/cad/revision"
)

// A write batch of a remote repository. BeginBatch asks the remote
// whether it takes atomic pushes (the receive-pack capability "atomic":
// else ErrNotSupported) and brings the mirror up to date. The batch's
// writes are planned on the mirror as a local batch's are (batch.go),
// held in memory, and read through the batch without asking the remote.
// Commit pushes them all in one atomic push: one pack of the objects the
// batch's refs reach, and one command per ref the batch changed, from the
// value the batch found to its final one, plus a command keeping each
// other ref a write of the batch read at the value it read (what a
// write decided on). The remote applies all of them or none: a ref moved
// since (another writer) fails the whole push, which is ErrConflict, and
// a process killed before or during the push leaves the remote as it
// was (git's receive-pack updates the refs of an atomic push in one ref
// transaction, after the whole pack arrived). The mirror is not written:
// the next read fetches what the push brought.

// beginRemoteBatch is BeginBatch for a remote.
func (r *Repository) beginRemoteBatch(ctx context.Context) (repository.Batch, error) {
	const op = "begin batch"
	caps, err := r.remote.pushCapabilities(ctx)
	if err != nil {
		return nil, r.wrapErr(op, revision.Key{}, err)
	}
	if !caps.Supports(capability.Atomic) {
		return nil, r.errorf(op, revision.Key{}, repository.ErrNotSupported, "the remote %s does not take atomic pushes", r.remote.redactedURL)
	}
	if err := r.remote.syncForWrite(ctx, r.st, r.newView); err != nil {
		return nil, r.wrapErr(op, revision.Key{}, err)
	}
	return r.newBatch(), nil
}

// pushCapabilities returns what the remote's receive-pack advertises.
func (rm *remote) pushCapabilities(ctx context.Context) (*capability.List, error) {
	sess, err := rm.receiveSession(ctx, "push to "+rm.redactedURL)
	if err != nil {
		return nil, err
	}
	ar, err := sess.AdvertisedReferencesContext(ctx)
	_ = sess.Close()
	if cerr := ctx.Err(); err != nil && cerr != nil {
		return nil, cerr
	}
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, rm.classify("push to "+rm.redactedURL, err)
	}
	if ar == nil {
		return capability.NewList(), nil
	}
	return ar.Capabilities, nil
}

// commitRemote pushes the batch's updates to the remote in one atomic
// push (see above). The caller ended the batch.
func (b *batch) commitRemote(ctx context.Context, updates []refstore.RefUpdate) error {
	const op = "commit batch"
	r := b.r
	wctx, end, err := r.remote.beginWrite(ctx, r.st.gitDir)
	if err != nil {
		return r.wrapErr(op, revision.Key{}, err)
	}
	defer end()
	var pack []byte
	t := &txn{}
	err = r.st.read(wctx, func() error {
		v := r.newView()
		v.bt = b
		if err := b.squashMetadata(v, updates, b.reads); err != nil {
			return err
		}
		t.updates = updates
		changed := map[plumbing.ReferenceName]bool{}
		for _, u := range updates {
			changed[u.Name] = true
		}
		for _, name := range b.reads.refNames() {
			if h := b.reads.refs[name]; !changed[name] && !h.IsZero() {
				t.keep(name, h)
			}
		}
		objs, err := b.reachable(updates)
		if err != nil {
			return err
		}
		pack, err = encodeObjects(v, objs, b.storedObjects())
		return err
	})
	if err == nil {
		err = wctx.Err()
	}
	if err == nil {
		err = r.remote.push(wctx, pack, t)
		refstore.Fault("remote-batch-pushed")
		// Whatever the push did, the mirror learns it from the remote.
		r.remote.markChanged()
		r.written()
	}
	if errors.Is(err, refstore.ErrRetry) || errors.Is(err, refstore.ErrConflictRef) {
		err = fmt.Errorf("%w: %w", repository.ErrConflict, err)
	}
	if err != nil {
		return r.wrapErr(op, revision.Key{}, err)
	}
	r.log.Debug("pushed batch", "refs", len(updates))
	return nil
}

// encodeObjects returns a pack (whole objects, no deltas) of objs and of
// the stored objects the batch's writes used, read through v: a mirror
// may hold an object the remote lacks (one of a push that failed).
func encodeObjects(v *view, objs []gitobj.PackObject, stored []plumbing.Hash) ([]byte, error) {
	ms := memory.NewStorage()
	var hashes []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	add := func(h plumbing.Hash, t plumbing.ObjectType, data []byte) error {
		if seen[h] {
			return nil
		}
		seen[h] = true
		o := ms.NewEncodedObject()
		o.SetType(t)
		o.SetSize(int64(len(data)))
		w, err := o.Writer()
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		if _, err := ms.SetEncodedObject(o); err != nil {
			return err
		}
		hashes = append(hashes, h)
		return nil
	}
	for _, o := range objs {
		if err := add(o.Hash, o.Type, o.Data); err != nil {
			return nil, err
		}
	}
	for _, h := range stored {
		if seen[h] {
			continue
		}
		t, data, err := v.raw(plumbing.AnyObject, h)
		if err != nil {
			return nil, err
		}
		if err := add(h, t, bytes.Clone(data)); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if _, err := packfile.NewEncoder(&buf, ms, false).Encode(hashes, 0); err != nil {
		return nil, fmt.Errorf("encoding the pack to push: %w", err)
	}
	return buf.Bytes(), nil
}

// refNames returns the refs s read, sorted.
func (s *readSet) refNames() []plumbing.ReferenceName {
	return slices.Sorted(maps.Keys(s.refs))
}
