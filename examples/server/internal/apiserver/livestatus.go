package apiserver

import (
	"context"
	"errors"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/live"
	"github.com/configasdata/cad/repository"
)

// SubresourceLiveStatus is the packagerevisions subresource that returns
// the live status of a revision's resources in the server's target cluster
// (Options.LiveCluster). It is cad's, not Porch's.
const SubresourceLiveStatus = "livestatus"

// KindLiveStatus is the kind of the object the livestatus subresource
// returns.
const KindLiveStatus = "PackageRevisionLiveStatus"

// LiveStatus is the object of GET packagerevisions/NAME/livestatus: the
// revision's name and namespace, and the status of its resources in the
// target cluster as package live computes it.
type LiveStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Status            live.PackageStatus `json:"status"`
}

// liveImpl serves packagerevisions/NAME/livestatus (GET only).
type liveImpl struct{ s *Server }

// withLiveStatus adds the livestatus subresource to subs when the server
// has a target cluster.
func (s *Server) withLiveStatus(subs map[string]subresourceDef) map[string]subresourceDef {
	if s.opts.LiveCluster != nil {
		subs[SubresourceLiveStatus] = subresourceDef{connect: liveImpl{s}}
	}
	return subs
}

// getSub reads the revision through the engine and computes the status of
// its resources. The query parameter defaultNamespace sets where namespaced
// resources without a namespace are looked for (default "default").
func (l liveImpl) connect(ctx context.Context, r *http.Request, ns, name string) (any, error) {
	if wantsTable(r) {
		return nil, newStatus(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, "the livestatus subresource has no table form")
	}
	_, rev, err := l.s.getRevision(ctx, l.s.engine(ns), ns, name)
	if err != nil {
		return nil, err
	}
	files, err := rev.Files(ctx)
	if err != nil {
		return nil, err
	}
	objs, err := live.Objects(files)
	if err != nil {
		return nil, errBadRequest("package revision %s: %v", name, err)
	}
	opts := &live.Options{DefaultNamespace: r.URL.Query().Get("defaultNamespace")}
	ps, err := live.Compute(ctx, l.s.opts.LiveCluster, objs, opts)
	switch {
	case errors.Is(err, repository.ErrInvalidInput):
		return nil, errBadRequest("%v", err)
	case err != nil:
		return nil, newStatus(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "reading the target cluster: "+err.Error())
	}
	ps.Revision = name
	return &LiveStatus{
		TypeMeta:   metav1.TypeMeta{APIVersion: porchapi.SchemeGroupVersion.String(), Kind: KindLiveStatus},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Status:     *ps,
	}, nil
}
