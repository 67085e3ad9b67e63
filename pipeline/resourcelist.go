package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/internal/yamlstyle"
	"github.com/configasdata/cad/revision"
)

// ResourceList wire format constants (config.kubernetes.io/v1).
const (
	ResourceListAPIVersion = "config.kubernetes.io/v1"
	ResourceListKind       = "ResourceList"
)

// Annotations that kpt and kyaml put on the items of a ResourceList. Path
// and index say where an item lives in its package; functions read them and
// set them on the items they generate.
const (
	PathAnnotation          = kioutil.PathAnnotation        // internal.config.kubernetes.io/path
	IndexAnnotation         = kioutil.IndexAnnotation       // internal.config.kubernetes.io/index
	LegacyPathAnnotation    = kioutil.LegacyPathAnnotation  // config.kubernetes.io/path
	LegacyIndexAnnotation   = kioutil.LegacyIndexAnnotation // config.kubernetes.io/index
	SeqIndentAnnotation     = kioutil.SeqIndentAnnotation   // internal.config.kubernetes.io/seqindent
	PackagePathAnnotation   = "internal.config.kubernetes.io/package-path"
	LocalConfigAnnotation   = "config.kubernetes.io/local-config"
	SaveOnFailureAnnotation = "kpt.dev/save-on-render-failure"
)

// ResourceList is the unit of work of a KRM function: the items it
// transforms, its configuration and the results it reports
// (config.kubernetes.io/v1 ResourceList). Items are kyaml nodes, so
// comments, field order and annotations (including
// internal.config.kubernetes.io/*) survive a round trip.
//
// A ResourceList is used by one goroutine at a time.
type ResourceList struct {
	// Items are the resources, in order.
	Items []*yaml.RNode
	// FunctionConfig is the function's configuration; nil when the step has
	// none.
	FunctionConfig *yaml.RNode
	// Results are the function's diagnostics.
	Results Results
	// PackageFiles are, for a function running in a render, the files of
	// the package whose pipeline runs it: the package's directory as the
	// render got it, subpackages included, paths relative to it. They are
	// the files before the pipeline ran (what a function changes is in
	// Items, not here), which is what functions that read non-KRM files of
	// the package need: charts, values files, templates. Nil outside a
	// render. They are not part of the wire format: a ResourceList
	// encoded for an exec or container function does not carry them.
	PackageFiles fs.FS
	// WriteFiles are non-KRM files an in-process mutator writes into the
	// package whose pipeline runs it (a README, say), by slash path
	// relative to that package's directory. When the step succeeds the
	// renderer writes them, replacing a file of the same path. A path that
	// is absolute, leaves the package or names a file the renderer reads as
	// KRM (Kptfile, *.yaml, *.yml, *.json) fails the step with
	// ErrBadOutput. A validator's are ignored. Like PackageFiles they are
	// not part of the wire format.
	WriteFiles map[string][]byte
}

// ParseResourceList decodes a ResourceList (or a List) in kpt's wire
// format. The annotations of the items are kept as they are.
//
// data is bounded as a function's output is (see Options.YAMLLimits): an
// alias bomb, deep nesting or a huge mapping is refused with a
// *revision.YAMLLimitError (matching ErrInvalidPackage) before it is
// read.
func ParseResourceList(data []byte) (*ResourceList, error) {
	if err := revision.CheckYAML(context.Background(), "ResourceList", data, resourceListLimits(nil)); err != nil {
		return nil, fmt.Errorf("parse ResourceList: %w", err)
	}
	r := &kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}
	items, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("parse ResourceList: %w", err)
	}
	rl := &ResourceList{Items: items, FunctionConfig: r.FunctionConfig}
	if r.Results != nil {
		res, err := ParseResults(r.Results)
		if err != nil {
			return nil, err
		}
		rl.Results = res
	}
	return rl, nil
}

// Encode writes rl in kpt's wire format: a config.kubernetes.io/v1
// ResourceList with items, functionConfig and results.
func (rl *ResourceList) Encode() ([]byte, error) {
	var buf bytes.Buffer
	w := kio.ByteWriter{
		Writer:                &buf,
		KeepReaderAnnotations: true,
		WrappingAPIVersion:    ResourceListAPIVersion,
		WrappingKind:          ResourceListKind,
		FunctionConfig:        rl.FunctionConfig,
	}
	if len(rl.Results) > 0 {
		n, err := rl.Results.node()
		if err != nil {
			return nil, err
		}
		w.Results = n
	}
	if err := w.Write(rl.Items); err != nil {
		return nil, fmt.Errorf("encode ResourceList: %w", err)
	}
	return buf.Bytes(), nil
}

// Severity is the severity of a [Result].
type Severity string

// Severities, as in the config.kubernetes.io/v1 result schema.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Result is one diagnostic of a function: data for the user, not a Go
// error. It has the schema of kpt's function results.
type Result struct {
	Message     string            `yaml:"message,omitempty" json:"message,omitempty"`
	Severity    Severity          `yaml:"severity,omitempty" json:"severity,omitempty"`
	ResourceRef *ResourceRef      `yaml:"resourceRef,omitempty" json:"resourceRef,omitempty"`
	Field       *Field            `yaml:"field,omitempty" json:"field,omitempty"`
	File        *File             `yaml:"file,omitempty" json:"file,omitempty"`
	Tags        map[string]string `yaml:"tags,omitempty" json:"tags,omitempty"`
}

// ResourceRef names the resource a [Result] is about. It is the type the
// Kptfile's render status uses, so results move there unchanged.
type ResourceRef = revision.ResourceRef

// Field names the field a [Result] is about.
type Field = revision.Field

// File names the file a [Result] is about.
type File = revision.File

// Results is a list of function results.
type Results []*Result

// HasErrors reports whether any result has severity error.
func (rs Results) HasErrors() bool {
	for _, r := range rs {
		if r.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Errors returns the results of severity error.
func (rs Results) Errors() Results {
	var out Results
	for _, r := range rs {
		if r.Severity == SeverityError {
			out = append(out, r)
		}
	}
	return out
}

// String formats the results one per line as kpt prints them
// ("[error] v1/ConfigMap/x: message").
func (rs Results) String() string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(r.String())
	}
	return b.String()
}

// String formats r as kpt prints it.
func (r *Result) String() string {
	sev := r.Severity
	if sev == "" {
		sev = SeverityInfo
	}
	s := "[" + string(sev) + "]"
	if r.ResourceRef != nil {
		s += " " + strings.Trim(r.ResourceRef.APIVersion+"/"+r.ResourceRef.Kind+"/"+r.ResourceRef.Name, "/")
	}
	if r.Field != nil && r.Field.Path != "" {
		s += " " + r.Field.Path
	}
	return s + ": " + r.Message
}

func (rs Results) node() (*yaml.RNode, error) {
	n, err := yamlstyle.ToNode([]*Result(rs))
	if err != nil {
		return nil, fmt.Errorf("encode results: %w", err)
	}
	return yaml.NewRNode(n), nil
}

// ParseResults decodes the results field of a ResourceList. It accepts a
// list of result items (Go SDK) and the legacy {items: [...]} wrapper (TS
// SDK), and migrates the legacy resourceRef.metadata and
// field.suggestedValue fields.
func ParseResults(n *yaml.RNode) (Results, error) {
	if n.IsNilOrEmpty() {
		return nil, nil
	}
	if n.YNode().Kind == yaml.MappingNode {
		if items := n.Field("items"); items != nil && !items.Value.IsNilOrEmpty() {
			n = items.Value
		}
	}
	s, err := n.String()
	if err != nil {
		return nil, err
	}
	var out Results
	if err := yaml.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("parse function results: %w", err)
	}
	elems, err := n.Elements()
	if err != nil {
		return out, nil
	}
	for i, e := range elems {
		if i >= len(out) || out[i] == nil {
			continue
		}
		if md, _ := e.Pipe(yaml.Lookup("resourceRef", "metadata")); md != nil {
			if out[i].ResourceRef == nil {
				out[i].ResourceRef = &ResourceRef{}
			}
			if v := md.Field("name"); v != nil {
				out[i].ResourceRef.Name = strings.TrimSpace(v.Value.YNode().Value)
			}
			if v := md.Field("namespace"); v != nil {
				if ns := strings.TrimSpace(v.Value.YNode().Value); ns != "" && ns != "''" {
					out[i].ResourceRef.Namespace = ns
				}
			}
		}
		if sv, _ := e.Pipe(yaml.Lookup("field", "suggestedValue")); sv != nil {
			if out[i].Field == nil {
				out[i].Field = &Field{}
			}
			str, _ := sv.String()
			out[i].Field.ProposedValue = strings.TrimSpace(str)
		}
	}
	return out, nil
}
