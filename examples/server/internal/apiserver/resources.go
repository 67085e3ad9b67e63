package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

var grPackageRevisionResources = schema.GroupResource{Group: porchapi.Group, Resource: porchapi.ResourcePackageRevisionResources}

// prrImpl serves packagerevisionresources: the files of a revision, with
// the same name as its PackageRevision.
type prrImpl struct{ s *Server }

func (p *prrImpl) object(ctx context.Context, ns string, rev revision.PackageRevision) (*porchapi.PackageRevisionResources, error) {
	files, err := rev.Files(ctx)
	if err != nil {
		return nil, err
	}
	o := porchapi.FromFiles(ns, rev.Meta(), files)
	o.Status.RenderStatus = porchapi.RenderStatusFromKptfile(files)
	return &o, nil
}

func (p *prrImpl) get(ctx context.Context, rq *request) (metav1.Object, error) {
	_, rev, err := p.s.getRevision(ctx, p.s.engineFor(ctx, rq), rq.ns, rq.name)
	if err != nil {
		return nil, renamed(err, grPackageRevisionResources, rq.name)
	}
	return p.object(ctx, rq.ns, rev)
}

// renamed reports a PackageRevision not-found as the resource's.
func renamed(err error, gr schema.GroupResource, name string) error {
	if apierrors.IsNotFound(err) {
		return errNotFound(gr, name)
	}
	return err
}

func (p *prrImpl) list(ctx context.Context, rq *request, lo *listOptions) ([]metav1.Object, string, error) {
	revs := p.s.listRevisions(ctx, rq, rq.ns, lo)
	objs := make([]*porchapi.PackageRevisionResources, len(revs))
	err := loadAll(ctx, revs, func(ctx context.Context, i int, lr listedRevision) error {
		o, err := p.object(ctx, lr.ns, lr.rev)
		objs[i] = o
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out := make([]metav1.Object, 0, len(objs))
	for _, o := range objs {
		// The revisions were selected on everything but their Kptfile's
		// labels, which are in the resources.
		if porchapi.MatchesPackageMetadata(lo.field, porchapi.ResourcesKptfileLabels(o)) {
			out = append(out, o)
		}
	}
	return out, "", nil
}

// update replaces the files of a Draft with spec.resources and renders them.
// The resourceVersion is required, as in Porch. More files than
// Options.MaxPackageFiles are refused (413) before anything is read.
func (p *prrImpl) update(ctx context.Context, rq *request, obj runtime.Object) (metav1.Object, error) {
	s := p.s
	in := obj.(*porchapi.PackageRevisionResources)
	if n := len(in.Spec.Resources); n > s.opts.MaxPackageFiles {
		return nil, newStatus(http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, fmt.Sprintf(
			"%s %q: spec.resources has %d files, more than this server's limit of %d files per package revision (--max-package-files)",
			grPackageRevisionResources, rq.name, n, s.opts.MaxPackageFiles))
	}
	inv := func(field, msg string) error {
		return errInvalid(grPackageRevisionResources, porchapi.KindPackageRevisionResources, rq.name, field, msg)
	}
	e, rev, err := s.getRevision(ctx, s.engineFor(ctx, rq), rq.ns, rq.name)
	if err != nil {
		return nil, renamed(err, grPackageRevisionResources, rq.name)
	}
	m := rev.Meta()
	if in.ResourceVersion == "" {
		return nil, errResourceVersionRequired(grPackageRevisionResources, porchapi.KindPackageRevisionResources, rq.name)
	}
	if in.ResourceVersion != m.Version {
		return nil, errConflict(grPackageRevisionResources, rq.name, staleMessage)
	}
	if m.Lifecycle != revision.LifecycleDraft {
		return nil, errForbidden(grPackageRevisionResources, rq.name,
			fmt.Sprintf("cannot update a package revision with lifecycle value %q; package must be Draft", m.Lifecycle))
	}
	files, err := porchapi.FilesOf(in)
	if err != nil {
		return nil, inv("spec.resources", err.Error())
	}
	if files.Len() == 0 {
		return nil, inv("spec.resources", "Required value: a package revision keeps at least one file")
	}
	saveOnFailure := m.Annotations[porchapi.PushOnRenderFailureAnnotation] == "true"
	if rev, err = s.recordAuthor(ctx, rq, e.name, rev); err != nil {
		return nil, err
	}
	updated, err := s.engineFor(ctx, rq).Update(ctx, e.name, m.Key, files, engine.UpdateOptions{SaveOnRenderFailure: saveOnFailure, Version: rev.Meta().Version})
	var re *pipeline.RenderError
	if err != nil && updated != nil && errors.As(err, &re) {
		e := toAPIError(grPackageRevisionResources, rq.name, err)
		if ae, ok := e.(*apiError); ok {
			ae.ErrStatus.Message = porchapi.RenderFailureMessage(err, true)
		}
		return nil, e
	}
	if err != nil {
		return nil, err
	}
	return p.object(ctx, rq.ns, updated)
}
