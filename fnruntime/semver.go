package fnruntime

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/configasdata/cad/revision"
)

// Versions and tag constraints are those of the Masterminds semver
// library, the one kpt resolves function tags with: x-ranges and partial
// versions ("v0.4" is 0.4.x), tilde and caret ranges, hyphen ranges
// ("0.4.1 - 0.4.3"), comparisons joined by "," or spaces (and) and "||"
// (or), and prereleases that only prerelease constraints match.

// semVersion is a parsed version.
type semVersion = *semver.Version

// parseVersion parses "v1.2.3", "1.2.3-rc.1", and the partial "1.2" and
// "1" (missing parts are zero).
func parseVersion(s string) (semVersion, error) {
	return semver.NewVersion(s)
}

// constraint is a parsed tag constraint.
type constraint struct{ c *semver.Constraints }

// parseConstraint parses a tag constraint; a malformed one is a
// *ConstraintError.
func parseConstraint(s string) (*constraint, error) {
	c, err := semver.NewConstraint(s)
	if err != nil {
		return nil, &ConstraintError{Constraint: s, Err: err}
	}
	return &constraint{c: c}, nil
}

// check reports whether v satisfies c.
func (c *constraint) check(v semVersion) bool { return v != nil && c.c.Check(v) }

// isVersionTag reports whether a tag is a version or constraint (to be
// checked against an implementation's version), as opposed to a plain tag
// such as "latest", "unstable" or "main", which resolves to any version.
func isVersionTag(tag string) bool {
	t := strings.TrimSpace(tag)
	if t == "" || t == "latest" {
		return false
	}
	if strings.ContainsAny(t, "=<>~^,|* ") || t == "x" || t == "X" {
		return true
	}
	t = strings.TrimPrefix(strings.TrimPrefix(t, "v"), "V")
	return t != "" && t[0] >= '0' && t[0] <= '9'
}

// ConstraintError reports a malformed version constraint. It matches
// revision.ErrInvalid (the invalid-input sentinel) with errors.Is.
type ConstraintError struct {
	Constraint string
	Err        error
}

// Error names the constraint and why it does not parse.
func (e *ConstraintError) Error() string {
	return fmt.Sprintf("malformed version constraint %q: %v", e.Constraint, e.Err)
}

// Unwrap returns the cause.
func (e *ConstraintError) Unwrap() error { return e.Err }

// Is reports whether target is revision.ErrInvalid.
func (e *ConstraintError) Is(target error) bool { return target == revision.ErrInvalid }
