package fnruntime

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const (
	kptfileV1             = "kpt.dev/v1"
	setterDefPrefix       = "io.k8s.cli.setters."
	substitutionDefPrefix = "io.k8s.cli.substitutions."
	applySettersV02       = "gcr.io/kpt-fn/apply-setters:v0.2"
)

// fixKptfiles is the catalog's fix, which migrates kpt v0.x packages
// (Kptfile kpt.dev/v1alpha1) to kpt 1.0 as its documentation describes.
// For each Kptfile among the items (the step needs the meta resources):
// packageMetadata becomes info, upstream becomes upstream (resource-merge)
// and upstreamLock, dependencies are dropped, the OpenAPI setter
// definitions become an apply-setters:v0.2 mutator whose configMap holds
// the setters (list setters as "[a, b]"), function configs annotated
// config.kubernetes.io/function move to <name>.yaml beside the Kptfile
// and become mutators with that configPath, and the inventory is kept. In
// the package's resources, setter and substitution references in comments
// ({"$kpt-set":"x"}, {"$ref":"#/definitions/io.k8s.cli.setters.x"}) become
// `# kpt-set:` patterns. A kpt.dev/v1alpha2 Kptfile only gets its
// apiVersion updated; a kpt.dev/v1 one is left alone. Each change is an
// info result; no Kptfile is an error that fails the step.
func fixKptfiles(ctx context.Context, rl *pipeline.ResourceList) error {
	pkgs := map[string]*yaml.RNode{} // package dir -> Kptfile
	for _, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if it.GetKind() == "Kptfile" {
			pkgs[path.Dir(itemPath(it))] = it
		}
	}
	if len(pkgs) == 0 {
		return failWith(rl, "Kptfile not found in directory tree, make sure you specify '--include-meta-resources' flag")
	}
	pkgOf := func(p string) string {
		for d := path.Dir(p); ; d = path.Dir(d) {
			if _, ok := pkgs[d]; ok {
				return d
			}
			if d == "." || d == "/" || d == "" {
				return "."
			}
		}
	}
	f := &fixer{rl: rl}
	functions := map[string][]*yaml.RNode{}
	for _, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if it.GetKind() == "Kptfile" {
			continue
		}
		p := itemPath(it)
		pkg := pkgOf(p)
		if it.GetLabels()["cli-utils.sigs.k8s.io/inventory-id"] != "" {
			f.result(p, `Please refer to https://googlecontainertools.github.io/kpt/reference/live/alpha/, this package is using "inventory-object"`)
			continue
		}
		if kf := pkgs[pkg]; kf != nil && kf.GetApiVersion() != kptfileV1 && !strings.HasPrefix(kf.GetApiVersion(), "kpt.dev/v1alpha2") {
			if fn, err := f.moveFunctionConfig(it, pkg); err != nil {
				return failWith(rl, err.Error())
			} else if fn != nil {
				functions[pkg] = append(functions[pkg], fn)
			}
			defs := getMap(kf, "openAPI", "definitions")
			if defs != nil {
				if err := f.fixComments(it.YNode(), defs); err != nil {
					return failWith(rl, err.Error())
				}
			}
		}
	}
	dirs := make([]string, 0, len(pkgs))
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		kf := pkgs[d]
		p := itemPath(kf)
		switch api := kf.GetApiVersion(); {
		case api == kptfileV1:
			f.result(p, "This package is already fixed as it is on latest apiVersion "+kptfileV1)
		case strings.HasPrefix(api, "kpt.dev/v1alpha2"):
			kf.SetApiVersion(kptfileV1)
			f.result(p, "Updated apiVersion to "+kptfileV1)
		default:
			if err := f.fixV1alpha1(kf, functions[d]); err != nil {
				return failWith(rl, err.Error())
			}
		}
	}
	return nil
}

type fixer struct{ rl *pipeline.ResourceList }

func (f *fixer) result(file, msg string) {
	f.rl.Results = append(f.rl.Results, &pipeline.Result{Message: msg, Severity: pipeline.SeverityInfo, File: &pipeline.File{Path: file}})
}

// moveFunctionConfig turns a v0.x function config (annotated with its
// container image) into a mutator reading it from <name>.yaml in the
// package, moving the resource there.
func (f *fixer) moveFunctionConfig(it *yaml.RNode, pkg string) (*yaml.RNode, error) {
	anns := it.GetAnnotations()
	spec := anns[functionAnnotation]
	if spec == "" {
		spec = anns[legacyFunctionAnnotation]
	}
	if spec == "" {
		return nil, nil
	}
	sn, err := parseValue("function annotation of "+it.GetName(), spec)
	if err != nil {
		return nil, fmt.Errorf("function config %s: %w", it.GetName(), err)
	}
	image, _ := nestedString(sn, "container", "image")
	if image == "" {
		return nil, nil
	}
	file := it.GetName() + ".yaml"
	for _, k := range []string{functionAnnotation, legacyFunctionAnnotation, kioutil.LegacyPathAnnotation, kioutil.LegacyIndexAnnotation, kioutil.IndexAnnotation} {
		if err := it.PipeE(yaml.ClearAnnotation(k)); err != nil {
			return nil, err
		}
	}
	if err := it.PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, path.Join(pkg, file))); err != nil {
		return nil, err
	}
	// Built field by field: a map's order would be random, and kpt writes
	// image first.
	fn := yaml.NewMapRNode(nil)
	if err := fn.PipeE(yaml.SetField("image", yaml.NewStringRNode(image))); err != nil {
		return nil, err
	}
	if err := fn.PipeE(yaml.SetField("configPath", yaml.NewStringRNode(file))); err != nil {
		return nil, err
	}
	return fn, nil
}

// fixComments rewrites the setter references of v0.x comments.
func (f *fixer) fixComments(n *yaml.Node, defs *yaml.RNode) error {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if err := f.fixComments(c, defs); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.SequenceNode {
				if name, ok := oldSetterRef(k.LineComment); ok {
					k.LineComment = "# kpt-set: ${" + strings.TrimPrefix(strings.TrimPrefix(name, setterDefPrefix), substitutionDefPrefix) + "}"
				}
			}
			if err := f.fixComments(v, defs); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		name, ok := oldSetterRef(n.LineComment)
		if !ok {
			return nil
		}
		pattern, err := setterPatternFor(name, defs, map[string]bool{})
		if err != nil {
			return err
		}
		if pattern != "" {
			n.LineComment = "# kpt-set: " + pattern
		}
	}
	return nil
}

// oldSetterRef parses a v0.x setter comment: {"$kpt-set":"name"} gives
// "name", {"$ref":"#/definitions/<def>"} gives "<def>".
func oldSetterRef(comment string) (string, bool) {
	c := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(comment), "#"))
	if !strings.HasPrefix(c, "{") {
		return "", false
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(c), &m); err != nil {
		return "", false
	}
	if v := m["$kpt-set"]; v != "" {
		return v, true
	}
	if v, ok := strings.CutPrefix(m["$ref"], "#/definitions/"); ok && v != "" {
		return v, true
	}
	if v := m["$openapi"]; v != "" {
		return v, true
	}
	return "", false
}

// setterPatternFor returns the kpt-set pattern of a setter or
// substitution reference ("name", or a full definition name).
func setterPatternFor(ref string, defs *yaml.RNode, visiting map[string]bool) (string, error) {
	var def *yaml.RNode
	var defName string
	for _, cand := range []string{ref, setterDefPrefix + ref, substitutionDefPrefix + ref} {
		if d := getMap(defs, cand); d != nil {
			def, defName = d, cand
			break
		}
	}
	if def == nil {
		return "", nil
	}
	if s := getMap(def, "x-k8s-cli", "setter"); s != nil {
		name, _ := nestedString(s, "name")
		return "${" + name + "}", nil
	}
	sub := getMap(def, "x-k8s-cli", "substitution")
	if sub == nil {
		return "", nil
	}
	if visiting[defName] {
		return "", fmt.Errorf("cyclic substitution detected with name %s", strings.TrimPrefix(defName, substitutionDefPrefix))
	}
	visiting[defName] = true
	pattern, _ := nestedString(sub, "pattern")
	for _, v := range getSlice(sub, "values") {
		marker, _ := nestedString(v, "marker")
		r, _ := nestedString(v, "ref")
		target, ok := strings.CutPrefix(r, "#/definitions/")
		if !ok {
			return "", fmt.Errorf("missing reference on substitution %s", strings.TrimPrefix(defName, substitutionDefPrefix))
		}
		val, err := setterPatternFor(target, defs, visiting)
		if err != nil {
			return "", err
		}
		pattern = strings.ReplaceAll(pattern, marker, val)
	}
	return pattern, nil
}

// fixV1alpha1 rewrites a v1alpha1 Kptfile as v1, in place.
func (f *fixer) fixV1alpha1(kf *yaml.RNode, functions []*yaml.RNode) error {
	p := itemPath(kf)
	out := yaml.NewMapRNode(nil)
	set := func(field string, v *yaml.RNode) error { return out.PipeE(yaml.SetField(field, v)) }
	if err := set("apiVersion", yaml.NewStringRNode(kptfileV1)); err != nil {
		return err
	}
	if err := set("kind", yaml.NewStringRNode("Kptfile")); err != nil {
		return err
	}
	if md := kf.Field("metadata"); md != nil {
		if err := set("metadata", md.Value); err != nil {
			return err
		}
	}
	if pm := getMap(kf, "packageMetadata"); pm != nil {
		info := yaml.NewMapRNode(nil)
		for _, m := range [][2]string{{"url", "site"}, {"email", "emails"}, {"license", "license"}, {"shortDescription", "description"}, {"tags", "keywords"}, {"man", "man"}} {
			fv := pm.Field(m[0])
			if fv == nil || fv.Value.IsNil() {
				continue
			}
			v := fv.Value
			if m[0] == "email" {
				if v.YNode().Value == "" {
					continue
				}
				v = yaml.NewListRNode(v.YNode().Value)
			}
			if err := info.PipeE(yaml.SetField(m[1], v)); err != nil {
				return err
			}
		}
		if err := set("info", info); err != nil {
			return err
		}
		f.result(p, `Transformed "packageMetadata" to "info"`)
	}
	if up := getMap(kf, "upstream"); up != nil {
		typ, _ := nestedString(up, "type")
		upstream := yaml.NewMapRNode(nil)
		lock := yaml.NewMapRNode(nil)
		git := yaml.NewMapRNode(nil)
		gitLock := yaml.NewMapRNode(nil)
		for _, k := range []string{"repo", "directory", "ref", "commit"} {
			v, ok := nestedString(up, "git", k)
			if !ok {
				continue
			}
			if k != "commit" {
				if err := git.PipeE(yaml.SetField(k, yaml.NewStringRNode(v))); err != nil {
					return err
				}
			}
			if err := gitLock.PipeE(yaml.SetField(k, yaml.NewStringRNode(v))); err != nil {
				return err
			}
		}
		for _, step := range []struct {
			m     *yaml.RNode
			field string
			v     *yaml.RNode
		}{
			{upstream, "type", yaml.NewStringRNode(typ)}, {upstream, "git", git}, {upstream, "updateStrategy", yaml.NewStringRNode("resource-merge")},
			{lock, "type", yaml.NewStringRNode(typ)}, {lock, "git", gitLock},
		} {
			if err := step.m.PipeE(yaml.SetField(step.field, step.v)); err != nil {
				return err
			}
		}
		if err := set("upstream", upstream); err != nil {
			return err
		}
		if err := set("upstreamLock", lock); err != nil {
			return err
		}
		f.result(p, `Transformed "upstream" to "upstream" and "upstreamLock"`)
	}
	setters := yaml.NewMapRNode(nil)
	if defs := getMap(kf, "openAPI", "definitions"); defs != nil {
		var err error
		_ = defs.VisitFields(func(node *yaml.MapNode) error {
			if !strings.HasPrefix(node.Key.YNode().Value, setterDefPrefix) || err != nil {
				return nil
			}
			s := getMap(node.Value, "x-k8s-cli", "setter")
			if s == nil {
				err = fmt.Errorf("missing x-k8s-cli.setter for %s", node.Key.YNode().Value)
				return nil
			}
			name, _ := nestedString(s, "name")
			value, _ := nestedString(s, "value")
			if list := getSlice(s, "listValues"); len(list) > 0 {
				vals := make([]string, len(list))
				for i, l := range list {
					vals[i] = l.YNode().Value
				}
				value = "[" + strings.Join(vals, ", ") + "]"
			}
			v := yaml.NewStringRNode(value)
			v.YNode().Style = yaml.DoubleQuotedStyle
			err = setters.PipeE(yaml.SetField(name, v))
			return nil
		})
		if err != nil {
			return err
		}
	}
	var mutators []*yaml.Node
	if len(setters.YNode().Content) > 0 {
		sortMapping(setters.YNode())
		fn := yaml.NewMapRNode(&map[string]string{"image": applySettersV02})
		if err := fn.PipeE(yaml.SetField("configMap", setters)); err != nil {
			return err
		}
		mutators = append(mutators, fn.YNode())
	}
	for _, fn := range functions {
		img, _ := nestedString(fn, "image")
		f.result(p, fmt.Sprintf("Added %q to mutators list, please move it to validators section if it is a validator function", img))
		mutators = append(mutators, fn.YNode())
	}
	if len(mutators) > 0 {
		seq := yaml.NewRNode(&yaml.Node{Kind: yaml.SequenceNode, Content: mutators})
		pl := yaml.NewMapRNode(nil)
		if err := pl.PipeE(yaml.SetField("mutators", seq)); err != nil {
			return err
		}
		if err := set("pipeline", pl); err != nil {
			return err
		}
		if len(setters.YNode().Content) > 0 {
			f.result(p, `Transformed "openAPI" definitions to "apply-setters" function`)
		}
	}
	if inv := getMap(kf, "inventory"); inv != nil {
		if err := set("inventory", inv); err != nil {
			return err
		}
	}
	kf.SetYNode(out.YNode())
	return nil
}

// sortMapping orders a mapping's fields by key.
func sortMapping(m *yaml.Node) {
	type kv struct{ k, v *yaml.Node }
	pairs := make([]kv, 0, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		pairs = append(pairs, kv{m.Content[i], m.Content[i+1]})
	}
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].k.Value < pairs[j].k.Value })
	m.Content = m.Content[:0]
	for _, p := range pairs {
		m.Content = append(m.Content, p.k, p.v)
	}
}
