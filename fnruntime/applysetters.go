package fnruntime

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// setterCommentPrefix marks a field whose value a setter owns.
const setterCommentPrefix = "# kpt-set: "

var setterRef = regexp.MustCompile(`\$\{([^}]*)\}`)

type setter struct{ name, value string }

// applySetters is the catalog's apply-setters: the functionConfig's data
// (a ConfigMap's, usually) maps setter names to values, and every field
// with a line comment `# kpt-set: <pattern>` whose pattern references one
// of them gets the pattern with ${name} replaced by the values. Setters
// the config does not give keep the part of the current value they match
// (pattern "${image}:${tag}" with only tag given keeps the image); a
// pattern left with unresolved setters is an error. A sequence whose key
// carries `# kpt-set: ${name}` (or a flow sequence carrying it itself) is
// replaced by the value parsed as a YAML list, and an empty value gives
// `[]`. Each change is an info result "set field value to <value>" with
// its field path and file; no change gives "no matches for input
// setter(s)". A set scalar loses its tag, so the value's type is
// re-inferred, as the catalog does.
func applySetters(ctx context.Context, rl *pipeline.ResourceList) error {
	var setters []setter
	if !rl.FunctionConfig.IsNilOrEmpty() {
		for k, v := range rl.FunctionConfig.GetDataMap() {
			setters = append(setters, setter{k, v})
		}
	}
	sort.Slice(setters, func(i, j int) bool { return setters[i].name < setters[j].name })
	as := &setterApplier{setters: setters}
	for _, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		as.file, _, _ = kioutil.GetFileAnnotations(it)
		if err := as.walk(it.YNode(), ""); err != nil {
			msg := "failed to apply setters: " + err.Error()
			rl.Results = append(rl.Results, errorResult(msg))
			return &pipeline.FunctionError{ExitCode: 1, Stderr: err.Error(), Err: err}
		}
	}
	if len(as.results) == 0 {
		rl.Results = append(rl.Results, &pipeline.Result{Message: "no matches for input setter(s)"})
	}
	rl.Results = append(rl.Results, as.results...)
	return nil
}

type setterApplier struct {
	setters []setter
	file    string
	results pipeline.Results
}

func (as *setterApplier) record(path, value string) {
	as.results = append(as.results, &pipeline.Result{
		Message: fmt.Sprintf("set field value to %q", value),
		Field:   &pipeline.Field{Path: path},
		File:    &pipeline.File{Path: as.file},
	})
}

func (as *setterApplier) walk(n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := as.walk(c, path); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		if err := as.mapping(n, path); err != nil {
			return err
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := as.walk(n.Content[i+1], path+"."+n.Content[i].Value); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := as.walk(c, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		return as.scalar(n, path)
	}
	return nil
}

func (as *setterApplier) mapping(n *yaml.Node, path string) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if val.Kind != yaml.SequenceNode {
			continue
		}
		comment := key.LineComment
		if val.Style == yaml.FlowStyle {
			comment = val.LineComment
		}
		pattern := setterPattern(comment)
		if pattern == "" || !as.shouldSet(pattern) {
			continue
		}
		if refs := setterRef.FindAllString(pattern, -1); len(refs) != 1 || !strings.HasPrefix(pattern, "${") || !strings.HasSuffix(pattern, "}") {
			return fmt.Errorf("invalid setter pattern for array node: %q", pattern)
		}
		sv := as.value(pattern)
		fieldPath := strings.TrimPrefix(path+"."+key.Value, ".")
		if sv == "" {
			val.Content = []*yaml.Node{}
			val.Style = yaml.FlowStyle
			val.LineComment = comment
			key.LineComment = ""
			as.record(fieldPath, sv)
			continue
		}
		rn, err := parseValue("value of "+pattern, sv)
		if le := (*revision.YAMLLimitError)(nil); errors.As(err, &le) {
			return err
		}
		if err != nil || rn.YNode().Kind != yaml.SequenceNode {
			return fmt.Errorf("input to array setter must be an array of values, but found %q", sv)
		}
		val.Content = rn.YNode().Content
		key.LineComment = comment
		val.Style = yaml.FoldedStyle
		as.record(fieldPath, sv)
	}
	return nil
}

func (as *setterApplier) scalar(n *yaml.Node, path string) error {
	pattern := setterPattern(n.LineComment)
	if pattern == "" || !as.shouldSet(pattern) {
		return nil
	}
	out := pattern
	for _, s := range as.setters {
		out = strings.ReplaceAll(out, "${"+s.name+"}", s.value)
	}
	for name, v := range currentSetterValues(pattern, n.Value) {
		out = strings.ReplaceAll(out, "${"+name+"}", v)
	}
	if urs := setterRef.FindAllString(out, -1); len(urs) > 0 {
		return fmt.Errorf("values for setters %v must be provided", urs)
	}
	n.Value = out
	if out == "" {
		n.Style = yaml.DoubleQuotedStyle
	}
	n.Tag = yaml.NodeTagEmpty
	as.record(strings.TrimPrefix(path, "."), out)
	return nil
}

func (as *setterApplier) shouldSet(pattern string) bool {
	for _, s := range as.setters {
		if strings.Contains(pattern, "${"+s.name+"}") {
			return true
		}
	}
	return false
}

func (as *setterApplier) value(pattern string) string {
	name := cleanSetter(pattern)
	for _, s := range as.setters {
		if s.name == name {
			return s.value
		}
	}
	return ""
}

func setterPattern(comment string) string {
	rest, ok := strings.CutPrefix(comment, setterCommentPrefix)
	if !ok {
		return ""
	}
	return strings.TrimSpace(rest)
}

func cleanSetter(s string) string {
	s = strings.TrimSpace(s)
	return strings.TrimSuffix(strings.TrimPrefix(s, "${"), "}")
}

// currentSetterValues derives the values of a pattern's setters from a
// field's current value (pattern "${a}.${b}", value "x.y" gives a=x, b=y);
// none when they cannot all be derived.
func currentSetterValues(pattern, value string) map[string]string {
	res := map[string]string{}
	urs := setterRef.FindAllString(pattern, -1)
	re := regexp.QuoteMeta(pattern)
	for _, name := range urs {
		re = strings.ReplaceAll(re, regexp.QuoteMeta(name), `(?P<x>.*)`)
	}
	r, err := regexp.Compile(re)
	if err != nil {
		return res
	}
	m := r.FindStringSubmatch(value)
	if len(m) == 0 || len(m)-1 != len(urs) {
		return res
	}
	for i, v := range m[1:] {
		if v == "" {
			return map[string]string{}
		}
		res[cleanSetter(urs[i])] = v
	}
	return res
}
