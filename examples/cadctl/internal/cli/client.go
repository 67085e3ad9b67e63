package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

// Client is the part of Porch's API the repo and rpkg commands use: the
// verbs of the REST resources repositories, packagerevisions (with its
// approval subresource) and packagerevisionresources, in one namespace.
// DirectClient implements it over the embedded library, ServerClient over
// HTTP. Errors are *StatusError where the API defines an outcome (not
// found, conflict, invalid, forbidden), so commands print the same
// messages in both modes.
//
// A Client is used by one command at a time.
type Client interface {
	// ListRepositories returns the registered repositories, sorted by name.
	ListRepositories(ctx context.Context) ([]porchapi.Repository, error)
	// CreateRepository registers a repository.
	CreateRepository(ctx context.Context, repo *porchapi.Repository) (*porchapi.Repository, error)
	// DeleteRepository unregisters a repository; its packages stay where
	// they are.
	DeleteRepository(ctx context.Context, name string) error

	// ListPackageRevisions returns the package revisions of every
	// registered repository, sorted by name.
	ListPackageRevisions(ctx context.Context, opts ListOptions) ([]porchapi.PackageRevision, error)
	// GetPackageRevision returns one package revision by name.
	GetPackageRevision(ctx context.Context, name string) (*porchapi.PackageRevision, error)
	// CreatePackageRevision creates a package revision from the one
	// creation task of pr.Spec.Tasks (init, clone, edit or upgrade).
	CreatePackageRevision(ctx context.Context, pr *porchapi.PackageRevision) (*porchapi.PackageRevision, error)
	// UpdatePackageRevision changes pr's lifecycle (propose, propose
	// deletion, reject a deletion proposal) and metadata.
	UpdatePackageRevision(ctx context.Context, pr *porchapi.PackageRevision) (*porchapi.PackageRevision, error)
	// UpdateApproval changes pr's lifecycle through the approval
	// subresource: approve (Published) or reject (Draft) a proposal.
	UpdateApproval(ctx context.Context, pr *porchapi.PackageRevision) (*porchapi.PackageRevision, error)
	// DeletePackageRevision deletes a package revision.
	DeletePackageRevision(ctx context.Context, name string) error

	// GetResources returns the files of a package revision.
	GetResources(ctx context.Context, name string) (*porchapi.PackageRevisionResources, error)
	// UpdateResources replaces the files of a draft, renders it and saves
	// it. The returned object's status holds the render's results; when
	// the render failed and the files were saved anyway, both it and an
	// error are returned.
	UpdateResources(ctx context.Context, prr *porchapi.PackageRevisionResources) (*porchapi.PackageRevisionResources, error)

	// Close releases what the client holds.
	Close() error
}

// ListOptions narrow ListPackageRevisions.
type ListOptions struct {
	// AllNamespaces lists every namespace instead of the client's.
	AllNamespaces bool
	// Status asks for the status and the Kptfile-derived parts of the
	// spec (upstream lock, conditions, readiness gates); without it a
	// direct client reads no package content. A server always returns
	// them.
	Status bool
}

// StatusError is a failed API call, in the terms of a Kubernetes Status:
// the HTTP code, a reason (metav1.StatusReasonNotFound, ...) and a message.
type StatusError struct {
	Code    int
	Reason  metav1.StatusReason
	Message string
}

// Error returns the message.
func (e *StatusError) Error() string { return e.Message }

func statusErrorf(code int, reason metav1.StatusReason, format string, args ...any) *StatusError {
	return &StatusError{Code: code, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func notFound(resource, name string) *StatusError {
	return statusErrorf(http.StatusNotFound, metav1.StatusReasonNotFound, "%s %q not found", resource, name)
}

func conflictOn(resource, name string) *StatusError {
	return statusErrorf(http.StatusConflict, metav1.StatusReasonConflict, "%s", porchapi.ConflictMessage(resource, name))
}

// hasReason reports whether err is a *StatusError with the given reason.
func hasReason(err error, reason metav1.StatusReason) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Reason == reason
}

// The fully qualified resource names used in messages, as kubectl prints
// them.
const (
	resPackageRevisions = porchapi.ResourcePackageRevisions + "." + porchapi.Group
	resResources        = porchapi.ResourcePackageRevisionResources + "." + porchapi.Group
	resRepositories     = porchapi.ResourceRepositories + "." + porchapi.ConfigGroup
)
