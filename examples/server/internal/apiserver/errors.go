package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/server/internal/store"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
)

// apiError is a Kubernetes Status error that keeps the error it reports:
// errors.Is and errors.As see the cause, and the generic server writes the
// Status.
type apiError struct {
	*apierrors.StatusError
	err error
}

func (e *apiError) Unwrap() error { return e.err }

// withCause returns se carrying err as its cause.
func withCause(se *apierrors.StatusError, err error) error { return &apiError{se, err} }

// newStatus builds a failure Status error.
func newStatus(code int32, reason metav1.StatusReason, msg string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
}

func errBadRequest(format string, args ...any) *apierrors.StatusError {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

func errNotFound(gr schema.GroupResource, name string) *apierrors.StatusError {
	return apierrors.NewNotFound(gr, name)
}

// errInvalid is a 422 naming the field; msg is the field's error as
// Kubernetes words it ("Invalid value: ...", "Required value").
func errInvalid(gr schema.GroupResource, kind, name, field, msg string) *apierrors.StatusError {
	e := newStatus(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, fmt.Sprintf("%s %q is invalid: %s: %s", kind, name, field, msg))
	e.ErrStatus.Details = &metav1.StatusDetails{Name: name, Group: gr.Group, Kind: kind,
		Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: field, Message: msg}}}
	return e
}

func errForbidden(gr schema.GroupResource, name, msg string) *apierrors.StatusError {
	return apierrors.NewForbidden(gr, name, errors.New(msg))
}

func errConflict(gr schema.GroupResource, name, msg string) *apierrors.StatusError {
	return apierrors.NewConflict(gr, name, errors.New(msg))
}

// staleMessage is Kubernetes' message for an update from a stale
// resourceVersion.
const staleMessage = porchapi.OptimisticLockMessage

// porchMessage is Porch's message for err, if it has one of its own (see
// porchapi.Message), else "".
func porchMessage(err error) string {
	m, _ := porchapi.Message(err)
	return m
}

// toAPIError maps an error of the library or the store to the Status
// error it is reported as, for the object name of resource gr; the
// result keeps err as its cause. Status errors pass through.
func toAPIError(gr schema.GroupResource, name string, err error) error {
	if st := apiStatus(err); st != nil {
		return st
	}
	msg := err.Error()
	var re *pipeline.RenderError
	var ge *engine.GatesError
	var pe *engine.PlaceholderError
	var refErr *engine.ReferencedError
	var e *apierrors.StatusError
	switch {
	case errors.As(err, &re):
		e = newStatus(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, porchapi.RenderFailureMessage(err, false))
		e.ErrStatus.Details = &metav1.StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource}
		for _, st := range re.Steps() {
			errs := st.Results.Errors()
			for _, r := range errs {
				e.ErrStatus.Details.Causes = append(e.ErrStatus.Details.Causes, metav1.StatusCause{
					Type: "FunctionResult", Message: st.ID() + ": " + r.String()})
			}
			if len(errs) == 0 && (st.ExitCode != 0 || st.ExecutionError != "") {
				// A failure without results (an exec function over its
				// output cap, a crash): kubectl prints the causes of an
				// Invalid status, so say why here.
				why := strings.TrimSpace(st.ExecutionError)
				if why == "" {
					why = strings.TrimSpace(st.Stderr)
				}
				if why == "" {
					why = fmt.Sprintf("exit code %d", st.ExitCode)
				}
				e.ErrStatus.Details.Causes = append(e.ErrStatus.Details.Causes, metav1.StatusCause{
					Type: "FunctionResult", Message: st.ID() + ": " + why})
			}
		}
	case errors.As(err, &ge):
		e = errInvalid(gr, "PackageRevision", name, "spec.readinessGates", msg)
	case errors.As(err, &refErr):
		e = errForbidden(gr, name, "cannot delete package revision, it is referenced as upstream by: "+keysString(refErr))
	case errors.As(err, &pe):
		e = errInvalid(gr, "PackageRevision", name, "spec.tasks", "placeholder package revision "+msg)
	case errors.Is(err, repository.ErrNotFound): // store.ErrNotFound too
		e = errNotFound(gr, name)
		// The store's *NotFoundError only repeats what errNotFound says
		// when it names the same object; a repository's says more.
		var snf *store.NotFoundError
		if !errors.As(err, &snf) || !strings.Contains(msg, name) {
			e.ErrStatus.Message += ": " + msg
		}
	case errors.Is(err, repository.ErrAlreadyExists), errors.Is(err, store.ErrAlreadyExists):
		e = apierrors.NewAlreadyExists(gr, name)
		if m := porchMessage(err); m != "" {
			e.ErrStatus.Message = m // Porch's words, which porchctl prints
		} else {
			e.ErrStatus.Message += ": " + msg
		}
	case errors.Is(err, repository.ErrConflict), errors.Is(err, store.ErrConflict):
		e = errConflict(gr, name, staleMessage)
	case errors.Is(err, repository.ErrImmutable):
		e = errForbidden(gr, name, msg)
	case errors.Is(err, repository.ErrInvalidTransition):
		e = errInvalid(gr, "PackageRevision", name, "spec.lifecycle", msg)
	case errors.Is(err, repository.ErrInvalidInput), errors.Is(err, store.ErrInvalid):
		e = newStatus(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg)
		e.ErrStatus.Details = &metav1.StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource}
	case errors.Is(err, store.ErrGone):
		e = apierrors.NewResourceExpired(msg)
	case errors.Is(err, repository.ErrNotSupported):
		e = newStatus(http.StatusNotImplemented, "NotImplemented", msg)
		e.ErrStatus.Details = &metav1.StatusDetails{Name: name, Group: gr.Group, Kind: gr.Resource}
	case errors.Is(err, repository.ErrUnavailable), errors.Is(err, repository.ErrClosed):
		e = newStatus(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, msg)
	case errors.Is(err, context.DeadlineExceeded):
		e = newStatus(http.StatusGatewayTimeout, metav1.StatusReasonTimeout, msg)
	default:
		e = newStatus(http.StatusInternalServerError, metav1.StatusReasonInternalError, msg)
	}
	return withCause(e, err)
}

// apiStatus returns the Status error err is or wraps, nil when none.
func apiStatus(err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		if e, ok := st.(error); ok {
			return e
		}
	}
	return nil
}

func keysString(e *engine.ReferencedError) string {
	var names []string
	for _, k := range e.By {
		names = append(names, porchapi.NameOf(k))
	}
	return strings.Join(names, ", ")
}
