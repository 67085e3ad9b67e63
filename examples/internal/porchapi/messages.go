package porchapi

import (
	"errors"
	"fmt"

	"github.com/configasdata/cad/engine"
)

// Porch's messages for the errors its CLI prints to users (porchctl prints
// the Status message of a failed request after "Error: "), so that cad's
// servers and clients say what Porch says. The status codes are cad's own:
// Porch answers most of these with 500 Internal error, cad with the code
// the failure calls for (409, 422).

// OptimisticLockMessage is Kubernetes' and Porch's message for a write
// from a stale resourceVersion.
const OptimisticLockMessage = "the object has been modified; please apply your changes to the latest version and try again"

// ResourceVersionRequiredMessage is Porch's message for an update of a
// PackageRevisionResources (porchctl rpkg push) without
// metadata.resourceVersion.
const ResourceVersionRequiredMessage = "resourceVersion must be specified for an update"

// ConflictMessage returns Kubernetes' and Porch's message for a stale
// write of the object called name of resource (e.g.
// "packagerevisionresources.porch.kpt.dev"): "Operation cannot be
// fulfilled on <resource> "<name>": " and OptimisticLockMessage.
func ConflictMessage(resource, name string) string {
	return fmt.Sprintf("Operation cannot be fulfilled on %s %q: %s", resource, name, OptimisticLockMessage)
}

// PackageExistsMessage returns Porch's message for an init or clone of a
// package that exists: for a clone, "`clone` cannot create a new revision
// for package "<package>" that already exists in repo "<repository>"; make
// subsequent revisions using `copy`", else "package "<package>" already
// exists in repository "<repository>"".
func PackageExistsMessage(e *engine.PackageExistsError) string {
	if e.Op == "clone" {
		return fmt.Sprintf("`clone` cannot create a new revision for package %q that already exists in repo %q; make subsequent revisions using `copy`",
			e.Package, e.Repository)
	}
	return fmt.Sprintf("package %q already exists in repository %q", e.Package, e.Repository)
}

// RenderFailureMessage returns Porch's message for an update whose render
// failed with err: pushed reports whether the package was saved all the
// same (PushOnRenderFailureAnnotation). porchctl rpkg push prints it.
func RenderFailureMessage(err error, pushed bool) string {
	if pushed {
		return "error rendering package in kpt function pipeline. Package pushed to remote despite render failure. Details: " + err.Error()
	}
	return "error rendering package in kpt function pipeline. Package NOT pushed to remote. Fix locally (until 'kpt fn render' succeeds) and retry. Details: " + err.Error()
}

// Message returns Porch's message for err when Porch has its own for it
// (an *engine.PackageExistsError anywhere in err's chain), and whether it
// has.
func Message(err error) (string, bool) {
	var pe *engine.PackageExistsError
	if errors.As(err, &pe) {
		return PackageExistsMessage(pe), true
	}
	return "", false
}
