package apiserver

import (
	"context"
	"errors"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// collectOwned is the server's garbage collector for package revisions,
// run when a stored object (a PackageVariant, say) with UID uid has left
// namespace ns: as Kubernetes' garbage collector does with
// ownerReferences, a package revision that names uid among other owners
// loses that reference, and one that has no other owner is deleted, when
// its lifecycle allows (a Draft, a Proposed or a DeletionProposed
// revision; one with finalizers is marked for deletion). A Published
// revision is never deleted by it (Porch refuses that delete too, until
// the revision is proposed for deletion): it is orphaned, its reference to
// the gone owner removed.
// Failures are logged: the object is already gone.
func (s *Server) collectOwned(ctx context.Context, ns string, uid types.UID) {
	if uid == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, e := range s.entries(ns) {
		if e.openErr() != nil {
			continue
		}
		s.collectOwnedIn(ctx, ns, e, uid)
	}
}

// collectOwnedIn is collectOwned of the repository of e, which it holds
// open (in a scope of its own) until it is done.
func (s *Server) collectOwnedIn(ctx context.Context, ns string, e *repoEntry, uid types.UID) {
	ctx, release := withScope(ctx, s.pool)
	defer release()
	repo, err := s.acquire(ctx, e)
	if err != nil {
		s.log.Warn("garbage collection: repository did not open", "namespace", ns, "repository", e.name, "err", err)
		return
	}
	revs, err := repo.List(ctx, repository.ListOptions{})
	if err != nil {
		s.log.Warn("garbage collection: list failed", "namespace", ns, "repository", e.name, "err", err)
		if repository.Damage(err) == nil {
			return
		}
		// The revisions that could be read are collected; those
		// behind the damage keep the gone owner.
	}
	eng := s.engine(ns)
	for _, rev := range revs {
		m := rev.Meta()
		refs := porchapi.OwnerReferences(m.Metadata)
		rest := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return r.UID == uid })
		if len(rest) == len(refs) {
			continue
		}
		if err := s.collect(ctx, eng, e.name, m, rest); err != nil {
			s.log.Warn("garbage collection failed", "namespace", ns, "repository", e.name, "revision", m.Key.String(), "err", err)
			continue
		}
		s.log.Debug("garbage collection", "namespace", ns, "repository", e.name, "revision", m.Key.String(), "owners left", len(rest))
	}
}

// collect removes a gone owner from revision m, rest being its other
// owners (see collectOwned).
func (s *Server) collect(ctx context.Context, eng *engine.Engine, repo string, m revision.Meta, rest []metav1.OwnerReference) error {
	if len(rest) > 0 || m.Lifecycle == revision.LifecyclePublished || m.Key.IsPlaceholder() {
		_, err := eng.SetMetadata(ctx, repo, m.Key, porchapi.WithOwnerReferences(m.Metadata, rest), m.Version)
		if len(rest) == 0 && err == nil {
			s.log.Debug("garbage collection: a published revision is kept", "repository", repo, "revision", m.Key.String())
		}
		return err
	}
	if len(porchapi.Finalizers(m.Metadata)) > 0 {
		if porchapi.DeletionRequested(m.Metadata) {
			return nil
		}
		_, err := eng.SetMetadata(ctx, repo, m.Key, porchapi.WithDeletionTimestamp(m.Metadata, time.Now()), m.Version)
		return err
	}
	err := eng.Delete(ctx, repo, m.Key, engine.IfVersion(m.Version))
	if errors.Is(err, repository.ErrNotFound) {
		return nil
	}
	return err
}
