package main

import (
	"context"
	"maps"
	"path"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// observed is what a repository holds for one revision, in the terms of
// the custom resource.
type observed struct {
	meta     revision.Meta
	info     revision.Info
	gates    []porchv1alpha2.ReadinessGate
	metadata *porchv1alpha2.PackageMetadata
	status   porchv1alpha2.PackageRevisionStatus // without the controller's conditions
	rendered *metav1.Condition                   // from the Kptfile's render status, nil when it has none
}

// observe reads rev from repository r (described by spec).
func observe(ctx context.Context, r repository.Repository, spec repository.Spec, rev revision.PackageRevision) (*observed, error) {
	m := rev.Meta()
	info, err := engine.Readiness(ctx, rev)
	if err != nil {
		return nil, err
	}
	o := &observed{meta: m, info: info}
	for _, g := range info.ReadinessGates {
		o.gates = append(o.gates, porchv1alpha2.ReadinessGate{ConditionType: g.ConditionType})
	}
	st := porchv1alpha2.PackageRevisionStatus{
		Revision:    m.Key.Revision,
		PublishedBy: m.PublishedBy,
		Deployment:  spec.Deployment,
	}
	if !m.PublishedAt.IsZero() {
		t := metav1.NewTime(m.PublishedAt.UTC().Truncate(1e9))
		st.PublishedAt = &t
	}
	if l := info.UpstreamLock; l != nil && l.Git != nil {
		st.UpstreamLock = &porchv1alpha2.Locator{Type: porchv1alpha2.OriginType(l.Type),
			Git: &porchv1alpha2.GitLock{Repo: l.Git.Repo, Directory: l.Git.Directory, Ref: l.Git.Ref, Commit: l.Git.Commit}}
	}
	if typ, addr := repository.LocationOf(r); typ == repository.TypeGit && spec.Git != nil {
		dir := path.Join(spec.Git.Directory, m.Key.Package)
		st.SelfLock = &porchv1alpha2.Locator{Type: porchv1alpha2.OriginTypeGit,
			Git: &porchv1alpha2.GitLock{Repo: addr, Directory: dir, Ref: selfRef(m, dir, spec.Git.Branch), Commit: m.Commit}}
	}
	for _, c := range info.Conditions {
		st.PackageConditions = append(st.PackageConditions, porchv1alpha2.PackageCondition{
			Type: c.Type, Status: porchv1alpha2.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message})
	}
	o.status = st

	files, err := rev.Files(ctx)
	if err != nil {
		return nil, err
	}
	if data, ok := files.Get(revision.KptfileName); ok {
		if kf, err := revision.ParseKptfile(data); err == nil {
			if len(kf.Metadata.Labels) > 0 || len(kf.Metadata.Annotations) > 0 {
				o.metadata = &porchv1alpha2.PackageMetadata{Labels: maps.Clone(kf.Metadata.Labels), Annotations: maps.Clone(kf.Metadata.Annotations)}
			}
			if kf.Status != nil && kf.Status.RenderStatus != nil {
				rs := porchapi.RenderStatusFromKptfile(files)
				c := metav1.Condition{Type: porchv1alpha2.ConditionRendered, Status: metav1.ConditionTrue, Reason: porchv1alpha2.ReasonRendered}
				if rs.Err != "" || rs.Result.ExitCode != 0 {
					c.Status, c.Reason, c.Message = metav1.ConditionFalse, porchv1alpha2.ReasonRenderFailed, rs.Err
				}
				o.rendered = &c
			}
		}
	}
	return o, nil
}

// selfRef is Porch's short ref of a revision of the package in directory
// dir: drafts/<dir>/<ws>, proposed/<dir>/<ws>, <dir>/v<N>, or the branch for
// the placeholder revision.
func selfRef(m revision.Meta, dir, branch string) string {
	return porchapi.SelfRef(m, dir, branch)
}

// samePackageMetadata reports whether a and b hold the same labels and
// annotations; nil and empty are the same.
func samePackageMetadata(a, b *porchv1alpha2.PackageMetadata) bool {
	var x, y porchv1alpha2.PackageMetadata
	if a != nil {
		x = *a
	}
	if b != nil {
		y = *b
	}
	return maps.Equal(x.Labels, y.Labels) && maps.Equal(x.Annotations, y.Annotations)
}

// sameGates reports whether a and b name the same condition types.
func sameGates(a, b []porchv1alpha2.ReadinessGate) bool {
	key := func(gs []porchv1alpha2.ReadinessGate) []string {
		out := make([]string, 0, len(gs))
		for _, g := range gs {
			out = append(out, g.ConditionType)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(key(a), key(b))
}

// changedConditions returns the entries of want that differ from, or are
// missing in, have, as cad conditions.
func changedConditions(want []porchv1alpha2.PackageCondition, have []revision.Condition) []revision.Condition {
	var out []revision.Condition
	for _, w := range want {
		i := slices.IndexFunc(have, func(h revision.Condition) bool { return h.Type == w.Type })
		c := revision.Condition{Type: w.Type, Status: revision.ConditionStatus(w.Status), Reason: w.Reason, Message: w.Message}
		if i < 0 || have[i] != c {
			out = append(out, c)
		}
	}
	return out
}
