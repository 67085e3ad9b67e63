package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/server/internal/store"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
)

// apiError is an error with the Kubernetes Status it is reported as.
type apiError struct {
	status metav1.Status
	err    error
}

func (e *apiError) Error() string { return e.status.Message }
func (e *apiError) Unwrap() error { return e.err }

// newStatus builds a failure Status.
func newStatus(code int32, reason metav1.StatusReason, msg string) *apiError {
	return &apiError{status: metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     code,
		Reason:   reason,
		Message:  msg,
	}}
}

func errBadRequest(format string, args ...any) *apiError {
	return newStatus(http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf(format, args...))
}

func errNotFound(gr groupResource, name string) *apiError {
	e := newStatus(http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("%s %q not found", gr, name))
	e.status.Details = &metav1.StatusDetails{Name: name, Group: gr.group, Kind: gr.resource}
	return e
}

func errMethodNotAllowed(verb string, gr groupResource) *apiError {
	return newStatus(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
		fmt.Sprintf("%s is not supported on resources of kind %q", verb, gr))
}

// errInvalid is a 422 naming the field.
func errInvalid(gr groupResource, kind, name, field, msg string) *apiError {
	e := newStatus(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
		fmt.Sprintf("%s %q is invalid: %s: %s", kind, name, field, msg))
	e.status.Details = &metav1.StatusDetails{Name: name, Group: gr.group, Kind: kind,
		Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: field, Message: msg}}}
	return e
}

func errForbidden(gr groupResource, name, msg string) *apiError {
	e := newStatus(http.StatusForbidden, metav1.StatusReasonForbidden,
		fmt.Sprintf("%s %q is forbidden: %s", gr, name, msg))
	e.status.Details = &metav1.StatusDetails{Name: name, Group: gr.group, Kind: gr.resource}
	return e
}

func errConflict(gr groupResource, name, msg string) *apiError {
	e := newStatus(http.StatusConflict, metav1.StatusReasonConflict,
		fmt.Sprintf("Operation cannot be fulfilled on %s %q: %s", gr, name, msg))
	e.status.Details = &metav1.StatusDetails{Name: name, Group: gr.group, Kind: gr.resource}
	return e
}

func errAlreadyExists(gr groupResource, name string) *apiError {
	e := newStatus(http.StatusConflict, metav1.StatusReasonAlreadyExists, fmt.Sprintf("%s %q already exists", gr, name))
	e.status.Details = &metav1.StatusDetails{Name: name, Group: gr.group, Kind: gr.resource}
	return e
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

// toAPIError maps an error of the library or the store to its Status, for
// the object name of resource gr. Errors that are already *apiError pass
// through.
func toAPIError(gr groupResource, name string, err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	msg := err.Error()
	var re *pipeline.RenderError
	var ge *engine.GatesError
	var pe *engine.PlaceholderError
	var refErr *engine.ReferencedError
	switch {
	case errors.As(err, &re):
		e := newStatus(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, porchapi.RenderFailureMessage(err, false))
		e.status.Details = &metav1.StatusDetails{Name: name, Group: gr.group, Kind: gr.resource}
		for _, st := range re.Steps() {
			errs := st.Results.Errors()
			for _, r := range errs {
				e.status.Details.Causes = append(e.status.Details.Causes, metav1.StatusCause{
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
				e.status.Details.Causes = append(e.status.Details.Causes, metav1.StatusCause{
					Type: "FunctionResult", Message: st.ID() + ": " + why})
			}
		}
		e.err = err
		return e
	case errors.As(err, &ge):
		e := errInvalid(gr, "PackageRevision", name, "spec.readinessGates", msg)
		e.err = err
		return e
	case errors.As(err, &refErr):
		e := errForbidden(gr, name, "cannot delete package revision, it is referenced as upstream by: "+keysString(refErr))
		e.err = err
		return e
	case errors.As(err, &pe):
		e := errInvalid(gr, "PackageRevision", name, "spec.tasks", "placeholder package revision "+msg)
		e.err = err
		return e
	case errors.Is(err, repository.ErrNotFound): // store.ErrNotFound too
		e := errNotFound(gr, name)
		// The store's *NotFoundError only repeats what errNotFound says
		// when it names the same object; a repository's says more.
		var snf *store.NotFoundError
		if !errors.As(err, &snf) || !strings.Contains(msg, name) {
			e.status.Message += ": " + msg
		}
		e.err = err
		return e
	case errors.Is(err, repository.ErrAlreadyExists) && porchMessage(err) != "":
		// Porch's words, which porchctl prints.
		e := errAlreadyExists(gr, name)
		e.status.Message = porchMessage(err)
		e.err = err
		return e
	case errors.Is(err, repository.ErrAlreadyExists), errors.Is(err, store.ErrAlreadyExists):
		e := errAlreadyExists(gr, name)
		e.status.Message += ": " + msg
		e.err = err
		return e
	case errors.Is(err, repository.ErrConflict), errors.Is(err, store.ErrConflict):
		e := errConflict(gr, name, staleMessage)
		e.err = err
		return e
	case errors.Is(err, repository.ErrImmutable):
		e := errForbidden(gr, name, msg)
		e.err = err
		return e
	case errors.Is(err, repository.ErrInvalidTransition):
		e := errInvalid(gr, "PackageRevision", name, "spec.lifecycle", msg)
		e.err = err
		return e
	case errors.Is(err, repository.ErrInvalidInput), errors.Is(err, store.ErrInvalid):
		e := newStatus(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, msg)
		e.status.Details = &metav1.StatusDetails{Name: name, Group: gr.group, Kind: gr.resource}
		e.err = err
		return e
	case errors.Is(err, store.ErrGone):
		e := newStatus(http.StatusGone, metav1.StatusReasonExpired, msg)
		e.err = err
		return e
	case errors.Is(err, repository.ErrNotSupported):
		e := newStatus(http.StatusNotImplemented, "NotImplemented", msg)
		e.status.Details = &metav1.StatusDetails{Name: name, Group: gr.group, Kind: gr.resource}
		e.err = err
		return e
	case errors.Is(err, repository.ErrUnavailable), errors.Is(err, repository.ErrClosed):
		e := newStatus(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, msg)
		e.err = err
		return e
	case errors.Is(err, context.DeadlineExceeded):
		e := newStatus(http.StatusGatewayTimeout, metav1.StatusReasonTimeout, msg)
		e.err = err
		return e
	}
	e := newStatus(http.StatusInternalServerError, metav1.StatusReasonInternalError, msg)
	e.err = err
	return e
}

func keysString(e *engine.ReferencedError) string {
	var names []string
	for _, k := range e.By {
		names = append(names, porchapi.NameOf(k))
	}
	return strings.Join(names, ", ")
}
