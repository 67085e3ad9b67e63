package revision

import (
	"errors"
	"fmt"
)

// ErrInvalid is the sentinel of every error caused by bad input: an unsafe
// file path, a malformed key, an unparsable Kptfile. The repository package
// re-exports it as repository.ErrInvalidInput, so callers can test with
// errors.Is against either name.
var ErrInvalid = errors.New("invalid input")

// ErrLimit is the sentinel of every error returned because an input a
// user controls (a file, a request body, a stored object, a function
// config, a CEL or starlark program, a function's output) would make cad
// use more memory, CPU or time than a documented bound allows. The bound
// is enforced before the work that would exceed it. Such an error also
// matches [ErrInvalid]: the input, not the machinery, is at fault, and
// retrying it unchanged fails the same way. The bounds and their defaults
// are listed in LIMITS.md at the root of the repository.
var ErrLimit = errors.New("resource limit exceeded")

// LimitError reports an input refused because processing it would exceed
// a bound. It matches [ErrLimit] and [ErrInvalid] with errors.Is, and
// unwraps to Err when a cause is set.
type LimitError struct {
	What  string // the input, e.g. `functionConfig of "set-labels"` or `file "a.yaml"`
	Limit string // the bound, e.g. "fnruntime.Limits.MaxOutputBytes" or "DefaultCELOutputBytes"
	Max   int64  // its value
	Err   error  // the cause, or nil
}

// Error says which input crossed which bound.
func (e *LimitError) Error() string {
	msg := fmt.Sprintf("%s exceeds the limit %s (%d)", e.What, e.Limit, e.Max)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is [ErrLimit] or [ErrInvalid].
func (e *LimitError) Is(target error) bool { return target == ErrLimit || target == ErrInvalid }

// Unwrap returns the cause, or nil.
func (e *LimitError) Unwrap() error { return e.Err }

// ErrInvalidTransition is returned, wrapped in a *TransitionError, when a
// lifecycle change is not one of [Transitions].
var ErrInvalidTransition = errors.New("invalid lifecycle transition")

// PathError reports a file path that is not a safe package-relative path.
// It matches [ErrInvalid] with errors.Is.
type PathError struct {
	Path   string // the offending path, quoted in the message
	Reason string // why it was refused
}

// Error returns the message, naming the offending value.
func (e *PathError) Error() string {
	return fmt.Sprintf("invalid package file path %q: %s", e.Path, e.Reason)
}

// Is reports whether target is [ErrInvalid].
func (e *PathError) Is(target error) bool { return target == ErrInvalid }

// KeyError reports a malformed [Key] field. It matches [ErrInvalid] with
// errors.Is.
type KeyError struct {
	Field  string // "repository", "package", "workspace" or "revision"
	Value  string // the offending value
	Reason string
}

// Error returns the message, naming the offending value.
func (e *KeyError) Error() string {
	return fmt.Sprintf("invalid %s %q: %s", e.Field, e.Value, e.Reason)
}

// Is reports whether target is [ErrInvalid].
func (e *KeyError) Is(target error) bool { return target == ErrInvalid }

// TransitionError reports a lifecycle change that is not allowed. It matches
// [ErrInvalidTransition] with errors.Is.
type TransitionError struct {
	From, To Lifecycle
}

// Error returns the message, naming the offending value.
func (e *TransitionError) Error() string {
	return fmt.Sprintf("invalid lifecycle transition from %q to %q", e.From, e.To)
}

// Is reports whether target is [ErrInvalidTransition].
func (e *TransitionError) Is(target error) bool { return target == ErrInvalidTransition }
