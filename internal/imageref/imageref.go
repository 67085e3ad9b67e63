// Package imageref is cad's one reading of container image references
// ("[host[:port]/]path[:tag][@digest]"): Split takes any string apart
// leniently, as functions that rewrite images must (a reference they do
// not understand is kept, not refused), and Validate checks the strict
// grammar of github.com/distribution/reference, which kpt applies to the
// function images of a Kptfile, with that package's error messages.
package imageref

import (
	"errors"
	"regexp"
	"strings"
)

// Ref is an image reference taken apart. Tag has no ":" and Digest no
// "@"; either may be empty.
type Ref struct {
	Name, Tag, Digest string
}

// Split takes s apart: the digest is what follows the first "@", the tag
// what follows the last ":" after the last "/" before it (so a registry
// port is part of the name), the name the rest. It never fails; a string
// without tag or digest is all name.
func Split(s string) Ref {
	var r Ref
	if at := strings.Index(s, "@"); at >= 0 {
		s, r.Digest = s[:at], s[at+1:]
	}
	if c := strings.LastIndex(s, ":"); c > strings.LastIndex(s, "/") {
		s, r.Tag = s[:c], s[c+1:]
	}
	r.Name = s
	return r
}

// String joins r back: Name, ":"+Tag when there is one, "@"+Digest when
// there is one.
func (r Ref) String() string {
	s := r.Name
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// The grammar of github.com/distribution/reference.
var reference = func() *regexp.Regexp {
	const (
		alnum         = `[a-z0-9]+`
		separator     = `(?:[._]|__|[-]+)`
		domainComp    = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		domainName    = domainComp + `(?:\.` + domainComp + `)*`
		ipv6          = `\[(?:[a-fA-F0-9:]+)\]`
		domainAndPort = `(?:` + domainName + `|` + ipv6 + `)(?::[0-9]+)?`
		pathComp      = alnum + `(?:` + separator + alnum + `)*`
		name          = `(?:` + domainAndPort + `/)?` + pathComp + `(?:/` + pathComp + `)*`
		tag           = `[\w][\w.-]{0,127}`
		digest        = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}`
	)
	return regexp.MustCompile(`^(` + name + `)(?::(` + tag + `))?(?:@(` + digest + `))?$`)
}()

// Validate returns nil when s is a valid reference by the grammar of
// github.com/distribution/reference (Parse), else an error with that
// package's message ("invalid reference format", "repository name must
// be lowercase", ...).
func Validate(s string) error {
	m := reference.FindStringSubmatch(s)
	if m == nil {
		switch {
		case s == "":
			return errors.New("repository name must have at least one component")
		case reference.MatchString(strings.ToLower(s)):
			return errors.New("repository name must be lowercase")
		}
		return errors.New("invalid reference format")
	}
	if len(m[1]) > 255 {
		return errors.New("repository name must not be more than 255 characters")
	}
	if m[3] != "" {
		alg, enc, _ := strings.Cut(m[3], ":")
		size := map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}[alg]
		switch {
		case size == 0:
			return errors.New("unsupported digest algorithm")
		case len(enc) != size:
			return errors.New("invalid checksum digest length")
		case strings.ToLower(enc) != enc:
			return errors.New("invalid checksum digest format")
		}
	}
	return nil
}
