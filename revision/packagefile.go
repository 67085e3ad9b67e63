package revision

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// PackageFileName is the file that marks a directory without a Kptfile as
// a package: cad's own Package resource (see [PackageFile]). Like a
// Kptfile it is found by name, so a backend recognises a package from a
// directory listing without reading any file.
const PackageFileName = "cadpackage.yaml"

// The API version and kind of the resource in [PackageFileName].
const (
	PackageFileAPIVersion = "cad.configasdata.dev/v1alpha1"
	PackageFileKind       = "Package"
)

// localConfigAnnotation keeps a resource out of what is applied to a
// cluster, as kpt and kustomize understand it.
const localConfigAnnotation = "config.kubernetes.io/local-config"

// PackageFile is cad's in-package record for a package without a Kptfile:
// a KRM resource of cad's own group, kept in [PackageFileName] at the
// package root and marked local-config so that nothing applies it:
//
//	apiVersion: cad.configasdata.dev/v1alpha1
//	kind: Package
//	metadata:
//	  name: app
//	  annotations:
//	    config.kubernetes.io/local-config: "true"
//	spec:
//	  upstream: {type: git, git: {repo: ..., directory: ..., ref: ...}, updateStrategy: resource-merge}
//	  upstreamLock: {type: git, git: {repo: ..., directory: ..., ref: ..., commit: ...}}
//	  readinessGates: [{conditionType: Tested}]
//	  pipeline: {mutators: [...], validators: [...]}
//	  requires: [{api: {group: cert-manager.io, version: v1, kind: Certificate}}, {package: {name: base, revision: ">=2"}}]
//	  provides: [{capability: ingress}]
//	status:
//	  conditions: [{type: Tested, status: "True"}]
//
// upstream, upstreamLock, readinessGates and conditions have the Kptfile's
// shapes. spec.pipeline holds steps in the shape of the pipeline package's
// Step, CEL conditions and computed inputs included; this package does not
// read it (pipeline.StepsFromPackageFile does) and Encode keeps it, as it
// keeps every other field and comment of the parsed document.
// spec.requires and spec.provides declare the package's dependencies (see
// [Dependency]; ParsePackageFile validates them, and the deps package
// resolves them). A package with a Kptfile keeps them here too: the
// Kptfile has no place for them.
//
// When a package has both a Kptfile and a PackageFile, the Kptfile wins for
// every field it can hold, and the PackageFile is an ordinary resource (see
// [InfoFromFiles]).
//
// A PackageFile is a plain value that one goroutine changes at a time.
type PackageFile struct {
	Name           string
	Upstream       *Upstream
	UpstreamLock   *UpstreamLock
	ReadinessGates []ReadinessGate
	Conditions     []Condition
	// Requires and Provides are the package's dependency declarations
	// (spec.requires, spec.provides).
	Requires []Dependency
	Provides []Dependency

	rn  *yaml.RNode // the parsed document; nil for one built in code
	old packageFileDoc
}

// packageFileDoc is the part of the resource PackageFile decodes.
type packageFileDoc struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name,omitempty"`
	} `yaml:"metadata"`
	Spec struct {
		Upstream       *Upstream       `yaml:"upstream,omitempty"`
		UpstreamLock   *UpstreamLock   `yaml:"upstreamLock,omitempty"`
		ReadinessGates []ReadinessGate `yaml:"readinessGates,omitempty"`
		Requires       []Dependency    `yaml:"requires,omitempty"`
		Provides       []Dependency    `yaml:"provides,omitempty"`
	} `yaml:"spec"`
	Status struct {
		Conditions []Condition `yaml:"conditions,omitempty"`
	} `yaml:"status"`
}

// PackageFileError reports a [PackageFileName] that cannot be read. It
// matches [ErrInvalid].
type PackageFileError struct {
	Reason string
	Err    error
}

// Error returns the message.
func (e *PackageFileError) Error() string { return PackageFileName + ": " + e.Reason }

// Is reports whether target is [ErrInvalid].
func (e *PackageFileError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the decoder's error, or nil.
func (e *PackageFileError) Unwrap() error { return e.Err }

// NewPackageFile returns a PackageFile for a package called name with
// nothing else set.
func NewPackageFile(name string) *PackageFile { return &PackageFile{Name: name} }

// ParsePackageFile decodes the first YAML document of data as a cad
// Package resource. It returns a *PackageFileError matching [ErrInvalid]
// when data is not YAML or not of PackageFileAPIVersion and
// PackageFileKind, or a field has the wrong shape, and a
// *DependencyError (also matching ErrInvalid) for an invalid requires or
// provides entry. A file over a bound of the default [YAMLLimits] is a
// *PackageFileError wrapping the *YAMLLimitError.
func ParsePackageFile(data []byte) (*PackageFile, error) {
	if le := checkParse(PackageFileName, data); le != nil {
		return nil, &PackageFileError{Reason: le.reason(), Err: le}
	}
	var node yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&node); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &PackageFileError{Reason: "empty document"}
		}
		return nil, &PackageFileError{Reason: "can't be read: " + err.Error(), Err: err}
	}
	if node.Kind != yaml.DocumentNode || len(node.Content) != 1 || node.Content[0].Kind != yaml.MappingNode {
		return nil, &PackageFileError{Reason: "not a YAML mapping"}
	}
	var doc packageFileDoc
	if err := node.Decode(&doc); err != nil {
		return nil, &PackageFileError{Reason: "can't be read: " + err.Error(), Err: err}
	}
	if doc.APIVersion != PackageFileAPIVersion || doc.Kind != PackageFileKind {
		return nil, &PackageFileError{Reason: fmt.Sprintf("is %s %s, want %s %s", doc.APIVersion, doc.Kind, PackageFileAPIVersion, PackageFileKind)}
	}
	if err := (Dependencies{Requires: doc.Spec.Requires, Provides: doc.Spec.Provides}).Validate(); err != nil {
		return nil, err
	}
	return &PackageFile{
		Name:           doc.Metadata.Name,
		Upstream:       doc.Spec.Upstream,
		UpstreamLock:   doc.Spec.UpstreamLock,
		ReadinessGates: doc.Spec.ReadinessGates,
		Conditions:     doc.Status.Conditions,
		Requires:       cloneDependencies(doc.Spec.Requires),
		Provides:       cloneDependencies(doc.Spec.Provides),
		rn:             yaml.NewRNode(node.Content[0]),
		old:            doc,
	}, nil
}

// Encode returns p as YAML. For a PackageFile read with
// [ParsePackageFile], only the fields that changed are rewritten: other
// fields (spec.pipeline, labels) and comments stay. It returns an error only
// when a value cannot be encoded.
func (p *PackageFile) Encode() ([]byte, error) {
	rn := p.rn
	var old packageFileDoc
	if rn == nil {
		rn = yaml.NewMapRNode(nil)
		if err := rn.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode(PackageFileAPIVersion))); err != nil {
			return nil, err
		}
		if err := rn.PipeE(yaml.SetField("kind", yaml.NewStringRNode(PackageFileKind))); err != nil {
			return nil, err
		}
		if p.Name != "" {
			if err := rn.PipeE(yaml.LookupCreate(yaml.MappingNode, "metadata"), yaml.SetField("name", yaml.NewStringRNode(p.Name))); err != nil {
				return nil, err
			}
		}
		if err := rn.SetAnnotations(map[string]string{localConfigAnnotation: "true"}); err != nil {
			return nil, err
		}
		old.Metadata.Name = p.Name // written above
	} else {
		rn = rn.Copy()
		old = p.old
	}
	set := func(parent []string, field string, was, now any, empty bool) error {
		if reflect.DeepEqual(was, now) {
			return nil
		}
		if empty {
			m, err := rn.Pipe(yaml.Lookup(parent...))
			if err != nil || m == nil {
				return err
			}
			_, err = m.Pipe(yaml.Clear(field))
			return err
		}
		b, err := yaml.Marshal(now)
		if err != nil {
			return err
		}
		v, err := yaml.Parse(string(b))
		if err != nil {
			return err
		}
		m, err := rn.Pipe(yaml.LookupCreate(yaml.MappingNode, parent...))
		if err != nil {
			return err
		}
		if cur := m.Field(field); cur != nil && cur.Value != nil {
			// Keep the comments around the value it replaces.
			o, n := cur.Value.YNode(), v.YNode()
			n.HeadComment, n.LineComment, n.FootComment = o.HeadComment, o.LineComment, o.FootComment
		}
		return m.PipeE(yaml.SetField(field, v))
	}
	steps := []error{
		set([]string{"metadata"}, "name", old.Metadata.Name, p.Name, p.Name == ""),
		set([]string{"spec"}, "upstream", old.Spec.Upstream, p.Upstream, p.Upstream == nil),
		set([]string{"spec"}, "upstreamLock", old.Spec.UpstreamLock, p.UpstreamLock, p.UpstreamLock == nil),
		set([]string{"spec"}, "readinessGates", old.Spec.ReadinessGates, p.ReadinessGates, len(p.ReadinessGates) == 0),
		set([]string{"spec"}, "requires", old.Spec.Requires, p.Requires, len(p.Requires) == 0),
		set([]string{"spec"}, "provides", old.Spec.Provides, p.Provides, len(p.Provides) == 0),
		set([]string{"status"}, "conditions", old.Status.Conditions, p.Conditions, len(p.Conditions) == 0),
	}
	if err := errors.Join(steps...); err != nil {
		return nil, fmt.Errorf("encode %s: %w", PackageFileName, err)
	}
	for _, f := range []string{"spec", "status"} {
		if m := rn.Field(f); m != nil && m.Value != nil && m.Value.YNode().Kind == yaml.MappingNode && len(m.Value.YNode().Content) == 0 {
			if _, err := rn.Pipe(yaml.Clear(f)); err != nil {
				return nil, err
			}
		}
	}
	s, err := rn.String()
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", PackageFileName, err)
	}
	return []byte(s), nil
}

// PackageRevisionInfo returns the Info that p records.
func (p *PackageFile) PackageRevisionInfo() Info {
	return Info{Upstream: p.Upstream, UpstreamLock: p.UpstreamLock,
		ReadinessGates: slices.Clone(p.ReadinessGates), Conditions: slices.Clone(p.Conditions)}
}
