package fnruntime

// apply-replacements, written for cad from two public documents: the
// catalog's apply-replacements README (v0.1.x: an ApplyReplacements object,
// fn.kpt.dev/v1alpha1, whose replacements field follows kustomize) and
// kustomize's replacements reference
// (kubectl.docs.kubernetes.io/references/kustomize/kustomization/replacements).
// What those documents leave open is decided here and said where it is
// decided.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const (
	replacementsKind       = "ApplyReplacements"
	replacementsAPIVersion = "fn.kpt.dev/v1alpha1"
	// defaultReplacementPath is the field a source reads and a target
	// writes when no path is given, as kustomize's field table says.
	defaultReplacementPath = "metadata.name"
)

// applyReplacements copies values between resources as the config's
// replacements say: each replacement reads one value (a field of the one
// resource its source selects) and writes it to the
// fieldPaths of every resource its targets select and do not reject.
// Replacements run in order, each seeing the writes of those before it.
// Every resource of the list is a candidate source and target, local
// config included. A config error, a source that selects no resource or
// more than one, or a field that cannot be read or written, is an error
// result, and then no resource is changed.
//
// Its output is bounded (see [Limits]): a field path of more than
// Limits.MaxPathDepth segments is refused as a config error, and every
// value written (and every field created on the way to it) is charged to
// the run's budget before it is written.
func applyReplacements(ctx context.Context, rl *pipeline.ResourceList) error {
	repls, err := decodeReplacements(rl.FunctionConfig)
	if err != nil {
		return configErr(err.Error())
	}
	l := limitsFrom(ctx)
	for i, r := range repls {
		paths := []fieldPath{r.fieldPath}
		for _, t := range r.targets {
			paths = append(paths, t.fieldPaths...)
		}
		for _, fp := range paths {
			if err := pathDepth(l, fmt.Sprintf("apply-replacements replacements[%d] field path", i), len(fp.segments)); err != nil {
				return &configError{msg: err.Error(), cause: err}
			}
		}
	}
	b := budgetFrom(ctx)
	// Work on copies so that a failing replacement leaves the list as it
	// was; on success the copies' content goes back into the items, whose
	// nodes the renderer tracks by identity.
	work := make([]*yaml.RNode, len(rl.Items))
	for i, it := range rl.Items {
		work[i] = it.Copy()
	}
	for i, r := range repls {
		if err := r.apply(ctx, b, work); err != nil {
			if ctx.Err() != nil || refusedByLimit(err) {
				return err
			}
			msg := err.Error()
			var sel selectionError
			if !errors.As(err, &sel) && len(repls) > 1 {
				// With several replacements, say which one failed.
				msg = fmt.Sprintf("replacements[%d]: %s", i, msg)
			}
			rl.Results = append(rl.Results, errorResult(msg))
			return nil
		}
	}
	for i, it := range rl.Items {
		*it.YNode() = *work[i].YNode()
	}
	return nil
}

// selectionError is a source selecting no resource or several. Its text
// is kept as kustomize prints it (cad's golden cases pin it), without the
// replacement's position.
type selectionError string

func (e selectionError) Error() string { return string(e) }

// replacement is one entry of the config's replacements list.
type replacement struct {
	// source selects the resource the value is read from.
	source resourceSelector
	// fieldPath is where in the source resource the value is.
	fieldPath fieldPath
	// split is the source's delimiter and index.
	split   splitOption
	targets []replacementTarget
}

// replacementTarget is one entry of a replacement's targets list.
type replacementTarget struct {
	selector   resourceSelector
	rejects    []resourceSelector
	fieldPaths []fieldPath
	split      splitOption
	create     bool
}

// splitOption is the delimiter and index pair of kustomize's options: a
// value that is one part of a delimited string.
type splitOption struct {
	delimiter string
	index     int
}

// resourceSelector picks resources: each field left empty matches
// anything; name and namespace match exactly; the label and annotation
// selectors are Kubernetes selector expressions.
type resourceSelector struct {
	group, version, kind, name, namespace string
	labelSelector, annotationSelector     string
}

// apply runs the replacement over items.
func (r *replacement) apply(ctx context.Context, b *budget, items []*yaml.RNode) error {
	value, err := r.sourceValue(items)
	if err != nil {
		return err
	}
	for ti, t := range r.targets {
		for _, item := range items {
			if err := ctx.Err(); err != nil {
				return err
			}
			ok, err := t.selects(item)
			if err != nil {
				return fmt.Errorf("targets[%d]: %w", ti, err)
			}
			if !ok {
				continue
			}
			for _, fp := range t.fieldPaths {
				if err := t.write(b, item, fp, value); err != nil {
					return fmt.Errorf("targets[%d]: %s: field %s: %w", ti, describeResource(item), fp.text, err)
				}
			}
		}
	}
	return nil
}

// sourceValue returns the value the replacement writes: the one field
// fieldPath finds in the one resource the source
// selects, cut by the source's delimiter and index when it has one.
func (r *replacement) sourceValue(items []*yaml.RNode) (*yaml.Node, error) {
	var found *yaml.RNode
	for _, item := range items {
		ok, err := r.source.matches(item)
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		if !ok {
			continue
		}
		if found != nil {
			return nil, selectionError("multiple matches for selector " + r.source.id())
		}
		found = item
	}
	if found == nil {
		return nil, selectionError("nothing selected by " + r.source.id())
	}
	nodes, err := r.fieldPath.find(found.YNode(), false)
	if err != nil {
		return nil, fmt.Errorf("source %s: field %s: %w", describeResource(found), r.fieldPath.text, err)
	}
	switch len(nodes) {
	case 0:
		return nil, fmt.Errorf("source %s has no field %s", describeResource(found), r.fieldPath.text)
	case 1:
	default:
		return nil, fmt.Errorf("source %s: field path %s finds %d fields, a source needs exactly one", describeResource(found), r.fieldPath.text, len(nodes))
	}
	v := nodes[0]
	if r.split.delimiter == "" {
		return v, nil
	}
	if v.Kind != yaml.ScalarNode {
		return nil, fmt.Errorf("source %s: field %s: delimiter %q splits scalars only, and the field is a %s", describeResource(found), r.fieldPath.text, r.split.delimiter, nodeKindName(v))
	}
	parts := strings.Split(v.Value, r.split.delimiter)
	if r.split.index < 0 || r.split.index >= len(parts) {
		return nil, fmt.Errorf("source %s: field %s splits by %q into %d parts, index %d is out of range", describeResource(found), r.fieldPath.text, r.split.delimiter, len(parts), r.split.index)
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: parts[r.split.index]}, nil
}

// selects reports whether item is one of the target's resources: matched
// by select and by none of reject.
func (t *replacementTarget) selects(item *yaml.RNode) (bool, error) {
	ok, err := t.selector.matches(item)
	if err != nil || !ok {
		return false, err
	}
	for _, rej := range t.rejects {
		if hit, err := rej.matches(item); err != nil || hit {
			return false, err
		}
	}
	return true, nil
}

// write puts value at every field fp finds in item. A field that is
// missing is skipped, or created when the target says create.
func (t *replacementTarget) write(b *budget, item *yaml.RNode, fp fieldPath, value *yaml.Node) error {
	if t.create {
		// What create may add on the way: one field per segment.
		var path int64
		for i, seg := range fp.segments {
			path += scalarSize(seg.key, i)
		}
		if err := b.charge(path); err != nil {
			return err
		}
	}
	nodes, err := fp.find(item.YNode(), t.create)
	if err != nil {
		return err
	}
	size := yamlSize(value, int64(len(fp.segments)))
	for _, n := range nodes {
		cost := size
		if t.split.delimiter != "" && n.Kind == yaml.ScalarNode {
			// The whole string is rewritten.
			cost += int64(len(n.Value) + len(t.split.delimiter))
		}
		if err := b.charge(cost); err != nil {
			return err
		}
		if err := t.set(n, value); err != nil {
			return err
		}
	}
	return nil
}

// set replaces the target field n with value. A scalar written over a
// scalar takes the value and its type (tag), and keeps the field's
// quoting style and comments; any other write replaces the field with a
// copy of value. With a delimiter, only the indexed part of the field's
// string changes: an index below zero puts the value before the string,
// one past its parts after it, each joined by the delimiter (so those
// two add to the string on every run, as documented).
func (t *replacementTarget) set(n, value *yaml.Node) error {
	created := n.Kind == 0
	if t.split.delimiter != "" {
		if created {
			// A field create added is an empty string, split like any
			// other: index 0 gives the value, a higher index puts
			// delimiters before it, so that a second run finds the value
			// where the first one put it.
			*n = yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString}
		}
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("delimiter %q splits scalars only, and the field is a %s", t.split.delimiter, nodeKindName(n))
		}
		if value.Kind != yaml.ScalarNode {
			return fmt.Errorf("delimiter %q: the value is a %s, and only a scalar can replace part of a string", t.split.delimiter, nodeKindName(value))
		}
		parts := strings.Split(n.Value, t.split.delimiter)
		switch i := t.split.index; {
		case i < 0:
			n.Value = value.Value + t.split.delimiter + n.Value
		case i >= len(parts):
			n.Value = n.Value + t.split.delimiter + value.Value
		default:
			parts[i] = value.Value
			n.Value = strings.Join(parts, t.split.delimiter)
		}
		n.Tag = yaml.NodeTagString
		return nil
	}
	if n.Kind == yaml.ScalarNode && value.Kind == yaml.ScalarNode {
		n.Value, n.Tag = value.Value, value.Tag
		return nil
	}
	head, line, foot := n.HeadComment, n.LineComment, n.FootComment
	*n = *yaml.CopyYNode(value)
	if !created && n.HeadComment == "" && n.LineComment == "" && n.FootComment == "" {
		n.HeadComment, n.LineComment, n.FootComment = head, line, foot
	}
	return nil
}

// matches reports whether item is selected. An invalid label or
// annotation selector is an error.
func (s *resourceSelector) matches(item *yaml.RNode) (bool, error) {
	group, version := groupVersion(item.GetApiVersion())
	switch {
	case s.group != "" && s.group != group,
		s.version != "" && s.version != version,
		s.kind != "" && s.kind != item.GetKind(),
		s.name != "" && s.name != item.GetName(),
		s.namespace != "" && s.namespace != item.GetNamespace():
		return false, nil
	}
	if s.labelSelector != "" {
		ok, err := item.MatchesLabelSelector(s.labelSelector)
		if err != nil {
			return false, fmt.Errorf("labelSelector %q: %v", s.labelSelector, err)
		}
		if !ok {
			return false, nil
		}
	}
	if s.annotationSelector != "" {
		ok, err := item.MatchesAnnotationSelector(s.annotationSelector)
		if err != nil {
			return false, fmt.Errorf("annotationSelector %q: %v", s.annotationSelector, err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// id names the selector as kustomize's messages do (a user of the catalog
// function sees it in "nothing selected by Secret.v1.[noGrp]/db.prod"):
// kind, version and group joined by dots, a slash, then name and
// namespace, each missing part as [noKind], [noVer], [noGrp], [noName]
// or [noNs].
func (s *resourceSelector) id() string {
	or := func(v, missing string) string {
		if v == "" {
			return missing
		}
		return v
	}
	return or(s.kind, "[noKind]") + "." + or(s.version, "[noVer]") + "." + or(s.group, "[noGrp]") +
		"/" + or(s.name, "[noName]") + "." + or(s.namespace, "[noNs]")
}

// describeResource names a resource in cad's messages: kind, then
// namespace/name or name.
func describeResource(n *yaml.RNode) string {
	name := n.GetName()
	if ns := n.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return n.GetKind() + " " + name
}

// fieldPath is a parsed field path: dot-separated segments, where "\."
// is a dot within a segment and a segment in brackets is taken whole
// ("[config.example.com/key]"), or, with an equals sign, picks list
// elements by a field ("[name=web]").
type fieldPath struct {
	text     string
	segments []pathSegment
}

// pathSegment is one step of a field path.
type pathSegment struct {
	// key is the segment's text: a mapping key, a list index or "*".
	key string
	// bracketed says the segment was written in brackets.
	bracketed bool
	// selKey and selValue are a bracketed key=value: on a list, the
	// elements whose field selKey is the scalar selValue.
	selKey, selValue string
	hasSel           bool
}

// parseFieldPath splits a field path into its segments. An empty path,
// an empty segment or an unclosed bracket is an error.
func parseFieldPath(text string) (fieldPath, error) {
	fp := fieldPath{text: text}
	if text == "" {
		return fp, fmt.Errorf("empty field path")
	}
	for i := 0; i <= len(text); {
		var seg pathSegment
		if i < len(text) && text[i] == '[' {
			end := strings.IndexByte(text[i:], ']')
			if end < 0 {
				return fp, fmt.Errorf("field path %q: no closing bracket", text)
			}
			inner := text[i+1 : i+end]
			i += end + 1
			if i < len(text) && text[i] != '.' {
				return fp, fmt.Errorf("field path %q: a bracketed segment must end at a dot", text)
			}
			i++
			seg = pathSegment{key: inner, bracketed: true}
			if k, v, ok := strings.Cut(inner, "="); ok {
				seg.selKey, seg.selValue, seg.hasSel = k, v, true
			}
		} else {
			var b strings.Builder
			for ; i < len(text) && text[i] != '.'; i++ {
				if text[i] == '\\' && i+1 < len(text) {
					i++
				}
				b.WriteByte(text[i])
			}
			i++
			seg = pathSegment{key: b.String()}
		}
		if seg.key == "" {
			return fp, fmt.Errorf("field path %q: empty segment", text)
		}
		fp.segments = append(fp.segments, seg)
	}
	return fp, nil
}

// find returns the fields the path reaches from n. Without create a
// missing field ends its branch of the walk; with create, missing
// mappings and keys are added, and a list element picked by key=value
// that is absent is appended with that field. A created last field is a
// node of kind 0 for the caller to fill.
func (fp fieldPath) find(n *yaml.Node, create bool) ([]*yaml.Node, error) {
	cur := []*yaml.Node{n}
	for si, seg := range fp.segments {
		last := si == len(fp.segments)-1
		var next []*yaml.Node
		for _, c := range cur {
			found, err := seg.step(c, create, last, fp.nextIsList(si))
			if err != nil {
				return nil, err
			}
			next = append(next, found...)
		}
		cur = next
	}
	return cur, nil
}

// nextIsList reports whether the segment after si steps into a list, so
// that a created field there is a sequence.
func (fp fieldPath) nextIsList(si int) bool {
	if si+1 >= len(fp.segments) {
		return false
	}
	s := fp.segments[si+1]
	if s.hasSel {
		return true
	}
	if s.bracketed {
		return false
	}
	return s.key == "*" || isInteger(s.key)
}

func isInteger(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// step takes one segment from c.
func (seg pathSegment) step(c *yaml.Node, create, last, nextIsList bool) ([]*yaml.Node, error) {
	if c.Kind == yaml.DocumentNode && len(c.Content) == 1 {
		c = c.Content[0]
	}
	if create && isNullNode(c) {
		// A null field becomes the container this segment needs: a list
		// for key=value, else a mapping (a number or * finds nothing in
		// a new list, so those leave it null).
		switch {
		case seg.hasSel:
			*c = yaml.Node{Kind: yaml.SequenceNode, Tag: yaml.NodeTagSeq}
		case seg.bracketed || seg.key != "*" && !isInteger(seg.key):
			*c = yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap}
		}
	}
	switch c.Kind {
	case yaml.MappingNode:
		if !seg.bracketed && seg.key == "*" {
			// The wildcard stands for list elements; in a mapping it
			// finds nothing and creates nothing ([*] is the key "*").
			return nil, nil
		}
		for i := 0; i+1 < len(c.Content); i += 2 {
			if c.Content[i].Value == seg.key {
				return []*yaml.Node{c.Content[i+1]}, nil
			}
		}
		if !create {
			return nil, nil
		}
		child := &yaml.Node{}
		if !last {
			child = &yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap}
			if nextIsList {
				child = &yaml.Node{Kind: yaml.SequenceNode, Tag: yaml.NodeTagSeq}
			}
		}
		c.Content = append(c.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: seg.key}, child)
		return []*yaml.Node{child}, nil
	case yaml.SequenceNode:
		switch {
		case seg.hasSel:
			var out []*yaml.Node
			for _, el := range c.Content {
				if v := mappingValue(el, seg.selKey); v != nil && v.Kind == yaml.ScalarNode && v.Value == seg.selValue {
					out = append(out, el)
				}
			}
			if len(out) == 0 && create {
				el := &yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap, Content: []*yaml.Node{
					{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: seg.selKey},
					{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: seg.selValue},
				}}
				c.Content = append(c.Content, el)
				out = append(out, el)
			}
			return out, nil
		case !seg.bracketed && seg.key == "*":
			return append([]*yaml.Node(nil), c.Content...), nil
		}
		i, err := strconv.Atoi(seg.key)
		if err != nil {
			return nil, fmt.Errorf("%q names a key, but the field there is a list (use a number, [key=value] or *)", seg.key)
		}
		if i < 0 || i >= len(c.Content) {
			if create {
				return nil, fmt.Errorf("list index %d is out of range (%d elements) and cannot be created", i, len(c.Content))
			}
			return nil, nil
		}
		return []*yaml.Node{c.Content[i]}, nil
	default:
		if create {
			return nil, fmt.Errorf("cannot create %q under a scalar", seg.key)
		}
		return nil, nil
	}
}

// nodeKindName names a node's kind in messages.
func nodeKindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "scalar"
}

func isNullNode(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == yaml.NodeTagNull
}

// mappingValue returns the value of key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// decodeReplacements reads the functionConfig: an ApplyReplacements
// object (fn.kpt.dev/v1alpha1) whose replacements field has kustomize's
// schema. No config, or one of another kind, is an error worded as
// v0.1.1 words it; a replacement that cannot run is an error worded by
// cad.
func decodeReplacements(fc *yaml.RNode) ([]replacement, error) {
	if fc.IsNilOrEmpty() {
		return nil, fmt.Errorf("FunctionConfig is missing. Expect `%s`", replacementsKind)
	}
	if fc.GetKind() != replacementsKind || fc.GetApiVersion() != replacementsAPIVersion {
		return nil, fmt.Errorf("received functionConfig of kind %s and apiVersion %s, only functionConfig of kind %s and apiVersion %s is supported",
			fc.GetKind(), fc.GetApiVersion(), replacementsKind, replacementsAPIVersion)
	}
	list := mappingValue(fc.YNode(), "replacements")
	if list == nil || isNullNode(list) {
		return nil, nil
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: replacements must be a list", replacementsKind)
	}
	out := make([]replacement, 0, len(list.Content))
	for i, el := range list.Content {
		r, err := decodeReplacement(el)
		if err != nil {
			return nil, fmt.Errorf("%s: replacements[%d]: %w", replacementsKind, i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func decodeReplacement(n *yaml.Node) (replacement, error) {
	var r replacement
	if n.Kind != yaml.MappingNode {
		return r, fmt.Errorf("must be a mapping")
	}
	if mappingValue(n, "path") != nil {
		return r, fmt.Errorf("path names a file of replacements, which a function cannot read; write the replacement inline")
	}
	if mappingValue(n, "sourceValue") != nil {
		// kustomize added sourceValue in v5.7.0 (2025); the replacements
		// of apply-replacements v0.1.x (2022) have none.
		return r, fmt.Errorf("sourceValue is not part of apply-replacements v0.1.x (kustomize added it in v5.7.0); copy the value from a resource with source")
	}
	src := mappingValue(n, "source")
	if src == nil || src.Kind != yaml.MappingNode {
		return r, fmt.Errorf("needs source, a mapping")
	}
	var err error
	if r.source, err = decodeSelector(src); err != nil {
		return r, fmt.Errorf("source: %w", err)
	}
	if r.source.labelSelector != "" || r.source.annotationSelector != "" {
		// kustomize's schema gives these to select and reject only.
		return r, fmt.Errorf("source: labelSelector and annotationSelector select targets; a source is chosen by group, version, kind, name and namespace")
	}
	path := defaultReplacementPath
	if p, err := stringField(src, "fieldPath"); err != nil {
		return r, fmt.Errorf("source: %w", err)
	} else if p != "" {
		path = p
	}
	if r.fieldPath, err = parseFieldPath(path); err != nil {
		return r, fmt.Errorf("source: %w", err)
	}
	if r.split, _, err = decodeOptions(src); err != nil {
		return r, fmt.Errorf("source: %w", err)
	}
	targets := mappingValue(n, "targets")
	if targets == nil || targets.Kind != yaml.SequenceNode || len(targets.Content) == 0 {
		return r, fmt.Errorf("needs a list of targets")
	}
	for i, tn := range targets.Content {
		t, err := decodeTarget(tn)
		if err != nil {
			return r, fmt.Errorf("targets[%d]: %w", i, err)
		}
		r.targets = append(r.targets, t)
	}
	return r, nil
}

func decodeTarget(n *yaml.Node) (replacementTarget, error) {
	var t replacementTarget
	if n.Kind != yaml.MappingNode {
		return t, fmt.Errorf("must be a mapping")
	}
	sel := mappingValue(n, "select")
	if sel == nil || sel.Kind != yaml.MappingNode {
		return t, fmt.Errorf("needs select, a mapping")
	}
	var err error
	if t.selector, err = decodeSelector(sel); err != nil {
		return t, fmt.Errorf("select: %w", err)
	}
	if rej := mappingValue(n, "reject"); rej != nil && !isNullNode(rej) {
		if rej.Kind != yaml.SequenceNode {
			return t, fmt.Errorf("reject must be a list")
		}
		for i, rn := range rej.Content {
			if rn.Kind != yaml.MappingNode {
				return t, fmt.Errorf("reject[%d] must be a mapping", i)
			}
			s, err := decodeSelector(rn)
			if err != nil {
				return t, fmt.Errorf("reject[%d]: %w", i, err)
			}
			t.rejects = append(t.rejects, s)
		}
	}
	paths := []string{defaultReplacementPath}
	if fps := mappingValue(n, "fieldPaths"); fps != nil && !isNullNode(fps) {
		if fps.Kind != yaml.SequenceNode {
			return t, fmt.Errorf("fieldPaths must be a list")
		}
		paths = nil
		for _, p := range fps.Content {
			if p.Kind != yaml.ScalarNode {
				return t, fmt.Errorf("fieldPaths must be strings")
			}
			paths = append(paths, p.Value)
		}
	}
	for _, p := range paths {
		fp, err := parseFieldPath(p)
		if err != nil {
			return t, err
		}
		t.fieldPaths = append(t.fieldPaths, fp)
	}
	if t.split, t.create, err = decodeOptions(n); err != nil {
		return t, err
	}
	return t, nil
}

// decodeOptions reads the options mapping of a source or target.
func decodeOptions(n *yaml.Node) (splitOption, bool, error) {
	var so splitOption
	opts := mappingValue(n, "options")
	if opts == nil || isNullNode(opts) {
		return so, false, nil
	}
	if opts.Kind != yaml.MappingNode {
		return so, false, fmt.Errorf("options must be a mapping")
	}
	var err error
	if so.delimiter, err = stringField(opts, "delimiter"); err != nil {
		return so, false, fmt.Errorf("options: %w", err)
	}
	if v := mappingValue(opts, "index"); v != nil && !isNullNode(v) {
		if v.Kind != yaml.ScalarNode || v.ShortTag() != yaml.NodeTagInt {
			return so, false, fmt.Errorf("options: index must be an integer, not %q", v.Value)
		}
		i, err := strconv.Atoi(v.Value)
		if err != nil {
			return so, false, fmt.Errorf("options: index %q: %v", v.Value, err)
		}
		so.index = i
	}
	create := false
	if v := mappingValue(opts, "create"); v != nil && !isNullNode(v) {
		if v.Kind != yaml.ScalarNode || v.ShortTag() != yaml.NodeTagBool {
			return so, false, fmt.Errorf("options: create must be true or false, not %q", v.Value)
		}
		create, _ = strconv.ParseBool(v.Value)
	}
	return so, create, nil
}

// decodeSelector reads the group, version, kind, name, namespace,
// labelSelector and annotationSelector of a source, select or reject.
func decodeSelector(n *yaml.Node) (resourceSelector, error) {
	var s resourceSelector
	for _, f := range []struct {
		key string
		dst *string
	}{
		{"group", &s.group}, {"version", &s.version}, {"kind", &s.kind},
		{"name", &s.name}, {"namespace", &s.namespace},
		{"labelSelector", &s.labelSelector}, {"annotationSelector", &s.annotationSelector},
	} {
		v, err := stringField(n, f.key)
		if err != nil {
			return s, err
		}
		*f.dst = v
	}
	return s, nil
}

// stringField returns the scalar at key of mapping n ("" when absent or
// null); a list or mapping there is an error.
func stringField(n *yaml.Node, key string) (string, error) {
	v := mappingValue(n, key)
	if v == nil || isNullNode(v) {
		return "", nil
	}
	if v.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("%s must be a string", key)
	}
	return v.Value, nil
}
