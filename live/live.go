package live

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Reader reads objects from a cluster. The caller implements it over its
// own client (examples/internal/livek8s does with client-go's dynamic
// client); the live package needs nothing else from the cluster.
//
// Get returns the object of kind gvk named name in namespace (empty for a
// cluster-scoped kind). For an object that does not exist it returns an
// error matching repository.ErrNotFound (a Kubernetes NotFound status error,
// as client-go returns it, is recognised too). For a kind the cluster does
// not serve it returns an error matching repository.ErrNotSupported (or
// apimachinery's NoKindMatchError); the object's status is then Unknown.
// Any other error stops the computation and is returned to the caller.
//
// A Reader must be safe for concurrent use: [Compute] calls it from
// several goroutines.
type Reader interface {
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
}

// Scoper is an optional interface of a [Reader] that knows which kinds are
// namespaced (a client with a REST mapper does). Namespaced reports
// whether objects of gvk live in a namespace, with the errors of Get for
// a kind the cluster does not serve. Without it, every kind is taken as
// namespaced except the cluster-scoped kinds of the built-in Kubernetes
// APIs (Namespace, ClusterRole, CustomResourceDefinition, ...).
type Scoper interface {
	Namespaced(ctx context.Context, gvk schema.GroupVersionKind) (bool, error)
}

// Status is the status of a resource in a cluster, or the summary of a
// package's, as kstatus computes it.
type Status string

// The statuses. All but NotFound are kstatus's results of computing an
// object's status; NotFound is an object that does not exist.
const (
	// Current: the object exists and its controller has reconciled its
	// latest spec (for a Deployment: observedGeneration caught up and the
	// wanted replicas updated, ready and available).
	Current Status = Status(kstatus.CurrentStatus)
	// InProgress: the object is being reconciled.
	InProgress Status = Status(kstatus.InProgressStatus)
	// Failed: reconciling the object failed (for example a Deployment
	// whose Progressing condition says ProgressDeadlineExceeded).
	Failed Status = Status(kstatus.FailedStatus)
	// Terminating: the object is being deleted.
	Terminating Status = Status(kstatus.TerminatingStatus)
	// NotFound: the object does not exist in the cluster.
	NotFound Status = Status(kstatus.NotFoundStatus)
	// Unknown: the status cannot be told, for example because the
	// cluster does not serve the object's kind, or the object's status
	// does not parse.
	Unknown Status = Status(kstatus.UnknownStatus)
)

// summaryOrder ranks the statuses for [Summarize], worst first.
var summaryOrder = []Status{Failed, NotFound, Unknown, Terminating, InProgress, Current}

// ResourceStatus is the status of one resource of a package in a cluster.
type ResourceStatus struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace is where the object was looked for: the resource's own
	// namespace, or Options.DefaultNamespace for a namespaced resource
	// without one; empty for a cluster-scoped kind.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// File is the package file the resource is in.
	File   string `json:"file,omitempty"`
	Status Status `json:"status"`
	// Message says why, in kstatus's words ("Deployment is available.
	// Replicas: 1", "Deployment not Available"), or what kept the status
	// from being known.
	Message string `json:"message,omitempty"`
}

// PackageStatus is the status of a package's resources in a cluster.
type PackageStatus struct {
	// Revision names the package revision, when the status was computed
	// for one ([RevisionStatus]).
	Revision string `json:"revision,omitempty"`
	// Summary is the package's status by the rule of [Summarize].
	Summary Status `json:"summary"`
	// Resources are the statuses of the package's resources, in the order
	// of [Objects].
	Resources []ResourceStatus `json:"resources"`
}

// Count returns how many resources have status s.
func (p *PackageStatus) Count(s Status) int {
	n := 0
	for _, r := range p.Resources {
		if r.Status == s {
			n++
		}
	}
	return n
}

// Summarize returns the status of a package whose resources have the given
// statuses. The rule, worst first: any Failed makes the package Failed;
// else any NotFound makes it NotFound (not, or no longer, fully
// deployed); else any Unknown makes it Unknown; else any Terminating makes
// it Terminating; else any InProgress makes it InProgress; else (every
// resource Current, or no resources at all) it is Current. A status other
// than these six counts as Unknown.
func Summarize(statuses []ResourceStatus) Status {
	worst := len(summaryOrder) - 1
	for _, r := range statuses {
		i := rank(r.Status)
		if i < worst {
			worst = i
		}
	}
	return summaryOrder[worst]
}

func rank(s Status) int {
	for i, o := range summaryOrder {
		if o == s {
			return i
		}
	}
	return rank(Unknown) // a status this package does not know counts as Unknown
}

// DefaultNamespace is the namespace of namespaced resources that have none,
// unless Options say otherwise.
const DefaultNamespace = "default"

// Options tune [Compute] and [RevisionStatus]. The zero value (or nil)
// means the defaults.
type Options struct {
	// DefaultNamespace is where a namespaced resource without a namespace
	// is looked for, as kubectl apply would create it; default
	// [DefaultNamespace].
	DefaultNamespace string
	// Concurrency is how many objects are read at once; default 4.
	Concurrency int
}

func (o *Options) withDefaults() (Options, error) {
	var out Options
	if o != nil {
		out = *o
	}
	if out.DefaultNamespace == "" {
		out.DefaultNamespace = DefaultNamespace
	} else if errs := validation.IsDNS1123Label(out.DefaultNamespace); len(errs) > 0 {
		return out, invalidf("default namespace %q: %s", out.DefaultNamespace, errs[0])
	}
	switch {
	case out.Concurrency < 0:
		return out, invalidf("concurrency %d is negative", out.Concurrency)
	case out.Concurrency == 0:
		out.Concurrency = 4
	}
	return out, nil
}

// Compute returns the status in the cluster r reads of each of objs and
// the package summary ([Summarize]).
//
// A namespaced object without a namespace is looked for in
// opts.DefaultNamespace. An object that does not exist is NotFound, one
// whose kind the cluster does not serve is Unknown with a message saying
// so; neither is an error. Compute returns an error matching
// repository.ErrInvalidInput for a nil Reader or bad Options, the error of
// a Reader that fails otherwise (naming the object), and ctx's error when
// ctx is done; then it returns no status.
func Compute(ctx context.Context, r Reader, objs []Object, opts *Options) (*PackageStatus, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, invalidf("no cluster Reader")
	}
	res := make([]ResourceStatus, len(objs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Concurrency)
	for i, obj := range objs {
		g.Go(func() error {
			rs, err := status(gctx, r, obj, o.DefaultNamespace)
			if err != nil {
				return err
			}
			res[i] = rs
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return &PackageStatus{Summary: Summarize(res), Resources: res}, nil
}

// status reads obj and computes its status.
func status(ctx context.Context, r Reader, obj Object, defaultNS string) (ResourceStatus, error) {
	rs := ResourceStatus{
		APIVersion: obj.GVK.GroupVersion().String(), Kind: obj.GVK.Kind,
		Namespace: obj.Namespace, Name: obj.Name, File: obj.File,
	}
	namespaced := builtinNamespaced(obj.GVK)
	if s, ok := r.(Scoper); ok {
		var err error
		if namespaced, err = s.Namespaced(ctx, obj.GVK); err != nil {
			return unreadable(rs, obj, err)
		}
	}
	switch {
	case !namespaced:
		rs.Namespace = ""
	case rs.Namespace == "":
		rs.Namespace = defaultNS
	}
	u, err := r.Get(ctx, obj.GVK, rs.Namespace, obj.Name)
	if err == nil && u == nil {
		err = repository.ErrNotFound
	}
	if err != nil {
		return unreadable(rs, obj, err)
	}
	res, err := kstatus.Compute(u)
	if err != nil {
		rs.Status, rs.Message = Unknown, fmt.Sprintf("computing status: %v", err)
		return rs, nil
	}
	rs.Status, rs.Message = Status(res.Status), res.Message
	return rs, nil
}

// unreadable turns a Reader's error into a status, or returns it.
func unreadable(rs ResourceStatus, obj Object, err error) (ResourceStatus, error) {
	switch {
	case errors.Is(err, repository.ErrNotFound) || apierrors.IsNotFound(err):
		rs.Status, rs.Message = NotFound, "not found in the cluster"
		return rs, nil
	case errors.Is(err, repository.ErrNotSupported) || meta.IsNoMatchError(err):
		rs.Status, rs.Message = Unknown, fmt.Sprintf("the cluster does not serve %s: %v", obj.GVK.GroupVersion().WithKind(obj.GVK.Kind), err)
		return rs, nil
	}
	obj.Namespace = rs.Namespace
	return rs, fmt.Errorf("live status of %s: %w", obj, err)
}

// Revisions reads package revisions; *engine.Engine implements it (its
// Get method).
type Revisions interface {
	Get(ctx context.Context, repo string, key revision.Key) (revision.PackageRevision, error)
}

// RevisionObjects returns the resources ([Objects]) of the package
// revision key selects in repo, read through revs (an *engine.Engine). It
// returns revs's errors (repository.ErrNotFound for a missing revision,
// repository.ErrInvalidInput for a key that selects nothing in particular)
// and those of Objects.
func RevisionObjects(ctx context.Context, revs Revisions, repo string, key revision.Key) ([]Object, error) {
	if revs == nil {
		return nil, invalidf("no Revisions to read %s from", key)
	}
	pr, err := revs.Get(ctx, repo, key)
	if err != nil {
		return nil, err
	}
	files, err := pr.Files(ctx)
	if err != nil {
		return nil, err
	}
	objs, err := Objects(files)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pr.Meta().Key, err)
	}
	return objs, nil
}

// RevisionStatus returns the live status, in the cluster r reads, of the
// resources of the package revision key selects in repo, read through
// revs (an *engine.Engine): [RevisionObjects], then [Compute]. It is the
// engine-level entry point for a revision deployed to a cluster; any
// lifecycle is accepted, though usually it is a Published one.
//
// Errors: those of RevisionObjects (repository.ErrNotFound for a missing
// revision, repository.ErrInvalidInput for a bad key or a package whose
// files are not Kubernetes resources) and of Compute.
func RevisionStatus(ctx context.Context, revs Revisions, repo string, key revision.Key, r Reader, opts *Options) (*PackageStatus, error) {
	if _, err := opts.withDefaults(); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, invalidf("no cluster Reader")
	}
	objs, err := RevisionObjects(ctx, revs, repo, key)
	if err != nil {
		return nil, err
	}
	ps, err := Compute(ctx, r, objs, opts)
	if err != nil {
		return nil, err
	}
	ps.Revision = key.String()
	return ps, nil
}

// WatchOptions tune [Watch]. The zero value (or nil) means the defaults.
type WatchOptions struct {
	Options
	// Interval is the time between two polls; default 2s.
	Interval time.Duration
}

// Watch polls the status of objs in the cluster r reads every
// opts.Interval and calls report with the first status and then with each
// status that differs from the last one reported (in the summary or in any
// resource's status or message). It returns nil once it has reported a
// Current summary, ctx's error when ctx is done first, report's error if
// it returns one, and Compute's errors. It is [Poll] over [Compute].
func Watch(ctx context.Context, r Reader, objs []Object, opts *WatchOptions, report func(*PackageStatus) error) error {
	var o WatchOptions
	if opts != nil {
		o = *opts
	}
	if _, err := o.Options.withDefaults(); err != nil {
		return err
	}
	if r == nil {
		return invalidf("no cluster Reader")
	}
	return Poll(ctx, o.Interval, func(ctx context.Context) (*PackageStatus, error) {
		return Compute(ctx, r, objs, &o.Options)
	}, report)
}

// Poll calls status every interval (default 2s when zero) and report with
// the first status and each one that differs from the last reported, until
// a reported status is Current (Poll returns nil), ctx is done (ctx's
// error), or status or report fail (their error). It is [Watch] for
// statuses computed elsewhere, such as by a server. A negative interval or
// a nil function is an error matching repository.ErrInvalidInput.
func Poll(ctx context.Context, interval time.Duration, status func(context.Context) (*PackageStatus, error), report func(*PackageStatus) error) error {
	switch {
	case interval < 0:
		return invalidf("poll interval %s is negative", interval)
	case interval == 0:
		interval = 2 * time.Second
	}
	if status == nil || report == nil {
		return invalidf("poll without a status or report function")
	}
	var last *PackageStatus
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ps, err := status(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if last == nil || !equal(last, ps) {
			if err := report(ps); err != nil {
				return err
			}
			last = ps
		}
		if ps.Summary == Current {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func equal(a, b *PackageStatus) bool {
	if a.Summary != b.Summary || len(a.Resources) != len(b.Resources) {
		return false
	}
	for i := range a.Resources {
		if a.Resources[i] != b.Resources[i] {
			return false
		}
	}
	return true
}
