package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/variant"
)

// VariantSyncer makes PackageVariants and PackageVariantSets true: it
// creates, updates and releases the downstream package revisions they
// describe. The server calls it after every create, update and delete of
// such an object and every Options.VariantResync for all of them, one call
// at a time. A Sync returns the object's new status (nil keeps the stored
// one) even when it fails; an error is logged and the object synced again
// at the next resync.
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

// syncVariant syncs one object and stores the status it reports.
func (s *Server) syncVariant(ctx context.Context, w variantWork) {
	env := s.variantEnv(w.ns)
	v := s.variants
	var status json.RawMessage
	var err error
	switch {
	case w.deleted != nil && w.resource == resPackageVariants:
		var pv porchapi.PackageVariant
		if err = fromUnstructured(w.deleted, &pv); err == nil {
			err = v.DeletePackageVariant(ctx, env, &pv)
		}
	case w.deleted != nil:
		var pvs porchapi.PackageVariantSet
		if err = fromUnstructured(w.deleted, &pvs); err == nil {
			err = v.DeletePackageVariantSet(ctx, env, &pvs)
		}
	case w.resource == resPackageVariants:
		u, gerr := s.store.Get(w.resource, w.ns, w.name)
		if gerr != nil {
			return
		}
		var pv porchapi.PackageVariant
		if err = fromUnstructured(u, &pv); err == nil {
			status, err = v.SyncPackageVariant(ctx, env, &pv)
		}
	default:
		u, gerr := s.store.Get(w.resource, w.ns, w.name)
		if gerr != nil {
			return
		}
		var pvs porchapi.PackageVariantSet
		if err = fromUnstructured(u, &pvs); err == nil {
			status, err = v.SyncPackageVariantSet(ctx, env, &pvs)
		}
	}
	if err != nil {
		s.log.Warn("variant sync failed", "resource", w.resource, "namespace", w.ns, "name", w.name, "err", err)
	}
	if status != nil && w.deleted == nil {
		s.setStatus(w.resource, w.ns, w.name, status)
	}
}

// setStatus stores a new status on an object, retrying on conflicts with
// concurrent writers.
func (s *Server) setStatus(resource, ns, name string, status json.RawMessage) {
	var st any
	if err := json.Unmarshal(status, &st); err != nil {
		s.log.Warn("variant sync returned a status that is not JSON", "name", name, "err", err)
		return
	}
	for i := 0; i < 3; i++ {
		u, err := s.store.Get(resource, ns, name)
		if err != nil {
			return
		}
		u.Object["status"] = st
		if _, err := s.store.Update(resource, u); err == nil {
			return
		}
	}
}
