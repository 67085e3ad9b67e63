package fnruntime

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/configasdata/cad/revision"
)

// A semVersion is a parsed semantic version (build metadata dropped).
type semVersion struct {
	major, minor, patch uint64
	pre                 string
}

// parseVersion parses "v1.2.3", "1.2.3-rc.1", and the partial "1.2" and
// "1" (missing parts are zero).
func parseVersion(s string) (semVersion, error) {
	v, n, err := parsePartial(s)
	if err != nil {
		return semVersion{}, err
	}
	if n == 0 {
		return semVersion{}, fmt.Errorf("%q is not a version", s)
	}
	return v, nil
}

// parsePartial parses a version whose trailing parts may be missing or
// wildcards (x, X, *). It returns the version with those parts zero and
// the number of parts given (0-3).
func parsePartial(s string) (semVersion, int, error) {
	orig := s
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "V")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	var v semVersion
	if i := strings.IndexByte(s, '-'); i >= 0 {
		s, v.pre = s[:i], s[i+1:]
		if v.pre == "" {
			return v, 0, fmt.Errorf("%q: empty prerelease", orig)
		}
	}
	if s == "" {
		return v, 0, fmt.Errorf("%q is not a version", orig)
	}
	parts := strings.Split(s, ".")
	if len(parts) > 3 {
		return v, 0, fmt.Errorf("%q has more than three parts", orig)
	}
	n := 0
	wild := false
	for i, p := range parts {
		if p == "x" || p == "X" || p == "*" {
			wild = true
			continue
		}
		if wild {
			return v, 0, fmt.Errorf("%q: a number after a wildcard", orig)
		}
		if p == "" || (len(p) > 1 && p[0] == '0') {
			return v, 0, fmt.Errorf("%q: bad number %q", orig, p)
		}
		u, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return v, 0, fmt.Errorf("%q: bad number %q", orig, p)
		}
		switch i {
		case 0:
			v.major = u
		case 1:
			v.minor = u
		case 2:
			v.patch = u
		}
		n++
	}
	if v.pre != "" && n < 3 {
		return v, 0, fmt.Errorf("%q: a prerelease needs major.minor.patch", orig)
	}
	return v, n, nil
}

func (v semVersion) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch)
	if v.pre != "" {
		s += "-" + v.pre
	}
	return s
}

// compare orders versions by semver precedence.
func (v semVersion) compare(o semVersion) int {
	for _, d := range [][2]uint64{{v.major, o.major}, {v.minor, o.minor}, {v.patch, o.patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case v.pre == o.pre:
		return 0
	case v.pre == "":
		return 1
	case o.pre == "":
		return -1
	}
	a, b := strings.Split(v.pre, "."), strings.Split(o.pre, ".")
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		na, ea := strconv.ParseUint(a[i], 10, 64)
		nb, eb := strconv.ParseUint(b[i], 10, 64)
		switch {
		case ea == nil && eb == nil:
			if na < nb {
				return -1
			}
			return 1
		case ea == nil:
			return -1
		case eb == nil:
			return 1
		case a[i] < b[i]:
			return -1
		default:
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// comparator is one term of a constraint: the versions in [lo, hi), or
// outside it when negated. A nil bound is open.
type comparator struct {
	lo, hi  *semVersion
	loIncl  bool // lo is included (else excluded)
	hiIncl  bool // hi is included (else excluded)
	negate  bool
	hasPre  bool // the term names a prerelease
	matches bool // "*": every (non-prerelease) version
}

func (c comparator) check(v semVersion) bool {
	if c.matches {
		return !c.negate
	}
	in := true
	if c.lo != nil {
		d := v.compare(*c.lo)
		in = d > 0 || (d == 0 && c.loIncl)
	}
	if in && c.hi != nil {
		d := v.compare(*c.hi)
		in = d < 0 || (d == 0 && c.hiIncl)
	}
	return in != c.negate
}

// constraint is an OR of ANDs of comparators, in the syntax of
// github.com/Masterminds/semver/v3 (which kpt uses for a function's tag):
// comparators =, !=, >, >=, <, <=, ~ and ^; x-ranges (1.2.x, 1.*, a bare
// partial version 1.2); "," or spaces for AND and "||" for OR. Hyphen
// ranges ("1.2 - 1.4") are not supported.
type constraint struct {
	text string
	or   [][]comparator
}

// parseConstraint parses s; errors match revision.ErrInvalid.
func parseConstraint(s string) (*constraint, error) {
	c := &constraint{text: s}
	for _, group := range strings.Split(s, "||") {
		var and []comparator
		for _, term := range splitTerms(group) {
			cmp, err := parseComparator(term)
			if err != nil {
				return nil, &ConstraintError{Constraint: s, Err: err}
			}
			and = append(and, cmp)
		}
		if len(and) == 0 {
			return nil, &ConstraintError{Constraint: s, Err: fmt.Errorf("empty term")}
		}
		c.or = append(c.or, and)
	}
	return c, nil
}

// splitTerms splits an AND group on commas and spaces, joining an
// operator with the version after it (">= 1.2").
func splitTerms(s string) []string {
	var out []string
	pending := ""
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if strings.Trim(f, "=!<>~^") == "" {
			pending += f
			continue
		}
		out = append(out, pending+f)
		pending = ""
	}
	if pending != "" {
		out = append(out, pending)
	}
	return out
}

func parseComparator(term string) (comparator, error) {
	op := ""
	for _, p := range []string{">=", "<=", "!=", "=>", "=<", ">", "<", "=", "~>", "~", "^"} {
		if rest, ok := strings.CutPrefix(term, p); ok {
			op, term = p, rest
			break
		}
	}
	v, n, err := parsePartial(term)
	if err != nil {
		return comparator{}, err
	}
	lo := v
	// upper is the first version past the x-range of the parts given.
	upper := func(n int) *semVersion {
		switch n {
		case 1:
			return &semVersion{major: v.major + 1}
		case 2:
			return &semVersion{major: v.major, minor: v.minor + 1}
		}
		return nil
	}
	c := comparator{hasPre: v.pre != ""}
	switch op {
	case "", "=", "!=":
		c.negate = op == "!="
		if n == 0 {
			c.matches = true
		} else if n == 3 {
			c.lo, c.hi, c.loIncl, c.hiIncl = &lo, &lo, true, true
		} else {
			c.lo, c.hi, c.loIncl = &lo, upper(n), true
		}
	case ">":
		switch {
		case n == 0:
			c.matches, c.negate = true, true
		case n == 3:
			c.lo = &lo
		default:
			c.lo, c.loIncl = upper(n), true
		}
	case ">=", "=>":
		c.lo, c.loIncl = &lo, true
	case "<":
		if n == 0 {
			c.matches, c.negate = true, true
		} else {
			c.hi = &lo
		}
	case "<=", "=<":
		switch {
		case n == 0:
			c.matches = true
		case n == 3:
			c.hi, c.hiIncl = &lo, true
		default:
			c.hi = upper(n)
		}
	case "~", "~>":
		c.lo, c.loIncl = &lo, true
		switch n {
		case 0:
			c.matches = true
		case 1:
			c.hi = upper(1)
		default:
			c.hi = upper(2)
		}
	case "^":
		c.lo, c.loIncl = &lo, true
		switch {
		case n == 0:
			c.matches = true
		case v.major > 0 || n == 1:
			c.hi = upper(1)
		case v.minor > 0 || n == 2:
			c.hi = upper(2)
		default:
			c.hi = &semVersion{patch: v.patch + 1}
		}
	}
	return c, nil
}

// check reports whether v satisfies the constraint. As in Masterminds
// semver, a prerelease version satisfies only a group that names a
// prerelease.
func (c *constraint) check(v semVersion) bool {
	for _, and := range c.or {
		ok, pre := true, false
		for _, cmp := range and {
			ok = ok && cmp.check(v)
			pre = pre || cmp.hasPre
		}
		if ok && (v.pre == "" || pre) {
			return true
		}
	}
	return false
}

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

func (e *ConstraintError) Error() string {
	return fmt.Sprintf("malformed version constraint %q: %v", e.Constraint, e.Err)
}

// Unwrap returns the cause.
func (e *ConstraintError) Unwrap() error { return e.Err }

// Is reports whether target is revision.ErrInvalid.
func (e *ConstraintError) Is(target error) bool { return target == revision.ErrInvalid }
