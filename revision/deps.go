package revision

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// APIRef names a Kubernetes API: a group (empty for the core group), a
// version and a kind. In a requirement an empty Version matches any
// version of the group and kind.
type APIRef struct {
	Group   string `yaml:"group,omitempty"`
	Version string `yaml:"version,omitempty"`
	Kind    string `yaml:"kind"`
}

// String formats a as "group/version, Kind=kind" the way Kubernetes
// formats a GroupVersionKind ("v1, Kind=ConfigMap" for the core group).
func (a APIRef) String() string {
	gv := a.Version
	if gv == "" {
		gv = "*"
	}
	if a.Group != "" {
		gv = a.Group + "/" + gv
	}
	return gv + ", Kind=" + a.Kind
}

// Satisfies reports whether a, provided, satisfies the requirement req:
// same group and kind, and the same version unless req names none.
func (a APIRef) Satisfies(req APIRef) bool {
	return a.Group == req.Group && a.Kind == req.Kind && (req.Version == "" || a.Version == req.Version)
}

// PackageRef names a package, in a repository when Repository is set (in
// the requiring package's own repository otherwise), and optionally
// constrains its revision number with Revision: "" (any), "3" or "=3",
// ">=3", ">3", "<=3", "<3"; a leading "v" on the number is accepted
// ("v3", ">=v3").
type PackageRef struct {
	Repository string `yaml:"repository,omitempty"`
	Name       string `yaml:"name"`
	Revision   string `yaml:"revision,omitempty"`
}

// String formats p as "repo:name" with the revision constraint appended
// after a space.
func (p PackageRef) String() string {
	s := p.Name
	if p.Repository != "" {
		s = p.Repository + ":" + s
	}
	if p.Revision != "" {
		s += " " + p.Revision
	}
	return s
}

// MatchesRevision reports whether revision number n satisfies p's
// Revision constraint. An invalid constraint matches nothing (Validate
// refuses it).
func (p PackageRef) MatchesRevision(n int) bool {
	op, want, err := parseRevisionConstraint(p.Revision)
	if err != nil {
		return false
	}
	switch op {
	case "":
		return true
	case "=":
		return n == want
	case ">=":
		return n >= want
	case ">":
		return n > want
	case "<=":
		return n <= want
	default: // "<"
		return n < want
	}
}

func parseRevisionConstraint(c string) (op string, n int, err error) {
	c = strings.TrimSpace(c)
	if c == "" {
		return "", 0, nil
	}
	op = "="
	for _, o := range []string{">=", "<=", ">", "<", "="} {
		if strings.HasPrefix(c, o) {
			op, c = o, strings.TrimSpace(c[len(o):])
			break
		}
	}
	c = strings.TrimPrefix(c, "v")
	n, err = strconv.Atoi(c)
	if err != nil || n < 1 {
		return "", 0, errors.New("want a revision number of 1 or more, optionally after =, >=, >, <= or <")
	}
	return op, n, nil
}

// Dependency is one entry of a package's requires or provides list (see
// [Dependencies]). Exactly one of API and Capability is set, or neither
// with Package set:
//
//   - API: a Kubernetes API (group, version, kind);
//   - Capability: a named capability, any string the packages agree on
//     ("ingress", "example.com/dns");
//   - Package alone (requires only): another package, optionally at a
//     revision constraint. Package with API or Capability pins the
//     provider: the requirement is satisfied only by that package, and
//     only if it provides the API or capability (an explicit binding).
type Dependency struct {
	API        *APIRef     `yaml:"api,omitempty"`
	Capability string      `yaml:"capability,omitempty"`
	Package    *PackageRef `yaml:"package,omitempty"`
}

// String formats d for messages: "api <gvk>", "capability <name>" or
// "package <ref>", followed by "from <ref>" for a pinned provider.
func (d Dependency) String() string {
	var s string
	switch {
	case d.API != nil:
		s = "api " + d.API.String()
	case d.Capability != "":
		s = "capability " + d.Capability
	case d.Package != nil:
		return "package " + d.Package.String()
	default:
		return "(empty)"
	}
	if d.Package != nil {
		s += " from " + d.Package.String()
	}
	return s
}

// Dependencies is what a package declares it requires and provides, kept
// in cad's package file (spec.requires, spec.provides; see
// [PackageFile]), plus, from [DependenciesFromFiles], the APIs its
// CustomResourceDefinitions provide.
type Dependencies struct {
	Requires []Dependency
	Provides []Dependency
}

// IsZero reports whether d declares nothing.
func (d Dependencies) IsZero() bool { return len(d.Requires) == 0 && len(d.Provides) == 0 }

// DependencyError reports an invalid requires or provides entry. It
// matches [ErrInvalid].
type DependencyError struct {
	Field  string // "requires[0]", "provides[2]"
	Reason string
}

// Error returns the message, naming the entry.
func (e *DependencyError) Error() string {
	return fmt.Sprintf("invalid dependency %s: %s", e.Field, e.Reason)
}

// Is reports whether target is [ErrInvalid].
func (e *DependencyError) Is(target error) bool { return target == ErrInvalid }

// Validate checks every entry: exactly one of api and capability, or a
// package alone (requires only); an api with a kind (and, in provides, a
// version); a package with a valid name, repository and revision
// constraint; a package pin only in requires. It returns every problem,
// each a *DependencyError matching [ErrInvalid], joined.
func (d Dependencies) Validate() error {
	var errs []error
	check := func(list string, i int, dep Dependency, provides bool) {
		field := fmt.Sprintf("%s[%d]", list, i)
		bad := func(format string, args ...any) {
			errs = append(errs, &DependencyError{Field: field, Reason: fmt.Sprintf(format, args...)})
		}
		switch {
		case dep.API != nil && dep.Capability != "":
			bad("set api or capability, not both")
			return
		case dep.API == nil && dep.Capability == "" && dep.Package == nil:
			bad("set one of api, capability or package")
			return
		case provides && dep.Package != nil:
			bad("a package cannot be provided: every package provides itself")
			return
		}
		if a := dep.API; a != nil {
			if a.Kind == "" {
				bad("api needs a kind")
			}
			if provides && a.Version == "" {
				bad("a provided api needs a version")
			}
			if strings.ContainsAny(a.Group+a.Version+a.Kind, "/ \t\n,") {
				bad("api %s: group, version and kind cannot hold '/', ',' or spaces", a)
			}
		}
		if strings.TrimSpace(dep.Capability) != dep.Capability {
			bad("capability %q has surrounding spaces", dep.Capability)
		}
		if p := dep.Package; p != nil {
			if p.Name == "" {
				bad("package needs a name")
			} else if err := ValidatePath(p.Name); err != nil {
				bad("package name %q: %v", p.Name, err)
			}
			if p.Repository != "" && strings.ContainsAny(p.Repository, "/: \t\n") {
				bad("package repository %q cannot hold '/', ':' or spaces", p.Repository)
			}
			if _, _, err := parseRevisionConstraint(p.Revision); err != nil {
				bad("package revision %q: %v", p.Revision, err)
			}
		}
	}
	for i, dep := range d.Requires {
		check("requires", i, dep, false)
	}
	for i, dep := range d.Provides {
		check("provides", i, dep, true)
	}
	return errors.Join(errs...)
}

// crdDoc is the part of a CustomResourceDefinition DependenciesFromFiles
// reads.
type crdDoc struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Spec       struct {
		Group   string `yaml:"group"`
		Version string `yaml:"version"` // v1beta1
		Names   struct {
			Kind string `yaml:"kind"`
		} `yaml:"names"`
		Versions []struct {
			Name   string `yaml:"name"`
			Served *bool  `yaml:"served"`
		} `yaml:"versions"`
	} `yaml:"spec"`
}

// DependenciesFromFiles returns what the package of files declares: the
// requires and provides of its root package file ([PackageFileName]),
// whether or not it also has a Kptfile, and, appended to Provides, one API
// per served version of every CustomResourceDefinition in its YAML files
// (subpackages included), unless already declared. A package without a
// package file declares no requirements.
//
// It returns a *PackageFileError or *DependencyError, matching
// [ErrInvalid], when the package file does not parse or an entry is
// invalid. YAML files that do not parse are skipped: they are not this
// function's to judge (the render reports them).
func DependenciesFromFiles(files Files) (Dependencies, error) {
	var d Dependencies
	if data, ok := files.Get(PackageFileName); ok {
		p, err := ParsePackageFile(data)
		if err != nil {
			return Dependencies{}, err
		}
		d.Requires, d.Provides = cloneDependencies(p.Requires), cloneDependencies(p.Provides)
		if err := d.Validate(); err != nil {
			return Dependencies{}, err
		}
	}
	for _, p := range files.Paths() {
		if ext := path.Ext(p); ext != ".yaml" && ext != ".yml" {
			continue
		}
		data, _ := files.Get(p)
		if !bytes.Contains(data, []byte("CustomResourceDefinition")) {
			continue
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc crdDoc
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				break // not ours to report
			}
			if doc.Kind != "CustomResourceDefinition" || !strings.HasPrefix(doc.APIVersion, "apiextensions.k8s.io/") || doc.Spec.Names.Kind == "" {
				continue
			}
			versions := []string{}
			for _, v := range doc.Spec.Versions {
				if v.Name != "" && (v.Served == nil || *v.Served) {
					versions = append(versions, v.Name)
				}
			}
			if len(versions) == 0 && doc.Spec.Version != "" {
				versions = append(versions, doc.Spec.Version)
			}
			for _, v := range versions {
				api := APIRef{Group: doc.Spec.Group, Version: v, Kind: doc.Spec.Names.Kind}
				if !slices.ContainsFunc(d.Provides, func(x Dependency) bool { return x.API != nil && *x.API == api }) {
					d.Provides = append(d.Provides, Dependency{API: &api})
				}
			}
		}
	}
	return d, nil
}

// cloneDependencies copies list deeply, so that changing the copy's
// entries never changes the original's.
func cloneDependencies(list []Dependency) []Dependency {
	if list == nil {
		return nil
	}
	out := make([]Dependency, len(list))
	for i, d := range list {
		out[i] = d
		if d.API != nil {
			a := *d.API
			out[i].API = &a
		}
		if d.Package != nil {
			p := *d.Package
			out[i].Package = &p
		}
	}
	return out
}
