package repository

import (
	"fmt"
	"path"
	"strings"
)

// Type is the kind of store a repository lives in.
type Type string

// Repository types, as in Porch.
const (
	TypeGit Type = "git"
	TypeOCI Type = "oci"
)

// Spec describes a repository in the shape of the spec of Porch's
// config.porch.kpt.dev/v1alpha1 Repository, with the same JSON names, so a
// Porch Repository's spec decodes into it. Name is the object's name.
type Spec struct {
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// Type is git or oci.
	Type Type `json:"type,omitempty"`
	// Deployment marks a repository of deployment-ready packages.
	Deployment bool     `json:"deployment,omitempty"`
	Git        *GitSpec `json:"git,omitempty"`
	OCI        *OCISpec `json:"oci,omitempty"`
	// Labels of the repository object, used by selectors such as a
	// PackageVariantSet's repositorySelector.
	Labels map[string]string `json:"labels,omitempty"`
}

// GitSpec locates a package repository in git.
type GitSpec struct {
	// Repo is the repository URL: https://, http://, ssh://, user@host:path,
	// file:// or a local path.
	Repo string `json:"repo"`
	// Branch is the registered branch; default "main".
	Branch string `json:"branch,omitempty"`
	// CreateBranch creates Branch when it does not exist.
	CreateBranch bool `json:"createBranch,omitempty"`
	// Directory is the directory under which packages live; package paths
	// are relative to it. Default: the root.
	Directory string `json:"directory,omitempty"`
	// SecretRef names the credentials; resolving it is the caller's job.
	SecretRef SecretRef `json:"secretRef,omitempty"`
	// Author and Email are the commit author identity; when only Email is
	// set it is used as the name too.
	Author string `json:"author,omitempty"`
	Email  string `json:"email,omitempty"`
}

// OCISpec locates a package repository in an OCI registry.
type OCISpec struct {
	// Registry is the image prefix, such as "registry.example/packages".
	Registry  string    `json:"registry"`
	SecretRef SecretRef `json:"secretRef,omitempty"`
}

// SecretRef names a secret holding credentials.
type SecretRef struct {
	Name string `json:"name,omitempty"`
}

// DefaultBranch is the branch of a git repository whose spec names none.
const DefaultBranch = "main"

// Defaulted returns a copy of s with defaults filled in: git branch "main"
// and a cleaned directory without leading or trailing slashes.
func (s Spec) Defaulted() Spec {
	if s.Git != nil {
		g := *s.Git
		if g.Branch == "" {
			g.Branch = DefaultBranch
		}
		g.Directory = CleanDirectory(g.Directory)
		s.Git = &g
	}
	return s
}

// CleanDirectory returns dir cleaned and without leading or trailing
// slashes; "" and "/" become "".
func CleanDirectory(dir string) string {
	dir = strings.Trim(path.Clean("/"+dir), "/")
	return dir
}

// Validate reports the first problem of s as an error matching
// ErrInvalidInput: a name that is not a DNS-1123 label, a missing or
// unknown type, a type whose section is missing, a directory with "..", a
// git branch that is not a valid git branch name (see CheckBranchName).
func (s Spec) Validate() error {
	bad := func(format string, args ...any) error {
		return &Error{Op: "validate spec", Repository: s.Name, Err: fmt.Errorf("%w: %s", ErrInvalidInput, fmt.Sprintf(format, args...))}
	}
	if reason := dnsLabel(s.Name); reason != "" {
		return bad("name %q %s", s.Name, reason)
	}
	switch s.Type {
	case TypeGit:
		if s.Git == nil || s.Git.Repo == "" {
			return bad("a git repository needs git.repo")
		}
		for _, seg := range strings.Split(s.Git.Directory, "/") {
			if seg == ".." {
				return bad("git.directory %q must not contain ..", s.Git.Directory)
			}
		}
		if s.Git.Branch != "" {
			if why := branchNameProblem(s.Git.Branch); why != "" {
				return bad("git.branch %q is not a valid git branch name: %s", s.Git.Branch, why)
			}
		}
	case TypeOCI:
		if s.OCI == nil || s.OCI.Registry == "" {
			return bad("an oci repository needs oci.registry")
		}
	case "":
		return bad("type must be git or oci")
	default:
		return bad("unknown type %q: must be git or oci", s.Type)
	}
	return nil
}

// CheckBranchName reports whether name is a valid git branch name, by the
// rules of git check-ref-format --branch applied to refs/heads/<name>: no
// empty component and none that starts with "." or ends with ".lock"; no
// "..", "@{", "//", control characters, space, "~", "^", ":", "?", "*",
// "[" or "\\"; no leading or trailing "/", no trailing "."; not "HEAD"
// (which git 2.44 and later refuse too) and no leading "-". It returns nil for a valid name and otherwise
// an error matching ErrInvalidInput that says which rule name breaks.
func CheckBranchName(name string) error {
	if why := branchNameProblem(name); why != "" {
		return fmt.Errorf("%w: %q is not a valid git branch name: %s", ErrInvalidInput, name, why)
	}
	return nil
}

// branchNameProblem returns why name is not a valid branch name, or "".
func branchNameProblem(name string) string {
	bad := func(why string) string { return why }
	switch {
	case name == "":
		return bad("it is empty")
	case name == "HEAD":
		return bad(`it is "HEAD"`)
	case strings.HasPrefix(name, "-"):
		return bad(`it starts with "-"`)
	case strings.HasSuffix(name, "."):
		return bad(`it ends with "."`)
	case strings.Contains(name, ".."):
		return bad(`it contains ".."`)
	case strings.Contains(name, "@{"):
		return bad(`it contains "@{"`)
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return bad("it contains a control character")
		}
		if strings.ContainsRune(" ~^:?*[\\", c) {
			return bad(fmt.Sprintf("it contains %q", c))
		}
	}
	for _, seg := range strings.Split(name, "/") {
		switch {
		case seg == "":
			return bad(`it has an empty component (a leading, trailing or double "/")`)
		case strings.HasPrefix(seg, "."):
			return bad(fmt.Sprintf("its component %q starts with \".\"", seg))
		case strings.HasSuffix(seg, ".lock"):
			return bad(fmt.Sprintf("its component %q ends with \".lock\"", seg))
		}
	}
	return ""
}

func dnsLabel(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if len(s) > 63 {
		return "must be at most 63 characters"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') || (c == '-' && (i == 0 || i == len(s)-1)) {
			return "must be a DNS-1123 label (lower-case letters, digits, '-')"
		}
	}
	return ""
}
