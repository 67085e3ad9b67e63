package fnruntime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/resid"
	kyamlutils "sigs.k8s.io/kustomize/kyaml/utils"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The types of kustomize's replacements (sigs.k8s.io/kustomize/api/types),
// on kyaml's resid, with the same YAML fields.
type (
	replacement struct {
		Source  *sourceSelector   `yaml:"source,omitempty"`
		Targets []*targetSelector `yaml:"targets,omitempty"`
	}
	sourceSelector struct {
		resid.ResId `yaml:",inline,omitempty"`
		FieldPath   string        `yaml:"fieldPath,omitempty"`
		Options     *fieldOptions `yaml:"options,omitempty"`
	}
	targetSelector struct {
		Select     *resSelector   `yaml:"select,omitempty"`
		Reject     []*resSelector `yaml:"reject,omitempty"`
		FieldPaths []string       `yaml:"fieldPaths,omitempty"`
		Options    *fieldOptions  `yaml:"options,omitempty"`
	}
	resSelector struct {
		resid.ResId        `yaml:",inline,omitempty"`
		AnnotationSelector string `yaml:"annotationSelector,omitempty"`
		LabelSelector      string `yaml:"labelSelector,omitempty"`
	}
	fieldOptions struct {
		Delimiter string `yaml:"delimiter,omitempty"`
		Index     int    `yaml:"index,omitempty"`
		Encoding  string `yaml:"encoding,omitempty"`
		Create    bool   `yaml:"create,omitempty"`
	}
)

// defaultReplacementFieldPath is kustomize's default source and target
// field.
const defaultReplacementFieldPath = "metadata.name"

// applyReplacements is the catalog's apply-replacements: an
// ApplyReplacements (fn.kpt.dev/v1alpha1) functionConfig whose
// `replacements` have kustomize's semantics. Each replacement copies the
// value at source.fieldPath (default metadata.name) of the one resource
// the source selects (group, version, kind, name, namespace; an error when
// none or several match), optionally the options.index-th part of it split
// by options.delimiter, to every fieldPath of every resource a target
// selects (ids as the source, plus annotationSelector and labelSelector)
// and none of its reject selectors matches. Field paths are dotted, with
// [key.with.dots], [name=value] list entries, indexes and "*" wildcards;
// options.create creates missing fields; a target delimiter replaces the
// options.index-th part of the target value (prefix when negative, suffix
// when past the end). A scalar target keeps its type except that a string
// source keeps the target a string, as the catalog fixes up. Resources
// renamed by kustomize are also matched by their previous ids.
//
// This is a port of kustomize's api/filters/replacement on kyaml, without
// the kustomize api module.
func applyReplacements(_ context.Context, rl *pipeline.ResourceList) error {
	fail := func(err error) error {
		rl.Results = append(rl.Results, errorResult(err.Error()))
		return sdkFailure()
	}
	fc := rl.FunctionConfig
	if fc.IsNilOrEmpty() {
		return fail(errors.New("FunctionConfig is missing. Expect `ApplyReplacements`"))
	}
	if fc.GetKind() != "ApplyReplacements" || fc.GetApiVersion() != "fn.kpt.dev/v1alpha1" {
		return fail(fmt.Errorf("received functionConfig of kind %s and apiVersion %s, only functionConfig of kind %s and apiVersion %s is supported",
			fc.GetKind(), fc.GetApiVersion(), "ApplyReplacements", "fn.kpt.dev/v1alpha1"))
	}
	var cfg struct {
		Replacements []replacement `yaml:"replacements,omitempty"`
	}
	s, err := fc.String()
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal([]byte(s), &cfg); err != nil {
		return fail(fmt.Errorf("unable to convert functionConfig to %s:\n%w", "replacements", err))
	}
	// The catalog applies the filter to copies and restores string typing
	// by looking at the original resources.
	originals := make([]*yaml.RNode, len(rl.Items))
	for i, it := range rl.Items {
		originals[i] = it.Copy()
	}
	if err := replaceAll(rl.Items, cfg.Replacements); err != nil {
		return fail(err)
	}
	preserveStringTyping(rl.Items, originals, cfg.Replacements)
	return nil
}

func replaceAll(nodes []*yaml.RNode, rs []replacement) error {
	for i := range rs {
		r := &rs[i]
		if r.Source == nil || r.Targets == nil {
			return errors.New("replacements must specify a source and at least one target")
		}
		value, err := replacementValue(nodes, r)
		if err != nil {
			return err
		}
		if err := applyReplacement(nodes, value, r.Targets); err != nil {
			return err
		}
	}
	return nil
}

func replacementValue(nodes []*yaml.RNode, r *replacement) (*yaml.RNode, error) {
	source, err := selectSourceNode(nodes, r.Source)
	if err != nil {
		return nil, err
	}
	if r.Source.FieldPath == "" {
		r.Source.FieldPath = defaultReplacementFieldPath
	}
	rn, err := source.Pipe(yaml.Lookup(kyamlutils.SmarterPathSplitter(r.Source.FieldPath, ".")...))
	if err != nil {
		return nil, err
	}
	if rn.IsNilOrEmpty() {
		return nil, fmt.Errorf("fieldPath `%s` is missing for replacement source %s", r.Source.FieldPath, r.Source.ResId)
	}
	opts := r.Source.Options
	if opts == nil || opts.Delimiter == "" {
		return rn, nil
	}
	if rn.YNode().Kind != yaml.ScalarNode {
		return nil, errors.New("delimiter option can only be used with scalar nodes")
	}
	parts := strings.Split(yaml.GetValue(rn), opts.Delimiter)
	if opts.Index >= len(parts) || opts.Index < 0 {
		return nil, fmt.Errorf("options.index %d is out of bounds for value %s", opts.Index, yaml.GetValue(rn))
	}
	n := rn.Copy()
	n.YNode().Value = parts[opts.Index]
	return n, nil
}

func selectSourceNode(nodes []*yaml.RNode, sel *sourceSelector) (*yaml.RNode, error) {
	var match *yaml.RNode
	for _, n := range nodes {
		ids, err := resIds(n)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if id.IsSelectedBy(sel.ResId) {
				if match != nil {
					return nil, fmt.Errorf("multiple matches for selector %s", sel.ResId)
				}
				match = n
				break
			}
		}
	}
	if match == nil {
		return nil, fmt.Errorf("nothing selected by %s", sel.ResId)
	}
	return match, nil
}

func applyReplacement(nodes []*yaml.RNode, value *yaml.RNode, targets []*targetSelector) error {
	for _, t := range targets {
		if t.Select == nil {
			return errors.New("target must specify resources to select")
		}
		if len(t.FieldPaths) == 0 {
			t.FieldPaths = []string{defaultReplacementFieldPath}
		}
		for _, n := range nodes {
			ids, err := resIds(n)
			if err != nil {
				return err
			}
			ok, err := selectByAnnoAndLabel(n, t)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			for i := range ids {
				if ids[i].IsSelectedBy(t.Select.ResId) && !rejectID(t.Reject, ids[i]) {
					if err := applyToNode(n, value, t); err != nil {
						return err
					}
					break
				}
			}
		}
	}
	return nil
}

func selectByAnnoAndLabel(n *yaml.RNode, t *targetSelector) (bool, error) {
	if ok, err := matchesAnnoAndLabel(n, t.Select); !ok || err != nil {
		return false, err
	}
	for _, r := range t.Reject {
		if r.AnnotationSelector == "" && r.LabelSelector == "" {
			continue
		}
		if m, err := matchesAnnoAndLabel(n, r); m || err != nil {
			return false, err
		}
	}
	return true, nil
}

func matchesAnnoAndLabel(n *yaml.RNode, s *resSelector) (bool, error) {
	a, err := n.MatchesAnnotationSelector(s.AnnotationSelector)
	if err != nil {
		return false, err
	}
	l, err := n.MatchesLabelSelector(s.LabelSelector)
	if err != nil {
		return false, err
	}
	return a && l, nil
}

func rejectID(rejects []*resSelector, id resid.ResId) bool {
	for _, r := range rejects {
		if !r.ResId.IsEmpty() && id.IsSelectedBy(r.ResId) {
			return true
		}
	}
	return false
}

func applyToNode(node, value *yaml.RNode, t *targetSelector) error {
	for _, fp := range t.FieldPaths {
		path := kyamlutils.SmarterPathSplitter(fp, ".")
		var target *yaml.RNode
		var err error
		if t.Options != nil && t.Options.Create {
			for _, f := range path {
				if f == "*" {
					return errors.New("cannot support create option in a multi-value target")
				}
			}
			target, err = node.Pipe(yaml.LookupCreate(value.YNode().Kind, path...))
		} else {
			target, err = node.Pipe(&yaml.PathMatcher{Path: path})
		}
		if err != nil {
			return err
		}
		if target == nil {
			continue
		}
		if len(target.YNode().Content) == 0 {
			if err := setTargetValue(t.Options, target, value); err != nil {
				return err
			}
			continue
		}
		for _, c := range target.YNode().Content {
			if err := setTargetValue(t.Options, yaml.NewRNode(c), value); err != nil {
				return err
			}
		}
	}
	return nil
}

func setTargetValue(opts *fieldOptions, t, value *yaml.RNode) error {
	value = value.Copy()
	if opts != nil && opts.Delimiter != "" {
		if t.YNode().Kind != yaml.ScalarNode {
			return errors.New("delimiter option can only be used with scalar nodes")
		}
		tv := strings.Split(t.YNode().Value, opts.Delimiter)
		v := yaml.GetValue(value)
		switch {
		case opts.Index < 0:
			tv = append([]string{v}, tv...)
		case opts.Index >= len(tv):
			tv = append(tv, v)
		default:
			tv[opts.Index] = v
		}
		value.YNode().Value = strings.Join(tv, opts.Delimiter)
	}
	if t.YNode().Kind == yaml.ScalarNode {
		// Only the value: the target keeps its type (int <-> string).
		t.YNode().Value = value.YNode().Value
	} else {
		t.SetYNode(value.YNode())
	}
	return nil
}

// Kustomize's build annotations for a resource's previous ids.
const (
	prevNamesAnnotation      = "internal.config.kubernetes.io/previousNames"
	prevKindsAnnotation      = "internal.config.kubernetes.io/previousKinds"
	prevNamespacesAnnotation = "internal.config.kubernetes.io/previousNamespaces"
)

// resIds is kustomize's MakeResIds: the current id, then previous ones.
func resIds(n *yaml.RNode) ([]resid.ResId, error) {
	group, version := resid.ParseGroupVersion(n.GetApiVersion())
	gvk := resid.Gvk{Group: group, Version: version, Kind: n.GetKind()}
	ids := []resid.ResId{resid.NewResIdWithNamespace(gvk, n.GetName(), n.GetNamespace())}
	a := n.GetAnnotations()
	if _, ok := a[prevNamesAnnotation]; !ok {
		return ids, nil
	}
	names := strings.Split(a[prevNamesAnnotation], ",")
	nss := strings.Split(a[prevNamespacesAnnotation], ",")
	kinds := strings.Split(a[prevKindsAnnotation], ",")
	if len(names) != len(nss) || len(names) != len(kinds) {
		return nil, errors.New("number of previous names, number of previous namespaces, number of previous kinds not equal")
	}
	for i := range names {
		g := gvk
		g.Kind = kinds[i]
		ids = append(ids, resid.NewResIdWithNamespace(g, names[i], nss[i]))
	}
	return ids, nil
}

// preserveStringTyping is the catalog's fix-up: a target scalar of a
// string-typed or quoted source takes the source's tag and style.
func preserveStringTyping(nodes, originals []*yaml.RNode, rs []replacement) {
	for i := range rs {
		r := &rs[i]
		if r.Source == nil || r.Targets == nil {
			continue
		}
		src := findSourceNode(originals, r.Source)
		if src == nil || src.YNode().Kind != yaml.ScalarNode {
			continue
		}
		if src.YNode().Tag != yaml.NodeTagString && src.YNode().Style != yaml.DoubleQuotedStyle && src.YNode().Style != yaml.SingleQuotedStyle {
			continue
		}
		for _, t := range r.Targets {
			if t.Select == nil {
				continue
			}
			for _, n := range nodes {
				if !matchesResID(n, t.Select.ResId) {
					continue
				}
				for _, fp := range t.FieldPaths {
					f, err := n.Pipe(yaml.Lookup(kyamlutils.SmarterPathSplitter(fp, ".")...))
					if err != nil || f == nil {
						continue
					}
					if f.YNode().Kind == yaml.ScalarNode {
						f.YNode().Tag = src.YNode().Tag
						f.YNode().Style = src.YNode().Style
					}
				}
			}
		}
	}
}

func findSourceNode(nodes []*yaml.RNode, s *sourceSelector) *yaml.RNode {
	for _, n := range nodes {
		if !matchesResID(n, s.ResId) {
			continue
		}
		fp := s.FieldPath
		if fp == "" {
			fp = defaultReplacementFieldPath
		}
		rn, err := n.Pipe(yaml.Lookup(kyamlutils.SmarterPathSplitter(fp, ".")...))
		if err != nil || rn.IsNilOrEmpty() {
			return nil
		}
		return rn
	}
	return nil
}

func matchesResID(n *yaml.RNode, id resid.ResId) bool {
	group, version := resid.ParseGroupVersion(n.GetApiVersion())
	nid := resid.NewResIdWithNamespace(resid.Gvk{Group: group, Version: version, Kind: n.GetKind()}, n.GetName(), n.GetNamespace())
	return nid.IsSelectedBy(id)
}
