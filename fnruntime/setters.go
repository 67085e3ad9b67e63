package fnruntime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// setterVisitor walks an item as the catalog's setter functions do:
// every mapping (with the path to it) and every scalar value, keys
// excluded, depth first in document order.
type setterVisitor interface {
	mapping(n *yaml.Node, path string)
	scalar(n *yaml.Node, path string)
}

func walkSetters(v setterVisitor, n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walkSetters(v, c, path)
		}
	case yaml.MappingNode:
		v.mapping(n, path)
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkSetters(v, n.Content[i+1], path+"."+n.Content[i].Value)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			walkSetters(v, c, fmt.Sprintf("%s[%d]", path, i))
		}
	case yaml.ScalarNode:
		v.scalar(n, path)
	}
}

// sortedValues returns the values of a sequence's scalar elements,
// sorted.
func sortedValues(seq *yaml.Node) []string {
	out := make([]string, 0, len(seq.Content))
	for _, c := range seq.Content {
		out = append(out, c.Value)
	}
	sort.Strings(out)
	return out
}

// listSetters is the catalog's list-setters: it reports every setter, one
// info result "Name: N, Value: V, Type: T, Count: C" per setter sorted by
// name. Setters come from the apply-setters mutators of the root Kptfile
// (configMap, or the configPath file; a value that parses as a YAML list
// is an array setter; count 0 until a field uses it) and from the
// `# kpt-set:` comments of the items' fields (the value a scalar field's
// pattern gives, its YAML type; a list field's sorted values, type
// array). No setter at all is a warning "no setters found".
func listSetters(ctx context.Context, rl *pipeline.ResourceList) error {
	ls := &setterLister{scalars: map[string]*listedSetter{}, arrays: map[string]*listedSetter{}}
	ls.fromKptfile(rl.Items)
	for _, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		walkSetters(ls, it.YNode(), "")
	}
	var all []*listedSetter
	for _, s := range ls.arrays {
		all = append(all, s)
	}
	for _, s := range ls.scalars {
		all = append(all, s)
	}
	if len(all) == 0 {
		rl.Results = append(rl.Results, &pipeline.Result{Message: "no setters found", Severity: pipeline.SeverityWarning})
		return nil
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].name != all[j].name {
			return all[i].name < all[j].name
		}
		return all[i].typ == "array"
	})
	for _, s := range all {
		rl.Results = append(rl.Results, &pipeline.Result{Message: fmt.Sprintf("Name: %s, Value: %s, Type: %s, Count: %d", s.name, s.value, s.typ, s.count)})
	}
	return nil
}

type listedSetter struct {
	name, value, typ string
	count            int
}

type setterLister struct {
	scalars, arrays map[string]*listedSetter
}

func (ls *setterLister) fromKptfile(items []*yaml.RNode) {
	var kf *yaml.RNode
	for _, it := range items {
		if itemPath(it) == "Kptfile" {
			kf = it
		}
	}
	if kf == nil {
		return
	}
	setters := map[string]string{}
	for _, m := range getSlice(kf, "pipeline", "mutators") {
		img, _ := nestedString(m, "image")
		if !strings.Contains(img, "apply-setters") {
			continue
		}
		if cm := getMap(m, "configMap"); cm != nil {
			for k, v := range stringMap(m, "configMap") {
				setters[k] = v
			}
		} else if p, _ := nestedString(m, "configPath"); p != "" {
			for _, it := range items {
				if itemPath(it) == p {
					for k, v := range it.GetDataMap() {
						setters[k] = v
					}
				}
			}
		}
	}
	for name, v := range setters {
		// A value over the YAML bounds is listed as a string.
		if n, err := parseValue("setter "+name, v); err == nil && n.YNode().Kind == yaml.SequenceNode {
			vals := make([]string, 0, len(n.YNode().Content))
			for _, c := range n.YNode().Content {
				s, _ := yaml.NewRNode(c).String()
				vals = append(vals, strings.ReplaceAll(s, "\n", ""))
			}
			ls.arrays[name] = &listedSetter{name: name, value: "[" + strings.Join(vals, ", ") + "]", typ: "array"}
			continue
		}
		ls.scalars[name] = &listedSetter{name: name, value: v, typ: "str"}
	}
}

func (ls *setterLister) mapping(n *yaml.Node, _ string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.SequenceNode {
			continue
		}
		comment := k.LineComment
		if v.Style == yaml.FlowStyle {
			comment = v.LineComment
		}
		pattern := setterPattern(comment)
		if pattern == "" {
			continue
		}
		name := cleanSetter(pattern)
		if s, ok := ls.arrays[name]; ok {
			s.count++
			continue
		}
		ls.arrays[name] = &listedSetter{name: name, value: "[" + strings.Join(sortedValues(v), ", ") + "]", typ: "array", count: 1}
	}
}

func (ls *setterLister) scalar(n *yaml.Node, _ string) {
	pattern := setterPattern(n.LineComment)
	if pattern == "" {
		return
	}
	typ := strings.TrimPrefix(n.ShortTag(), "!!")
	for name, value := range currentSetterValues(pattern, n.Value) {
		if s, ok := ls.scalars[name]; ok {
			if s.typ == "str" && typ != "str" {
				s.typ = typ
			}
			s.count++
			continue
		}
		ls.scalars[name] = &listedSetter{name: name, value: value, typ: typ, count: 1}
	}
}

// createSetters is the catalog's create-setters: each key of the
// ConfigMap config is a setter name and its value the field value to
// parameterise. A value that parses as a YAML list is an array setter: a
// list field whose sorted values equal the setter's sorted values gets
// `# kpt-set: ${name}` on its key (a flow-style list becomes block
// style). Other values are scalar setters: every single-line scalar field
// containing one or more of them (longest setter values first) gets the
// comment with those parts replaced by ${name}, so "nginx:1.16.1" with
// tag=1.16.1 gets `# kpt-set: nginx:${tag}`. Each comment added is an
// info result naming the field and file. An empty config, or no field
// matching any setter, is an error that fails the step.
func createSetters(ctx context.Context, rl *pipeline.ResourceList) error {
	fail := func(msg string) error { return kyamlConfigErr("failed to create setters: " + msg) }
	var data map[string]string
	if !rl.FunctionConfig.IsNilOrEmpty() {
		data = rl.FunctionConfig.GetDataMap()
	}
	if len(data) == 0 {
		return fail("config map cannot be empty")
	}
	cs := &setterCreator{}
	names := make([]string, 0, len(data))
	for k := range data {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		v := data[name]
		n, err := parseValue("setter "+name, v)
		if le := (*revision.YAMLLimitError)(nil); errors.As(err, &le) {
			return fail(err.Error())
		}
		if err != nil {
			return fail("parsing error")
		}
		switch n.YNode().Kind {
		case yaml.SequenceNode:
			cs.arrays = append(cs.arrays, arraySetter{name: name, values: sortedValues(n.YNode())})
		case yaml.ScalarNode:
			cs.scalars = append(cs.scalars, scalarSetter{name: name, value: v})
		}
	}
	sort.SliceStable(cs.scalars, func(i, j int) bool { return len(cs.scalars[i].value) > len(cs.scalars[j].value) })
	var args []string
	for _, s := range cs.scalars {
		args = append(args, s.value, "${"+s.name+"}")
	}
	cs.replacer = strings.NewReplacer(args...)
	for _, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		cs.file = itemPath(it)
		walkSetters(cs, it.YNode(), "")
	}
	if len(cs.results) == 0 {
		return failWith(rl, "failed to create setters: no matches for the input list of setters")
	}
	rl.Results = append(rl.Results, cs.results...)
	return nil
}

type scalarSetter struct{ name, value string }

type arraySetter struct {
	name   string
	values []string
}

type setterCreator struct {
	scalars  []scalarSetter
	arrays   []arraySetter
	replacer *strings.Replacer
	file     string
	results  pipeline.Results
}

func (cs *setterCreator) record(path, value, comment string) {
	cs.results = append(cs.results, &pipeline.Result{
		Message: fmt.Sprintf("Added line comment %q for field with value %q", comment, value),
		Field:   &pipeline.Field{Path: strings.TrimPrefix(path, ".")},
		File:    &pipeline.File{Path: cs.file},
	})
}

func (cs *setterCreator) mapping(n *yaml.Node, path string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.SequenceNode {
			continue
		}
		values := sortedValues(v)
		target := v
		if v.Style&yaml.FlowStyle == 0 {
			target = k
		} else if cs.anyScalarIn(values) {
			v.Style &^= yaml.FlowStyle
			target = k
		}
		for _, as := range cs.arrays {
			if !equalStrings(values, as.values) {
				continue
			}
			if target.Style&yaml.FlowStyle != 0 && len(values) > 0 {
				target.Style &^= yaml.FlowStyle
				target = k
			}
			target.LineComment = "kpt-set: ${" + as.name + "}"
			cs.record(path+"."+k.Value, fmt.Sprint(values), target.LineComment)
			break
		}
	}
}

func (cs *setterCreator) anyScalarIn(values []string) bool {
	for _, v := range values {
		for _, s := range cs.scalars {
			if strings.Contains(v, s.value) {
				return true
			}
		}
	}
	return false
}

func (cs *setterCreator) scalar(n *yaml.Node, path string) {
	if strings.Contains(n.Value, "\n") || isPathAnnotationField(path) {
		return
	}
	out := cs.replacer.Replace(n.Value)
	if out == n.Value {
		return
	}
	n.LineComment = "kpt-set: " + out
	cs.record(path, n.Value, n.LineComment)
}

// isPathAnnotationField reports the annotations kpt adds to items for
// the function run (path, index, ids): not fields of the resource.
func isPathAnnotationField(path string) bool {
	rest, ok := strings.CutPrefix(path, ".metadata.annotations.")
	if !ok {
		return false
	}
	switch rest {
	case kioutil.LegacyPathAnnotation, kioutil.LegacyIndexAnnotation, kioutil.LegacyIdAnnotation:
		return true
	}
	return strings.HasPrefix(rest, "internal.config.kubernetes.io/")
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
