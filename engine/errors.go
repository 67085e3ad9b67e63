package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// ErrNotReady is matched (with errors.Is) by the *GatesError that Approve
// returns when a readiness gate of the proposal is not satisfied.
var ErrNotReady = errors.New("readiness gates not satisfied")

// GatesError reports the readiness gates that keep a proposal from being
// approved: those whose condition is missing or not True. It matches
// [ErrNotReady].
type GatesError struct {
	Key   revision.Key // the proposal
	Gates []string     // the condition types of the unsatisfied gates, in gate order
}

// Error names the proposal and its unsatisfied gates.
func (e *GatesError) Error() string {
	return fmt.Sprintf("approve %s: readiness gates not satisfied (condition not True): %s",
		e.Key, strings.Join(e.Gates, ", "))
}

// Is reports whether target is [ErrNotReady].
func (e *GatesError) Is(target error) bool { return target == ErrNotReady }

// PlaceholderError reports a placeholder package revision (the package as
// it stands on the branch, revision -1) used where a numbered revision is
// required, such as the source of Copy. It matches
// repository.ErrInvalidInput.
type PlaceholderError struct {
	Op  string       // the operation refused: "copy", ...
	Key revision.Key // the placeholder revision
}

// Error names the operation and the placeholder revision.
func (e *PlaceholderError) Error() string {
	return fmt.Sprintf("%s: %s is a placeholder package revision; use a numbered published revision", e.Op, e.Key)
}

// Is reports whether target is repository.ErrInvalidInput.
func (e *PlaceholderError) Is(target error) bool { return target == repository.ErrInvalidInput }

// PackageExistsError reports a new package (Init, Clone) whose package
// path already exists in the repository: new revisions of an existing
// package come from Copy. It matches repository.ErrAlreadyExists.
type PackageExistsError struct {
	Op         string // the operation refused: "init", "clone"
	Repository string // the repository
	Package    string // the package path that exists
}

// Error names the operation, the package and the repository.
func (e *PackageExistsError) Error() string {
	return fmt.Sprintf("%s: package %q already exists in repository %q; make new revisions with copy", e.Op, e.Package, e.Repository)
}

// Is reports whether target is repository.ErrAlreadyExists.
func (e *PackageExistsError) Is(target error) bool { return target == repository.ErrAlreadyExists }

// ReferencedError reports a revision that cannot be deleted because other
// revisions name it as their upstream. It matches repository.ErrImmutable.
type ReferencedError struct {
	Key revision.Key   // the revision that was to be deleted
	By  []revision.Key // the revisions that name it as upstream
}

// Error names the revision and the revisions that name it as upstream.
func (e *ReferencedError) Error() string {
	names := make([]string, len(e.By))
	for i, k := range e.By {
		names[i] = k.String()
	}
	return fmt.Sprintf("delete %s: cannot delete package revision, it is referenced as upstream by: %s",
		e.Key, strings.Join(names, ", "))
}

// Is reports whether target is repository.ErrImmutable.
func (e *ReferencedError) Is(target error) bool { return target == repository.ErrImmutable }

// wrap names the engine operation and key in front of err, keeping err's
// sentinels and types reachable with errors.Is and errors.As.
func wrap(op string, key revision.Key, err error) error {
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// invalid returns an error for op on key matching repository.ErrInvalidInput.
func invalid(op string, key revision.Key, format string, args ...any) error {
	return repository.Errorf(op, key.Repository, key, repository.ErrInvalidInput, format, args...)
}
