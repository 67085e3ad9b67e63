package repository

import (
	"errors"
	"fmt"
	"strings"

	"github.com/configasdata/cad/revision"
)

// Sentinel errors. Backends wrap exactly one of them in every error they
// return, so callers test with errors.Is.
var (
	// ErrNotFound: the revision, package or repository does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a draft with that workspace, or a revision with
	// that number, already exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: the write lost an optimistic-concurrency race; the
	// revision changed since it was read. Re-read and retry.
	ErrConflict = errors.New("conflict")
	// ErrInvalidInput: bad input, such as an unsafe path or a malformed
	// key. It is the same value as revision.ErrInvalid.
	ErrInvalidInput = revision.ErrInvalid
	// ErrInvalidTransition: a lifecycle change that is not allowed. It is
	// the same value as revision.ErrInvalidTransition.
	ErrInvalidTransition = revision.ErrInvalidTransition
	// ErrImmutable: the revision cannot be changed in its lifecycle state
	// (content of a proposed or published revision, deletion of a
	// published revision not proposed for deletion).
	ErrImmutable = errors.New("immutable")
	// ErrNotSupported: the backend does not implement the capability, or
	// the store is in a format it does not implement (in git, a
	// repository format version or extension, such as SHA-256 objects;
	// in a package, a symbolic link): it refuses it rather than write
	// what the store's other readers would find damaged.
	ErrNotSupported = errors.New("not supported")
	// ErrClosed: the repository was closed.
	ErrClosed = errors.New("repository closed")
	// ErrBatchDone: the write batch (Batch) was committed or discarded;
	// nothing more can be read or written through it.
	ErrBatchDone = errors.New("batch already committed or discarded")
	// ErrUnavailable: the store could not be reached or refused the
	// credentials.
	ErrUnavailable = errors.New("unavailable")
	// ErrCorrupt: what the store holds for the revision is damaged (in
	// git, a ref file that is empty or not a hash, or a ref naming an
	// object that does not exist). The rest of the repository stays
	// readable; a backend never repairs such data by guessing.
	ErrCorrupt = errors.New("damaged data in the repository")
	// ErrDamaged: List (or Range) left out revisions it could not read
	// and returned the others; see [DamageError]. It is never returned
	// with nothing read for a reason other than damage.
	ErrDamaged = errors.New("revisions left out as damaged")
)

// DamageError is what List returns, inside its *Error and beside the
// revisions it could read, when it left out what it could not read: a git
// ref that is empty, not an object id or names a missing object, an OCI
// tag over a bound. The revisions returned are sound, but they are not
// the whole repository: a caller must not treat a revision missing from
// them as deleted, nor create one anew because it seems absent.
//
// It matches ErrDamaged, and each of Damaged through errors.Is and
// errors.As (in git a *gitrepo.DamagedRefError naming the ref, matching
// ErrCorrupt).
type DamageError struct {
	// Damaged holds one error per thing left out, each naming it.
	Damaged []error
}

// Error names every damaged thing left out.
func (e *DamageError) Error() string {
	var b strings.Builder
	b.WriteString(ErrDamaged.Error())
	b.WriteString(": ")
	for i, d := range e.Damaged {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(d.Error())
	}
	return b.String()
}

// Unwrap returns ErrDamaged and the errors of Damaged.
func (e *DamageError) Unwrap() []error { return append([]error{ErrDamaged}, e.Damaged...) }

// Damage returns the *DamageError in err, or nil when err holds none.
// List's revisions are usable when err is nil or Damage(err) is not nil.
func Damage(err error) *DamageError {
	var d *DamageError
	if errors.As(err, &d) {
		return d
	}
	return nil
}

// NewDamageError returns a *DamageError holding damaged, each error with
// a message of its own once, or nil when damaged is empty. It is a
// convenience for backend authors.
func NewDamageError(damaged []error) error {
	seen := map[string]bool{}
	var out []error
	for _, d := range damaged {
		if d == nil || seen[d.Error()] {
			continue
		}
		seen[d.Error()] = true
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil
	}
	return &DamageError{Damaged: out}
}

// Error is the error every backend returns: what was attempted, on which
// repository and revision, and why. Err wraps a sentinel and, where there
// is one, the backend's native cause.
type Error struct {
	Op         string       // the operation: "list", "get", "create draft", "commit", ...
	Repository string       // the repository name
	Key        revision.Key // the revision concerned, zero for whole-repository operations
	Err        error
}

// Error returns the message, naming the offending value.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Repository != "" {
		fmt.Fprintf(&b, " in repository %q", e.Repository)
	}
	if e.Key != (revision.Key{}) {
		k := e.Key
		k.Repository = ""
		fmt.Fprintf(&b, " %s", k)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error for op on repo and key whose Err wraps sentinel
// and the error formatted from format and args (which may itself wrap a
// native cause with %w). It is a convenience for backend authors.
func Errorf(op, repo string, key revision.Key, sentinel error, format string, args ...any) error {
	cause := fmt.Errorf(format, args...)
	return &Error{Op: op, Repository: repo, Key: key, Err: wrapped{sentinel: sentinel, cause: cause}}
}

// wrapped joins a sentinel and a cause with the cause's message only,
// avoiding messages like "conflict: conflict: ...".
type wrapped struct {
	sentinel, cause error
}

func (w wrapped) Error() string {
	msg := w.cause.Error()
	if w.sentinel != nil && !strings.Contains(msg, w.sentinel.Error()) {
		return w.sentinel.Error() + ": " + msg
	}
	return msg
}

func (w wrapped) Unwrap() []error {
	if w.sentinel == nil {
		return []error{w.cause}
	}
	return []error{w.sentinel, w.cause}
}
