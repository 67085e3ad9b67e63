package revision

import (
	"fmt"
	"strconv"
	"strings"
)

// Placeholder is the revision number of the placeholder revision: the
// package as it stands on the head of the repository's branch. Its
// workspace is the branch name.
const Placeholder = -1

// Key identifies a package revision within a repository.
//
// Package is the package path relative to the repository's directory,
// slash-separated ("net/istio"). Workspace names the line of work a revision
// came from and is unique per package; a published revision keeps the
// workspace of the draft it was approved from. Revision is 0 for drafts and
// proposals, 1, 2, ... for published revisions, and [Placeholder] (-1) for
// the branch placeholder and for tags that are not of the form vN.
//
// Lookups match Package and every other non-zero field, so
// Key{Package: "p", Revision: 3} finds p's third published revision and
// Key{Package: "p", Workspace: "ws"} finds the revision of workspace ws.
type Key struct {
	Repository string
	Package    string
	Workspace  string
	Revision   int
}

// String formats k for messages: "repo/pkg@workspace" with "/vN" appended
// for published revisions.
func (k Key) String() string {
	var b strings.Builder
	if k.Repository != "" {
		b.WriteString(k.Repository)
		b.WriteByte(':')
	}
	b.WriteString(k.Package)
	if k.Workspace != "" {
		b.WriteByte('@')
		b.WriteString(k.Workspace)
	}
	if k.Revision > 0 {
		b.WriteString("/v")
		b.WriteString(strconv.Itoa(k.Revision))
	} else if k.Revision == Placeholder {
		b.WriteString("/placeholder")
	}
	return b.String()
}

// IsPlaceholder reports whether k names the branch placeholder revision.
func (k Key) IsPlaceholder() bool { return k.Revision == Placeholder }

// Matches reports whether the revision identified by other is selected by
// k: Package equal, and Repository, Workspace and Revision equal wherever
// they are set in k.
func (k Key) Matches(other Key) bool {
	if k.Package != other.Package {
		return false
	}
	if k.Repository != "" && k.Repository != other.Repository {
		return false
	}
	if k.Workspace != "" && k.Workspace != other.Workspace {
		return false
	}
	if k.Revision != 0 && k.Revision != other.Revision {
		return false
	}
	return true
}

// ValidateNew checks that k can name a new draft: a valid package path, a
// valid workspace name and revision 0. The error is a *KeyError matching
// [ErrInvalid].
func (k Key) ValidateNew() error {
	if err := ValidatePackagePath(k.Package); err != nil {
		return err
	}
	if err := ValidateWorkspace(k.Workspace); err != nil {
		return err
	}
	if k.Revision != 0 {
		return &KeyError{Field: "revision", Value: strconv.Itoa(k.Revision), Reason: "a new draft has revision 0"}
	}
	return nil
}

// ValidateLookup checks that k can select a revision: a non-empty package
// path without unsafe segments and at least one of Workspace or Revision.
// The error is a *KeyError matching [ErrInvalid].
func (k Key) ValidateLookup() error {
	if k.Package == "" {
		return &KeyError{Field: "package", Value: "", Reason: "must not be empty"}
	}
	if err := ValidatePath(k.Package); err != nil {
		return &KeyError{Field: "package", Value: k.Package, Reason: err.(*PathError).Reason}
	}
	if k.Workspace == "" && k.Revision == 0 {
		return &KeyError{Field: "workspace", Value: "", Reason: "a lookup needs a workspace or a revision"}
	}
	if k.Revision < Placeholder {
		return &KeyError{Field: "revision", Value: strconv.Itoa(k.Revision), Reason: "must be -1, 0 or positive"}
	}
	return nil
}

// ValidatePackagePath checks a package path for a new package: one or more
// slash-separated segments, each a DNS-1123 label (lower-case letters,
// digits and '-', starting and ending with a letter or digit, at most 63
// characters), as Porch requires. The error is a *KeyError matching
// [ErrInvalid].
func ValidatePackagePath(p string) error {
	if p == "" {
		return &KeyError{Field: "package", Value: p, Reason: "must not be empty"}
	}
	for _, seg := range strings.Split(p, "/") {
		if reason := dnsLabel(seg); reason != "" {
			return &KeyError{Field: "package", Value: p, Reason: fmt.Sprintf("segment %q %s", seg, reason)}
		}
	}
	return nil
}

// ValidateWorkspace checks a workspace name: a DNS-1123 label, as Porch
// requires. Such a name is always a valid git ref component and OCI tag.
// The error is a *KeyError matching [ErrInvalid].
func ValidateWorkspace(ws string) error {
	if reason := dnsLabel(ws); reason != "" {
		return &KeyError{Field: "workspace", Value: ws, Reason: reason}
	}
	return nil
}

// dnsLabel returns why s is not a DNS-1123 label, or "".
func dnsLabel(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if len(s) > 63 {
		return "must be at most 63 characters"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && c != '-' {
			return "must consist of lower-case letters, digits and '-'"
		}
		if c == '-' && (i == 0 || i == len(s)-1) {
			return "must start and end with a letter or digit"
		}
	}
	return ""
}
