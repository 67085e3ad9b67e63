package refstore

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
)

// RefUpdate is one compare-and-swap of a ref: from old (zero: must not
// exist) to new (zero: delete).
type RefUpdate struct {
	Name     plumbing.ReferenceName
	Old, New plumbing.Hash
}

// ErrRetry: a ref was not at its expected value when writing; the
// write is planned again on the new state.
var ErrRetry = errors.New("refs changed while writing")

// ErrConflictRef (matching repository.ErrConflict): a local ref was not
// at its expected value.
var ErrConflictRef = fmt.Errorf("%w: ref changed", repository.ErrConflict)

// HashOrNone returns h as text, or "absent" for the zero hash.
func HashOrNone(h plumbing.Hash) string {
	if h.IsZero() {
		return "absent"
	}
	return h.String()
}
