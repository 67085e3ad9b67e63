package apiserver

import (
	"context"
	"errors"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/deps"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// SubresourceDependencies is the packagerevisions subresource that returns
// how a revision's declared requirements resolve (package deps). It is
// cad's, not Porch's.
const SubresourceDependencies = "dependencies"

// KindDependencies is the kind of the object the dependencies subresource
// returns.
const KindDependencies = "PackageRevisionDependencies"

// Dependencies is the object of GET packagerevisions/NAME/dependencies.
type Dependencies struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Status            DependenciesStatus `json:"status"`
}

// DependenciesStatus is the resolution: whether every requirement is
// satisfied and no cycle was found, each requirement with its provider
// (PackageRevision names), the cycles, and the text cadctl prints.
type DependenciesStatus struct {
	Satisfied bool                `json:"satisfied"`
	Bindings  []DependencyBinding `json:"bindings,omitempty"`
	Cycles    [][]string          `json:"cycles,omitempty"`
	Condition metav1.Condition    `json:"condition"`
	Summary   string              `json:"summary"`
}

// DependencyBinding is one requirement and how it resolved.
type DependencyBinding struct {
	Requirement string   `json:"requirement"`
	Status      string   `json:"status"`
	Explicit    bool     `json:"explicit,omitempty"`
	Provider    string   `json:"provider,omitempty"`
	Candidates  []string `json:"candidates,omitempty"`
	Reason      string   `json:"reason,omitempty"`
}

// depsImpl serves packagerevisions/NAME/dependencies (GET only).
type depsImpl struct{ s *Server }

// getSub resolves the revision's requirements with the engine against
// the latest published revisions of its repository and of those its
// package requirements name, or of the repositories the query parameter
// repo (repeatable) names.
func (d depsImpl) connect(ctx context.Context, r *http.Request, ns, name string) (any, error) {
	if wantsTable(r) {
		return nil, newStatus(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, "the dependencies subresource has no table form")
	}
	e, rev, err := d.s.getRevision(ctx, d.s.engine(ns), ns, name)
	if err != nil {
		return nil, err
	}
	k := rev.Meta().Key
	res, err := d.s.engine(ns).Dependencies(ctx, e.name, revision.Key{Package: k.Package, Workspace: k.Workspace},
		&engine.DependenciesOptions{Repositories: r.URL.Query()["repo"]})
	switch {
	case errors.Is(err, repository.ErrInvalidInput):
		return nil, errBadRequest("package revision %s: %v", name, err)
	case err != nil:
		return nil, err
	}
	st := DependenciesStatus{Satisfied: res.Satisfied(), Summary: res.String()}
	c := res.Condition()
	st.Condition = metav1.Condition{Type: c.Type, Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message}
	for _, b := range res.Bindings {
		db := DependencyBinding{Requirement: b.Requirement.String(), Status: string(b.Status), Explicit: b.Explicit, Reason: b.Reason}
		if b.Status != deps.Missing {
			db.Provider = porchapi.NameOf(b.Provider)
		}
		for _, c := range b.Candidates {
			db.Candidates = append(db.Candidates, porchapi.NameOf(c))
		}
		st.Bindings = append(st.Bindings, db)
	}
	for _, cy := range res.Cycles {
		var names []string
		for _, k := range cy {
			names = append(names, porchapi.NameOf(k))
		}
		st.Cycles = append(st.Cycles, names)
	}
	return &Dependencies{
		TypeMeta:   metav1.TypeMeta{APIVersion: porchapi.SchemeGroupVersion.String(), Kind: KindDependencies},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Status:     st,
	}, nil
}
