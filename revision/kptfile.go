package revision

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/internal/imageref"
	"github.com/configasdata/cad/internal/yamlstyle"
)

// KptfileError reports a Kptfile that cannot be read or is not valid. It
// matches [ErrInvalid] with errors.Is and unwraps to the YAML decoder's
// error, if any.
//
// A validation error (from [Kptfile.Validate]) has Field set and prints as
// kpt prints it:
//
//	Kptfile is invalid:
//	Field: `pipeline.mutators[1].configPath`
//	Value: "../x.yaml"
//	Reason: path must not be outside the package
//
// Other errors print as "Kptfile " followed by Reason, e.g. `Kptfile has an
// old version ("v1alpha1") of the Kptfile schema`.
type KptfileError struct {
	// Field is the offending field of a validation error, e.g.
	// "pipeline.mutators[0]"; empty for errors found while decoding.
	Field string
	// Value is the offending value, if there is one.
	Value string
	// Reason says what is wrong.
	Reason string
	// Err is the underlying decoder error, if any.
	Err error
}

// Error formats the error as described on [KptfileError].
func (e *KptfileError) Error() string {
	if e.Field == "" {
		return "Kptfile " + e.Reason
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Kptfile is invalid:\nField: `%s`\n", e.Field)
	if e.Value != "" {
		fmt.Fprintf(&b, "Value: %q\n", e.Value)
	}
	fmt.Fprintf(&b, "Reason: %s", e.Reason)
	return b.String()
}

// Is reports whether target is [ErrInvalid].
func (e *KptfileError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the underlying decoder error, or nil.
func (e *KptfileError) Unwrap() error { return e.Err }

// kptfileDoc is what ParseKptfile keeps in Kptfile.doc so that Encode can
// write changes back onto the document the Kptfile was read from. It is
// never modified after parsing; Encode works on a copy.
type kptfileDoc struct {
	data      []byte      // the bytes parsed
	rn        *yaml.RNode // the parsed document (a DocumentNode)
	old       *yaml.Node  // canonical encoding of the Kptfile as parsed
	seqIndent yaml.SequenceIndentStyle
}

const kptGroup = "kpt.dev"

// ParseKptfile decodes a kpt.dev/v1 Kptfile as kpt does: it first checks
// apiVersion and kind, refusing the old kpt.dev/v1alpha1 and v1alpha2
// schemas and any other resource type, then decodes the first YAML document
// refusing unknown fields. The returned Kptfile remembers the parsed
// document, so [Kptfile.Encode] keeps its comments and formatting. Every
// error is a *KptfileError matching [ErrInvalid]; for a file over a bound
// of the default [YAMLLimits], it wraps the *YAMLLimitError.
func ParseKptfile(data []byte) (*Kptfile, error) {
	if le := checkParse(KptfileName, data); le != nil {
		return nil, &KptfileError{Reason: le.reason(), Err: le}
	}
	rn, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	if err := checkKptfileVersion(rn); err != nil {
		return nil, err
	}
	var kf Kptfile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&kf); err != nil {
		return nil, &KptfileError{Reason: "can't be read: " + err.Error(), Err: err}
	}
	old, err := canonicalNode(&kf)
	if err != nil {
		return nil, &KptfileError{Reason: "can't be read: " + err.Error(), Err: err}
	}
	kf.doc = &kptfileDoc{
		data:      bytes.Clone(data),
		rn:        rn,
		old:       old,
		seqIndent: seqIndentStyle(rn.Document()),
	}
	return &kf, nil
}

// parseDocument parses the first YAML document of data.
func parseDocument(data []byte) (*yaml.RNode, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &KptfileError{Reason: "can't be read: empty document"}
		}
		return nil, &KptfileError{Reason: "can't be read: " + err.Error(), Err: err}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &KptfileError{Reason: "can't be read: not a YAML document"}
	}
	return yaml.NewRNode(&doc), nil
}

// checkKptfileVersion refuses anything but kpt.dev/v1 Kptfile, as kpt's
// CheckKptfileVersion does.
func checkKptfileVersion(rn *yaml.RNode) error {
	meta, err := rn.GetMeta()
	if err != nil {
		return &KptfileError{Reason: "can't be read: " + err.Error(), Err: err}
	}
	group, version, ok := strings.Cut(meta.APIVersion, "/")
	if !ok {
		group, version = "", group
	}
	switch {
	case meta.APIVersion == KptfileAPIVersion && meta.Kind == KptfileKind:
		return nil
	case group == kptGroup && meta.Kind == KptfileKind && (version == "v1alpha1" || version == "v1alpha2"):
		return &KptfileError{Reason: fmt.Sprintf("has an old version (%q) of the Kptfile schema", version)}
	default:
		return &KptfileError{Reason: fmt.Sprintf("has an unknown resource type (%q)", group+"/"+version+", Kind="+meta.Kind)}
	}
}

// seqIndentStyle returns the indentation of the first block sequence under
// a mapping key in doc, or wide, kpt's style, when there is none.
func seqIndentStyle(doc *yaml.Node) yaml.SequenceIndentStyle {
	var walk func(n *yaml.Node) yaml.SequenceIndentStyle
	walk = func(n *yaml.Node) yaml.SequenceIndentStyle {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 && v.Line > k.Line {
					if v.Column == k.Column {
						return yaml.CompactSequenceStyle
					}
					return yaml.WideSequenceStyle
				}
			}
		}
		for _, c := range n.Content {
			if s := walk(c); s != "" {
				return s
			}
		}
		return ""
	}
	if s := walk(doc); s != "" {
		return s
	}
	return yaml.WideSequenceStyle
}

// NewKptfile returns a kpt.dev/v1 Kptfile for a package called name, with
// nothing else set. Its Encode writes kpt's canonical form.
func NewKptfile(name string) *Kptfile {
	return &Kptfile{
		APIVersion: KptfileAPIVersion,
		Kind:       KptfileKind,
		Metadata:   ObjectMeta{Name: name},
	}
}

// Encode returns kf as YAML.
//
// For a Kptfile read with [ParseKptfile], the changes made to kf since are
// written onto the document it was read from: unchanged parts keep their
// comments, field order, quoting and sequence indentation, changed values
// are updated in place, new fields are inserted in kpt's field order and
// removed fields are deleted. With no change the result is the parsed bytes.
// In the rare case the result would not read back as kf (a change under a
// YAML merge key, for instance), Encode writes the canonical form instead.
//
// For a Kptfile built in code, Encode writes the form kpt writes: fields in
// kpt's order (apiVersion, kind, metadata, upstream, upstreamLock, info,
// pipeline, inventory, status), wide sequence indentation, no comments. An
// empty APIVersion or Kind is written as kpt.dev/v1 Kptfile.
//
// Encode does not modify kf. It returns an error only when a value cannot
// be encoded as YAML.
func (kf *Kptfile) Encode() ([]byte, error) {
	d, _ := kf.doc.(*kptfileDoc)
	if d == nil {
		return kf.encodeCanonical()
	}
	cur, err := canonicalNode(kf)
	if err != nil {
		return nil, fmt.Errorf("encode Kptfile: %w", err)
	}
	if equalNode(d.old, cur) {
		return bytes.Clone(d.data), nil
	}
	doc := copyNode(d.rn.Document())
	doc.Content[0] = mergeNode(doc.Content[0], d.old, cur)
	yamlstyle.Fix(doc)
	out, err := yamlstyle.Encode(doc, d.seqIndent)
	if err != nil {
		return nil, fmt.Errorf("encode Kptfile: %w", err)
	}
	// Make sure the result reads back as kf; if not, prefer correctness
	// over formatting.
	var back Kptfile
	dec := yaml.NewDecoder(bytes.NewReader(out))
	dec.KnownFields(true)
	if err := dec.Decode(&back); err == nil {
		if n, err := canonicalNode(&back); err == nil && equalNode(n, cur) {
			return out, nil
		}
	}
	return kf.encodeCanonical()
}

// encodeCanonical writes kf as kpt writes a Kptfile.
func (kf *Kptfile) encodeCanonical() ([]byte, error) {
	c := *kf
	c.doc = nil
	if c.APIVersion == "" {
		c.APIVersion = KptfileAPIVersion
	}
	if c.Kind == "" {
		c.Kind = KptfileKind
	}
	b, err := yamlstyle.Marshal(&c, yaml.WideSequenceStyle)
	if err != nil {
		return nil, fmt.Errorf("encode Kptfile: %w", err)
	}
	return b, nil
}

// Condition returns the status condition of the given type and whether
// there is one.
func (kf *Kptfile) Condition(conditionType string) (Condition, bool) {
	if kf.Status == nil {
		return Condition{}, false
	}
	for _, c := range kf.Status.Conditions {
		if c.Type == conditionType {
			return c, true
		}
	}
	return Condition{}, false
}

// SetCondition sets c in kf's status: it replaces the condition of the same
// type in place, or appends c when there is none.
func (kf *Kptfile) SetCondition(c Condition) {
	if kf.Status == nil {
		kf.Status = &Status{}
	}
	for i := range kf.Status.Conditions {
		if kf.Status.Conditions[i].Type == c.Type {
			kf.Status.Conditions[i] = c
			return
		}
	}
	kf.Status.Conditions = append(kf.Status.Conditions, c)
}

// RemoveCondition removes the status condition of the given type, and
// reports whether there was one.
func (kf *Kptfile) RemoveCondition(conditionType string) bool {
	if kf.Status == nil {
		return false
	}
	for i, c := range kf.Status.Conditions {
		if c.Type == conditionType {
			kf.Status.Conditions = append(kf.Status.Conditions[:i:i], kf.Status.Conditions[i+1:]...)
			return true
		}
	}
	return false
}

// Validate checks the pipeline as kpt does before it renders, as far as
// that needs no files: every function has exactly one of image and exec,
// the image is a valid OCI reference, at most one of configMap and
// configPath is set, and configPath is a non-empty relative path inside the
// package. Whether configPath names a file of the package is for the caller
// to check. Mutators are checked before validators; the first problem is
// returned as a *KptfileError, with kpt's field path and message, matching
// [ErrInvalid].
func (kf *Kptfile) Validate() error {
	if kf.Pipeline == nil {
		return nil
	}
	for i := range kf.Pipeline.Mutators {
		if err := kf.Pipeline.Mutators[i].validate("mutators", i); err != nil {
			return err
		}
	}
	for i := range kf.Pipeline.Validators {
		if err := kf.Pipeline.Validators[i].validate("validators", i); err != nil {
			return err
		}
	}
	return nil
}

func (f *Function) validate(list string, i int) error {
	field := fmt.Sprintf("pipeline.%s[%d]", list, i)
	switch {
	case f.Image == "" && f.Exec == "":
		// sic: kpt's message has this typo.
		return &KptfileError{Field: field, Reason: "must specify a functon (`image` or `exec`) to execute"}
	case f.Image != "" && f.Exec != "":
		return &KptfileError{Field: field, Reason: "must not specify both `image` and `exec` at the same time"}
	}
	if f.Image != "" {
		if err := validateImageReference(f.Image); err != nil {
			return &KptfileError{
				Field:  field + ".image",
				Value:  f.Image,
				Reason: fmt.Sprintf("function image reference %q is invalid: %s", f.Image, err),
			}
		}
	}
	if len(f.ConfigMap) != 0 && f.ConfigPath != "" {
		return &KptfileError{Field: field, Reason: "functionConfig must not specify both `configMap` and `configPath` at the same time"}
	}
	if f.ConfigPath != "" {
		if reason := configPathProblem(f.ConfigPath); reason != "" {
			return &KptfileError{Field: field + ".configPath", Value: f.ConfigPath, Reason: reason}
		}
	}
	return nil
}

// configPathProblem is kpt's validateFnConfigPathSyntax.
func configPathProblem(p string) string {
	if strings.TrimSpace(p) == "" {
		return "path must not be empty"
	}
	p = path.Clean(p)
	if path.IsAbs(p) {
		return "path must be relative"
	}
	if strings.Contains(p, "..") {
		return "path must not be outside the package"
	}
	return ""
}

// validateImageReference is distribution/reference.Parse without the
// result, with its error messages (internal/imageref).
func validateImageReference(s string) error { return imageref.Validate(s) }

// canonicalNode returns v as a YAML node tree, as the encoder writes it
// (through yamlstyle, which keeps every string readable back).
func canonicalNode(v any) (*yaml.Node, error) {
	return yamlstyle.ToNode(v)
}

// equalNode reports whether a and b hold the same data, ignoring style,
// comments and positions. Both are canonical encodings.
func equalNode(a, b *yaml.Node) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Kind != b.Kind || len(a.Content) != len(b.Content) {
		return false
	}
	if a.Kind == yaml.ScalarNode && (a.Value != b.Value || a.ShortTag() != b.ShortTag()) {
		return false
	}
	for i := range a.Content {
		if !equalNode(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}

// mergeNode changes dst, a node of a parsed document whose data is old, so
// that its data is cur, and returns it or the node to use in its place.
// old and cur are canonical encodings; old may be nil when dst holds a
// zero value that the encoder omits.
func mergeNode(dst, old, cur *yaml.Node) *yaml.Node {
	if old != nil && equalNode(old, cur) {
		return dst
	}
	if old == nil {
		old = &yaml.Node{Kind: dst.Kind}
	}
	switch {
	case dst.Kind == yaml.MappingNode && old.Kind == yaml.MappingNode && cur.Kind == yaml.MappingNode:
		mergeMapping(dst, old, cur)
		return dst
	case dst.Kind == yaml.SequenceNode && old.Kind == yaml.SequenceNode && cur.Kind == yaml.SequenceNode &&
		len(dst.Content) == len(old.Content):
		mergeSequence(dst, old, cur)
		return dst
	case dst.Kind == yaml.ScalarNode && cur.Kind == yaml.ScalarNode:
		dst.Value = cur.Value
		dst.Tag = cur.Tag
		if dst.Style&yaml.TaggedStyle != 0 && cur.ShortTag() != old.ShortTag() {
			dst.Style &^= yaml.TaggedStyle
		}
		return dst
	}
	n := copyNode(cur)
	n.HeadComment, n.LineComment, n.FootComment = dst.HeadComment, dst.LineComment, dst.FootComment
	return n
}

// mergeMapping merges cur into the mapping dst (see mergeNode).
func mergeMapping(dst, old, cur *yaml.Node) {
	var content []*yaml.Node
	present := map[string]bool{}
	for i := 0; i+1 < len(dst.Content); i += 2 {
		k, v := dst.Content[i], dst.Content[i+1]
		ov, cv := lookup(old, k.Value), lookup(cur, k.Value)
		switch {
		case cv == nil && ov == nil:
			// A zero value the encoder omits, or a merge key: keep.
		case cv == nil:
			// Removed. A comment that follows the pair, such as a
			// closing comment of the file, stays where it was.
			if k.FootComment != "" {
				if len(content) > 0 {
					prev := content[len(content)-2]
					prev.FootComment = strings.TrimPrefix(prev.FootComment+"\n"+k.FootComment, "\n")
				} else {
					dst.FootComment = strings.TrimPrefix(dst.FootComment+"\n"+k.FootComment, "\n")
				}
			}
			continue
		default:
			v = mergeNode(v, ov, cv)
		}
		present[k.Value] = true
		content = append(content, k, v)
	}
	// Insert new keys after the nearest preceding key of cur's (kpt's)
	// order that dst has, or first when there is none.
	for i := 0; i+1 < len(cur.Content); i += 2 {
		k := cur.Content[i]
		if present[k.Value] {
			continue
		}
		at := 0
		for j := i - 2; j >= 0; j -= 2 {
			if idx := keyIndex(content, cur.Content[j].Value); idx >= 0 {
				at = idx + 2
				break
			}
		}
		content = append(content[:at], append([]*yaml.Node{copyNode(k), copyNode(cur.Content[i+1])}, content[at:]...)...)
		present[k.Value] = true
	}
	if len(dst.Content) == 0 {
		dst.Style &^= yaml.FlowStyle
	}
	dst.Content = content
}

func keyIndex(content []*yaml.Node, key string) int {
	for i := 0; i+1 < len(content); i += 2 {
		if content[i].Value == key {
			return i
		}
	}
	return -1
}

func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	if i := keyIndex(m.Content, key); i >= 0 {
		return m.Content[i+1]
	}
	return nil
}

// mergeSequence merges cur into the sequence dst (see mergeNode). Items of
// cur are matched with items of old first by equal data, then by their
// identifying field (name, type or conditionType), then by position, so
// that reordering, inserting or removing list items keeps the comments of
// the items that stay.
func mergeSequence(dst, old, cur *yaml.Node) {
	used := make([]bool, len(old.Content))
	match := func(i int, nv *yaml.Node) int {
		if i < len(old.Content) && !used[i] && equalNode(old.Content[i], nv) {
			return i
		}
		for j, ov := range old.Content {
			if !used[j] && equalNode(ov, nv) {
				return j
			}
		}
		if key := itemKey(nv); key != "" {
			for j, ov := range old.Content {
				if !used[j] && itemKey(ov) == key {
					return j
				}
			}
		}
		if i < len(old.Content) && !used[i] && itemKey(old.Content[i]) == "" && itemKey(nv) == "" {
			return i
		}
		return -1
	}
	content := make([]*yaml.Node, 0, len(cur.Content))
	for i, nv := range cur.Content {
		if j := match(i, nv); j >= 0 {
			used[j] = true
			content = append(content, mergeNode(dst.Content[j], old.Content[j], nv))
		} else {
			content = append(content, copyNode(nv))
		}
	}
	if len(dst.Content) == 0 {
		dst.Style &^= yaml.FlowStyle
	}
	dst.Content = content
}

// itemKey returns the identifying field of a list item: a function's or
// step's name, a condition's type or a readiness gate's condition type.
func itemKey(n *yaml.Node) string {
	for _, k := range []string{"name", "type", "conditionType"} {
		if v := lookup(n, k); v != nil && v.Kind == yaml.ScalarNode && v.Value != "" {
			return k + "=" + v.Value
		}
	}
	return ""
}

// copyNode deep-copies a node tree, keeping aliases pointing into the copy.
func copyNode(n *yaml.Node) *yaml.Node {
	seen := map[*yaml.Node]*yaml.Node{}
	var cp func(*yaml.Node) *yaml.Node
	cp = func(n *yaml.Node) *yaml.Node {
		if n == nil {
			return nil
		}
		if c, ok := seen[n]; ok {
			return c
		}
		c := *n
		seen[n] = &c
		if n.Content != nil {
			c.Content = make([]*yaml.Node, len(n.Content))
			for i, ch := range n.Content {
				c.Content[i] = cp(ch)
			}
		}
		c.Alias = cp(n.Alias)
		return &c
	}
	return cp(n)
}
