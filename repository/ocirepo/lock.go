package ocirepo

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// lease is a held package write lock.
type lease struct {
	r        *Repository
	pkg      string
	repo     name.Repository
	tag      string
	digest   v1.Hash
	raw      []byte
	acquired time.Time
	stripe   chan struct{}
	// tags is the package's tag list read after the lock was won: the
	// state every write under the lock starts from.
	tags []string
}

// emptyConfig is the config blob of lock manifests.
var emptyConfig = func() []byte {
	b, _ := json.Marshal(v1.ConfigFile{RootFS: v1.RootFS{Type: "layers", DiffIDs: []v1.Hash{}}})
	return b
}()

// ensureBlob uploads b to repo unless the current Pusher already did (it
// remembers what it uploaded, by repository and digest, and asks the
// registry with a HEAD before uploading). Every uploadsPerPusher calls the
// Pusher is replaced by a new one, so that what it remembers stays
// bounded.
func (r *Repository) ensureBlob(ctx context.Context, repo name.Repository, b []byte, mt types.MediaType) error {
	p := r.pusher()
	if err := retry(ctx, func() error { return p.Upload(ctx, repo, static.NewLayer(b, mt)) }); err != nil {
		return err
	}
	if r.uploads.Add(1)%r.uploadsPerPusher == 0 {
		if np, err := remote.NewPusher(r.pusherOpts...); err == nil {
			r.pushers.CompareAndSwap(p, np)
		}
	}
	return nil
}

func stripeOf(pkg string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(pkg))
	return int(h.Sum32() % 64)
}

// lock takes the write lock of pkg: first in this process, then in the
// registry by the claim protocol of DESIGN.md, "Concurrency". It fails
// with ErrConflict when another writer holds the lock past LockTimeout.
func (r *Repository) lock(ctx context.Context, op string, key revision.Key, repo name.Repository) (*lease, error) {
	stripe := r.locks[stripeOf(key.Package)]
	select {
	case stripe <- struct{}{}:
	case <-ctx.Done():
		return nil, r.errorf(op, key, ctx.Err(), "%w", ctx.Err())
	}
	l, err := r.claim(ctx, op, key, repo)
	if err != nil {
		<-stripe
		return nil, err
	}
	l.stripe = stripe
	return l, nil
}

func (r *Repository) claim(ctx context.Context, op string, key revision.Key, repo name.Repository) (*lease, error) {
	if err := r.ensureBlob(ctx, repo, emptyConfig, types.OCIConfigJSON); err != nil {
		return nil, r.wrap(op, key, err)
	}
	deadline := r.opts.Clock().Add(r.opts.LockTimeout)
	for attempt := 0; ; attempt++ {
		now := r.opts.Clock()
		tag := lockTagPrefix + nonce()
		m := v1.Manifest{
			SchemaVersion: 2,
			MediaType:     types.OCIManifestSchema1,
			Config:        descriptor(emptyConfig, types.OCIConfigJSON),
			Layers:        []v1.Descriptor{},
			Annotations: map[string]string{
				AnnotationTag:         tag,
				AnnotationPackage:     key.Package,
				AnnotationLockExpires: now.Add(r.opts.LockTTL).UTC().Format(time.RFC3339Nano),
				annotationCreated:     now.UTC().Format(time.RFC3339Nano),
			},
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, r.wrap(op, key, err)
		}
		l := &lease{r: r, pkg: key.Package, repo: repo, tag: tag, digest: descriptor(raw, types.OCIManifestSchema1).Digest, raw: raw, acquired: now}
		if err := retry(ctx, func() error { return r.pusher().Put(ctx, repo.Tag(tag), rawManifest(raw)) }); err != nil {
			return nil, r.wrap(op, key, err)
		}
		won, err := r.settle(ctx, l, deadline)
		if err != nil {
			l.release(ctx)
			if errors.Is(err, repository.ErrConflict) {
				return nil, r.errorf(op, key, repository.ErrConflict, "package %q is locked by another writer", key.Package)
			}
			return nil, r.wrap(op, key, err)
		}
		if won {
			r.logDebug("locked package", "package", key.Package, "lock", tag)
			return l, nil
		}
		l.release(ctx)
		if r.opts.Clock().After(deadline) {
			return nil, r.errorf(op, key, repository.ErrConflict, "package %q is locked by another writer", key.Package)
		}
		sleep := time.Duration(1+rand.IntN(10*min(attempt+1, 10))) * time.Millisecond
		select {
		case <-time.After(sleep):
		case <-ctx.Done():
			return nil, r.errorf(op, key, ctx.Err(), "%w", ctx.Err())
		}
	}
}

// settle lists the package's tags after l's lock tag was put and decides
// whether l holds the lock. It wins only on a listing that shows no lock
// but its own: a lock that is listed and gone by the time it is looked at
// belongs to a writer that finished while the list was read, so the list
// may predate that writer's tags and is read again (keeping l's lock tag,
// which every later claimer sees). A listing of several pages is not one
// snapshot; once such a listing shows no other lock, every writer that
// took the lock before l has released it, no new one can take it, and the
// tags are read once more, now without any writer running. It returns
// false, with l's lock still put, when another lock is live, and
// ErrConflict when locks keep appearing past deadline.
func (r *Repository) settle(ctx context.Context, l *lease, deadline time.Time) (bool, error) {
	for {
		tags, pages, err := r.listTagPages(ctx, l.repo)
		if err != nil {
			return false, err
		}
		var others []string
		for _, t := range tags {
			if kind, _, _ := parseTag(t); kind == tagLock && t != l.tag {
				others = append(others, t)
			}
		}
		if len(others) == 0 {
			if pages > 1 {
				if tags, err = r.listTags(ctx, l.repo); err != nil {
					return false, err
				}
			}
			l.tags = tags
			return true, nil
		}
		for _, t := range others {
			if r.lockLive(ctx, l.repo, t) {
				return false, nil
			}
		}
		if r.opts.Clock().After(deadline) {
			return false, repository.ErrConflict
		}
		r.logDebug("a writer released the lock while the tags were listed; listing again", "package", l.pkg)
	}
}

// listTagPages lists repo's tags like listTags and also says in how many
// pages the registry answered: one page is one snapshot, several are not.
func (r *Repository) listTagPages(ctx context.Context, repo name.Repository) ([]string, int, error) {
	var tags []string
	var pages int
	err := retry(ctx, func() error {
		tags, pages = nil, 0
		lister, err := r.puller.Lister(ctx, repo)
		if err != nil {
			return err
		}
		for lister.HasNext() {
			page, err := lister.Next(ctx)
			if err != nil {
				return err
			}
			tags = append(tags, page.Tags...)
			pages++
		}
		return nil
	})
	if err != nil {
		if isNotFound(err) {
			return nil, 0, nil
		}
		return nil, 0, err
	}
	return tags, pages, nil
}

// lockLive reports whether lock tag t in repo is held: it exists and its
// lease has not expired. An expired lock, or one whose manifest does not
// say when its lease ends, is deleted.
func (r *Repository) lockLive(ctx context.Context, repo name.Repository, t string) bool {
	ref := repo.Tag(t)
	head, err := r.puller.Head(ctx, ref)
	if err != nil {
		return !isNotFound(err) // unknown: assume held
	}
	if r.manifestBound(ref, head) != nil {
		// Not a lock cad writes, and never to be read: removed as an
		// unreadable lock is.
		r.logDebug("removing a lock over the manifest bound", "lock", t)
		_ = r.deleteRef(ctx, repo, t, head.Digest, nil)
		return false
	}
	// By tag, as before the HEAD: a lock's tag is never rewritten, and
	// one deleted meanwhile is not held.
	desc, err := r.puller.Get(ctx, ref)
	if err != nil {
		return !isNotFound(err) // unknown: assume held
	}
	var m v1.Manifest
	err = json.Unmarshal(desc.Manifest, &m)
	var exp time.Time
	if err == nil {
		exp, err = time.Parse(time.RFC3339Nano, m.Annotations[AnnotationLockExpires])
	}
	if err != nil || r.opts.Clock().After(exp) {
		r.logDebug("removing expired lock", "lock", t)
		_ = r.deleteRef(ctx, repo, t, desc.Digest, desc.Manifest)
		return false
	}
	return true
}

// check fails with ErrConflict when the lease is too old to be trusted:
// past half its TTL another writer may soon take the lock as abandoned.
func (l *lease) check(op string, key revision.Key) error {
	if l.r.opts.Clock().Sub(l.acquired) > l.r.opts.LockTTL/2 {
		return l.r.errorf(op, key, repository.ErrConflict, "the write lock of package %q was held too long", l.pkg)
	}
	return nil
}

// release deletes the lock claim from the registry.
func (l *lease) release(ctx context.Context) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := l.r.deleteRef(c, l.repo, l.tag, l.digest, l.raw); err != nil {
		l.r.logDebug("releasing lock failed", "lock", l.tag, "error", l.r.wrap("unlock", revision.Key{}, err))
	}
}

// unlock releases the lease and the in-process lock.
func (l *lease) unlock(ctx context.Context) {
	l.release(ctx)
	<-l.stripe
}

// deleteRef removes tag and its manifest digest (raw is the manifest).
// Registries differ: ggcr's deletes by tag, the distribution registry only
// by digest (which drops every tag on it), so both are tried; a missing
// one is fine. The distribution registry can fail a digest delete half
// way under concurrent deletes (500 after removing the manifest but not
// its tags, leaving a dangling tag); the manifest is then put back under
// the tag and the delete retried.
func (r *Repository) deleteRef(ctx context.Context, repo name.Repository, tag string, d v1.Hash, raw []byte) error {
	var err error
	for attempt := 0; attempt < 8; attempt++ {
		errTag := errTagDeleteUnsupported
		if !r.noTagDelete.Load() {
			errTag = r.deleter.Delete(ctx, repo.Tag(tag))
		}
		errDigest := r.deleter.Delete(ctx, repo.Digest(d.String()))
		if errTag != nil && errDigest == nil && !isNotFound(errTag) {
			r.noTagDelete.Store(true) // by digest is the only way here
		}
		switch {
		case errTag == nil || errDigest == nil:
			return nil
		case isNotFound(errDigest) && isNotFound(errTag):
			return nil
		case isNotFound(errDigest):
			return errTag
		case !isServerError(errDigest) || raw == nil:
			return errDigest
		}
		err = errDigest
		if perr := retry(ctx, func() error { return r.pusher().Put(ctx, repo.Tag(tag), rawManifest(raw)) }); perr != nil {
			return perr
		}
		select {
		case <-time.After(time.Duration(1+rand.IntN(5*(attempt+1))) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

var errTagDeleteUnsupported = errors.New("the registry deletes manifests by digest only")

func isServerError(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode >= 500
}

// retry runs fn until it succeeds, fails with an error that is not
// transient, or 6 attempts are made. Transient are 5xx answers and the
// DIGEST_INVALID and *_BLOB_UNKNOWN errors that the distribution
// registry's filesystem storage gives while another request rewrites the
// same link file (it does not write them atomically).
func retry(ctx context.Context, fn func() error) error {
	var err error
	for attempt := 0; attempt < 6; attempt++ {
		if err = fn(); err == nil || !transient(err) {
			return err
		}
		select {
		case <-time.After(time.Duration(2+rand.IntN(8*(attempt+1))) * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
	return err
}

func transient(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	if te.StatusCode >= 500 {
		return true
	}
	for _, d := range te.Errors {
		switch d.Code {
		case transport.DigestInvalidErrorCode, transport.ManifestBlobUnknownErrorCode, transport.BlobUnknownErrorCode:
			return true
		}
	}
	return false
}
