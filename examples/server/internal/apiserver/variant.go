package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/internal/variantfail"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/variant"
)

// VariantSyncer makes PackageVariants and PackageVariantSets true: it
// creates, updates and releases the downstream package revisions they
// describe. The server calls it after every create, update and delete of
// such an object and every Options.VariantResync for all of them, one call
// at a time. A Sync returns the object's new status (nil keeps the stored
// one) even when it fails. An error that retrying cannot fix (one matching
// revision.ErrLimit, variant.ErrCostLimit or revision.ErrInvalid, see
// package variantfail) holds the object: its status gets Stalled True and
// Ready False with reason LimitExceeded or InvalidSpec at its generation,
// and it is not synced again, at resyncs or after a restart, until its
// spec changes (or Options.VariantRetryHeld passes). Any other error is
// logged and the object synced again at the next resync.
//
// The default, VariantPackageSyncer, is cad's variant package.
type VariantSyncer interface {
	SyncPackageVariant(ctx context.Context, env *VariantEnv, pv *porchapi.PackageVariant) (status json.RawMessage, err error)
	SyncPackageVariantSet(ctx context.Context, env *VariantEnv, pvs *porchapi.PackageVariantSet) (status json.RawMessage, err error)
	// DeletePackageVariant and DeletePackageVariantSet are called after
	// the object was removed from the store, to apply its deletion policy.
	DeletePackageVariant(ctx context.Context, env *VariantEnv, pv *porchapi.PackageVariant) error
	DeletePackageVariantSet(ctx context.Context, env *VariantEnv, pvs *porchapi.PackageVariantSet) error
}

// VariantEnv is what a VariantSyncer works with in one namespace.
type VariantEnv struct {
	// Namespace is the namespace of the object being synced.
	Namespace string
	// Engine works on the repositories registered in Namespace, by
	// Repository object name.
	Engine *engine.Engine
	// Repositories are the Engine's repositories.
	Repositories engine.Repositories
	// RepositorySpecs are the specs of the Repository objects of
	// Namespace, with their labels.
	RepositorySpecs []repository.Spec
	// Objects reads the server's stored objects (Repository,
	// PackageVariant, PackageVariantSet, Namespace), for injection and
	// objectSelector targets.
	Objects variant.ObjectSource
	// Logger is the server's logger.
	Logger interface {
		Debug(msg string, args ...any)
	}
}

// VariantPackageSyncer is the VariantSyncer over cad's variant package:
// variant.Sync and variant.Remove for PackageVariants, variant.SyncSet and
// variant.RemoveSet for PackageVariantSets (whose generated variants are
// not stored as objects: the variant package finds them by the labels of
// their downstream revisions). After a sync it adds the users of the
// object's AuthorsAnnotation (who created or updated it) to the authors of
// every revision the sync created or changed, so that
// Options.RefuseSelfApproval holds for content written through a variant.
type VariantPackageSyncer struct{}

func (VariantPackageSyncer) options(env *VariantEnv) *variant.Options {
	return &variant.Options{Repositories: env.Repositories, Objects: env.Objects, RepositorySpecs: env.RepositorySpecs}
}

// decode converts a stored object into the variant package's type.
func decodeVariant(obj, into any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%w: %v", repository.ErrInvalidInput, err)
	}
	return nil
}

// SyncPackageVariant implements VariantSyncer with variant.Sync.
func (v VariantPackageSyncer) SyncPackageVariant(ctx context.Context, env *VariantEnv, pv *porchapi.PackageVariant) (json.RawMessage, error) {
	var in variant.PackageVariant
	if err := decodeVariant(pv, &in); err != nil {
		return nil, err
	}
	res, err := variant.Sync(ctx, env.Engine, &in, v.options(env))
	if res == nil {
		return nil, err
	}
	err = errors.Join(err, addVariantAuthors(ctx, env.Engine, pv.Annotations, res))
	status, merr := json.Marshal(res.Status())
	if merr != nil {
		return nil, merr
	}
	env.Logger.Debug("synced package variant", "result", res.String())
	return status, err
}

// SyncPackageVariantSet implements VariantSyncer with variant.SyncSet.
func (v VariantPackageSyncer) SyncPackageVariantSet(ctx context.Context, env *VariantEnv, pvs *porchapi.PackageVariantSet) (json.RawMessage, error) {
	var in variant.PackageVariantSet
	if err := decodeVariant(pvs, &in); err != nil {
		return nil, err
	}
	res, err := variant.SyncSet(ctx, env.Engine, &in, v.options(env))
	if res == nil {
		return nil, err
	}
	err = errors.Join(err, addVariantAuthors(ctx, env.Engine, pvs.Annotations, res.Results...))
	status, merr := json.Marshal(variant.PackageVariantSetStatus{Conditions: res.Conditions})
	if merr != nil {
		return nil, merr
	}
	return status, err
}

// DeletePackageVariant implements VariantSyncer with variant.Remove.
func (v VariantPackageSyncer) DeletePackageVariant(ctx context.Context, env *VariantEnv, pv *porchapi.PackageVariant) error {
	var in variant.PackageVariant
	if err := decodeVariant(pv, &in); err != nil {
		return err
	}
	_, err := variant.Remove(ctx, env.Engine, &in, v.options(env))
	return err
}

// DeletePackageVariantSet implements VariantSyncer with variant.RemoveSet.
func (v VariantPackageSyncer) DeletePackageVariantSet(ctx context.Context, env *VariantEnv, pvs *porchapi.PackageVariantSet) error {
	var in variant.PackageVariantSet
	if err := decodeVariant(pvs, &in); err != nil {
		return err
	}
	_, err := variant.RemoveSet(ctx, env.Engine, &in, v.options(env))
	return err
}

// storeObjects is a variant.ObjectSource over the server's store.
type storeObjects struct{ s *Server }

func (o storeObjects) ListObjects(_ context.Context, q variant.ObjectQuery) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, res := range []string{resRepositories, resPackageVariants, resPackageVariantSets, resNamespaces} {
		ns := q.Namespace
		if res == resNamespaces {
			ns = ""
		}
		objs, _ := o.s.store.List(res, ns)
		for _, u := range objs {
			if q.Matches(u) {
				out = append(out, u)
			}
		}
	}
	return out, nil
}

type variantWork struct {
	resource string
	ns, name string
	deleted  *unstructured.Unstructured // set when the object was deleted
}

// queueVariant asks the variant loop to sync an object.
func (s *Server) queueVariant(w variantWork) {
	if s.variants == nil {
		return
	}
	select {
	case s.variantQ <- w:
	default:
		s.log.Warn("variant sync queue full; the object is synced at the next resync", "resource", w.resource, "namespace", w.ns, "name", w.name)
	}
}

// variantLoop syncs queued objects and, every VariantResync, all of them.
func (s *Server) variantLoop(ctx context.Context) {
	t := time.NewTicker(s.opts.VariantResync)
	defer t.Stop()
	s.recoverInterruptedSync()
	s.resyncVariants(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case w := <-s.variantQ:
			s.syncVariant(ctx, w)
		case <-t.C:
			s.resyncVariants(ctx)
		}
	}
}

func (s *Server) resyncVariants(ctx context.Context) {
	for _, res := range []string{resPackageVariantSets, resPackageVariants} {
		objs, _ := s.store.List(res, "*")
		for _, u := range objs {
			if ctx.Err() != nil {
				return
			}
			s.syncVariant(ctx, variantWork{resource: res, ns: u.GetNamespace(), name: u.GetName()})
		}
	}
}

func (s *Server) variantEnv(ns string) *VariantEnv {
	var specs []repository.Spec
	for _, e := range s.entries(ns) {
		specs = append(specs, e.spec)
	}
	return &VariantEnv{
		Namespace:       ns,
		Engine:          s.engine(ns),
		Repositories:    nsRepos{s: s, ns: ns},
		RepositorySpecs: specs,
		Objects:         storeObjects{s: s},
		Logger:          s.log,
	}
}

// syncVariant syncs one object and stores the status it reports. An
// object held by an earlier sync (variantfail.Held at its generation) is
// skipped until its spec changes, or until Options.VariantRetryHeld has
// passed; a sync that fails for good (variantfail.Reason) holds it.
func (s *Server) syncVariant(ctx context.Context, w variantWork) {
	// The repositories the sync uses stay open until it ends.
	ctx, release := withScope(ctx, s.pool)
	defer release()
	env := s.variantEnv(w.ns)
	v := s.variants
	key := w.resource + "/" + w.ns + "/" + w.name
	var status json.RawMessage
	var err error
	var gen int64
	var stored map[string]any
	switch {
	case w.deleted != nil && w.resource == resPackageVariants:
		s.heldRetries.Forget(key)
		var pv porchapi.PackageVariant
		if err = fromUnstructured(w.deleted, &pv); err == nil {
			err = v.DeletePackageVariant(ctx, env, &pv)
		}
	case w.deleted != nil:
		s.heldRetries.Forget(key)
		var pvs porchapi.PackageVariantSet
		if err = fromUnstructured(w.deleted, &pvs); err == nil {
			err = v.DeletePackageVariantSet(ctx, env, &pvs)
		}
	default:
		u, gerr := s.store.Get(w.resource, w.ns, w.name)
		if gerr != nil {
			return
		}
		gen, stored = u.GetGeneration(), statusOf(u)
		if reason := variantfail.Held(variantfail.Conditions(stored), gen); reason != "" {
			if !s.heldRetries.Due(key, time.Now()) {
				s.log.Debug("variant held; not synced until its spec changes", "resource", w.resource, "namespace", w.ns, "name", w.name, "reason", reason)
				return
			}
		} else {
			s.heldRetries.Forget(key)
		}
		s.beginSync(w, gen)
		defer s.endSync(w)
		if w.resource == resPackageVariants {
			var pv porchapi.PackageVariant
			if err = fromUnstructured(u, &pv); err == nil {
				status, err = v.SyncPackageVariant(ctx, env, &pv)
			}
		} else {
			var pvs porchapi.PackageVariantSet
			if err = fromUnstructured(u, &pvs); err == nil {
				status, err = v.SyncPackageVariantSet(ctx, env, &pvs)
			}
		}
	}
	if w.deleted != nil {
		if err != nil {
			s.log.Warn("variant removal failed", "resource", w.resource, "namespace", w.ns, "name", w.name, "err", err)
		}
		return
	}
	reason := variantfail.Reason(err)
	switch {
	case reason != "":
		s.log.Warn("variant sync failed; held until its spec changes", "resource", w.resource, "namespace", w.ns, "name", w.name,
			"reason", reason, "err", variantfail.Truncate(err.Error(), variantfail.MaxMessageBytes))
		s.heldRetries.Tried(key, time.Now())
	case err != nil:
		s.log.Warn("variant sync failed", "resource", w.resource, "namespace", w.ns, "name", w.name, "err", err)
	}
	if status == nil && reason == "" {
		return
	}
	var from any = stored
	if status != nil {
		from = status
	}
	st, serr := variantfail.Status(from, gen, reason, err)
	if serr != nil {
		s.log.Warn("variant sync returned a status that is not JSON", "name", w.name, "err", serr)
		return
	}
	s.setStatus(w.resource, w.ns, w.name, withStatus(st))
}

// setStatus stores the status that status computes from a stored object,
// retrying on conflicts with concurrent writers.
func (s *Server) setStatus(resource, ns, name string, status func(u *unstructured.Unstructured) map[string]any) {
	for i := 0; i < 3; i++ {
		u, err := s.store.Get(resource, ns, name)
		if err != nil {
			return
		}
		u.Object["status"] = status(u)
		if _, err := s.store.Update(resource, u); err == nil {
			return
		}
	}
}

// withStatus is the status func of a status computed beforehand.
func withStatus(st map[string]any) func(*unstructured.Unstructured) map[string]any {
	return func(*unstructured.Unstructured) map[string]any { return st }
}

// syncJournalFile, in the data directory, names the object whose sync
// runs, while it runs. A start that finds it knows that the process ended
// during that sync: a stop through the context lets the sync return and
// removes the file first, so only a crash (a fatal error, such as an
// allocation the machine cannot give, or a kill) leaves it.
const syncJournalFile = "variant-sync.json"

// maxInterruptedSyncs is how many syncs of one generation of an object the
// process may not survive before the object is held with
// variantfail.ReasonSyncInterrupted: two, so that one kill of the
// process (a node drained mid-sync) holds nothing, and a stored object
// that crashes the server is synced twice, not at every start.
const maxInterruptedSyncs = 2

// syncJournal is the content of syncJournalFile.
type syncJournal struct {
	Resource   string `json:"resource"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
	// Interrupted counts the earlier syncs of this generation that the
	// process did not survive.
	Interrupted int `json:"interrupted"`
}

func (s *Server) journalPath() string { return filepath.Join(s.opts.DataDir, syncJournalFile) }

// recoverInterruptedSync reads the journal a crash left: the object it
// names is held when its sync was interrupted maxInterruptedSyncs times at
// the same generation, and otherwise its count is kept for its next sync.
func (s *Server) recoverInterruptedSync() {
	data, err := os.ReadFile(s.journalPath())
	if err != nil {
		return
	}
	os.Remove(s.journalPath())
	var j syncJournal
	if json.Unmarshal(data, &j) != nil || j.Name == "" {
		return
	}
	j.Interrupted++
	u, err := s.store.Get(j.Resource, j.Namespace, j.Name)
	if err != nil || u.GetGeneration() != j.Generation {
		return // gone or edited since: synced afresh
	}
	if j.Interrupted < maxInterruptedSyncs {
		s.log.Warn("the server stopped during a variant sync; it is tried again", "resource", j.Resource, "namespace", j.Namespace, "name", j.Name, "interrupted", j.Interrupted)
		s.interrupted = &j
		return
	}
	msg := fmt.Sprintf("the server stopped during %d syncs of generation %d of this object; it is not synced again until its spec changes", j.Interrupted, j.Generation)
	s.log.Warn("variant held: the server stopped during its syncs", "resource", j.Resource, "namespace", j.Namespace, "name", j.Name, "interrupted", j.Interrupted)
	st, err := variantfail.Status(statusOf(u), j.Generation, variantfail.ReasonSyncInterrupted, errors.New(msg))
	if err == nil {
		s.setStatus(j.Resource, j.Namespace, j.Name, withStatus(st))
	}
}

// beginSync records in the journal that the object of w, at generation
// gen, is being synced. It is best effort: a journal that cannot be
// written only loses the protection against a crash loop.
func (s *Server) beginSync(w variantWork, gen int64) {
	j := syncJournal{Resource: w.resource, Namespace: w.ns, Name: w.name, Generation: gen}
	if p := s.interrupted; p != nil && p.Resource == j.Resource && p.Namespace == j.Namespace && p.Name == j.Name && p.Generation == gen {
		j.Interrupted = p.Interrupted
	}
	data, _ := json.Marshal(j)
	if err := os.WriteFile(s.journalPath(), data, 0o600); err != nil {
		s.log.Warn("variant sync journal not written", "err", err)
	}
}

// endSync clears the journal after the sync of w returned.
func (s *Server) endSync(w variantWork) {
	if p := s.interrupted; p != nil && p.Resource == w.resource && p.Namespace == w.ns && p.Name == w.name {
		s.interrupted = nil
	}
	os.Remove(s.journalPath())
}
