package fnruntime

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/configasdata/cad/internal/k8sschema"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// kubeconform validates resources against the OpenAPI schema of a
// Kubernetes version, as the kubeconform image validates them against
// its JSON schemas, with kubeconform's messages: "missing properties
// 'selector', 'template'", "got string, want null or integer" (an
// optional field may also be null) and, with strict, "additionalProperties
// 'x' not allowed". Each violation is an error result naming the resource,
// the field (a dotted path, list indexes as numbers) and the file, so the
// step fails. The ConfigMap config takes strict ("true": unknown fields
// are errors), skip_kinds (comma separated kinds not validated),
// ignore_missing_schemas (default "true": kinds without a schema, custom
// resources and the Kptfile, are skipped; "false" makes them errors) and
// kubernetes_version: cad ships the schemas of Kubernetes 1.37 (v1.37.2,
// the default, also for "master") and 1.21 (kyaml's, v1.21.2); a version
// of another minor is refused with an error result naming those, as is
// schema_location (there is no download in-process).
func kubeconform(ctx context.Context, rl *pipeline.ResourceList) error {
	cfg := map[string]string{}
	if !rl.FunctionConfig.IsNilOrEmpty() {
		cfg = rl.FunctionConfig.GetDataMap()
	}
	if cfg["schema_location"] != "" {
		return kyamlConfigErr("schema_location is not supported in-process: cad validates against the Kubernetes schemas it bundles")
	}
	ks, err := kubeSchemaFor(cfg["kubernetes_version"])
	if err != nil {
		return kyamlConfigErr(err.Error())
	}
	strict := cfg["strict"] == "true"
	ignoreMissing := cfg["ignore_missing_schemas"] != "false"
	skip := map[string]bool{}
	for _, k := range strings.Split(cfg["skip_kinds"], ",") {
		if k = strings.TrimSpace(k); k != "" {
			skip[k] = true
		}
	}
	for _, o := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if skip[o.GetKind()] {
			continue
		}
		ref := &pipeline.ResourceRef{APIVersion: o.GetApiVersion(), Kind: o.GetKind(), Name: o.GetName(), Namespace: o.GetNamespace()}
		file := &pipeline.File{Path: itemPath(o)}
		rs := ks.forType(o.GetApiVersion(), o.GetKind())
		if rs.IsMissingOrNull() {
			if !ignoreMissing {
				rl.Results = append(rl.Results, &pipeline.Result{Message: fmt.Sprintf("could not find schema for %s", o.GetKind()),
					Severity: pipeline.SeverityError, ResourceRef: ref, File: file})
			}
			continue
		}
		v := &schemaValidator{strict: strict, root: ks.root()}
		v.validate(o.YNode(), rs, "", false)
		for _, p := range v.problems {
			rl.Results = append(rl.Results, &pipeline.Result{Message: p.msg, Severity: pipeline.SeverityError,
				ResourceRef: ref, Field: &pipeline.Field{Path: p.path}, File: file})
		}
	}
	return nil
}

// kubeSchemas are the Kubernetes versions whose schemas cad ships, by
// minor line, newest first; the first is the default.
var kubeSchemas = func() []*kubeSchema {
	var out []*kubeSchema
	for _, s := range k8sschema.Versions() {
		parts := strings.SplitN(strings.TrimPrefix(s.Version, "v"), ".", 3)
		out = append(out, &kubeSchema{minor: parts[0] + "." + parts[1], version: s.Version, shipped: s})
	}
	return append(out, &kubeSchema{minor: "1.21", version: "v1.21.2"}) // kyaml's bundled schema
}()

// kubeSchema is one Kubernetes version's OpenAPI definitions: shipped in
// internal/k8sschema, or (shipped nil) kyaml's bundled schema.
type kubeSchema struct {
	minor, version string
	shipped        *k8sschema.Schema
}

// kubeSchemaFor returns the schema for a kubernetes_version ("1.37",
// "v1.37.0", "1.37.2"; "" and "master" mean the newest); a version of a
// minor line cad does not ship is an error naming those it does.
func kubeSchemaFor(version string) (*kubeSchema, error) {
	v := strings.TrimPrefix(strings.TrimSpace(version), "v")
	if v == "" || v == "master" {
		return kubeSchemas[0], nil
	}
	parts := strings.Split(v, ".")
	if len(parts) >= 2 {
		for _, ks := range kubeSchemas {
			if parts[0]+"."+parts[1] == ks.minor {
				return ks, nil
			}
		}
	}
	var have []string
	for _, ks := range kubeSchemas {
		have = append(have, ks.minor+" ("+ks.version+")")
	}
	return nil, fmt.Errorf("kubernetes_version %q: cad has the schemas of Kubernetes %s only", version, strings.Join(have, " and "))
}

// root is what references resolve against.
func (ks *kubeSchema) root() *openapi.ResourceSchema {
	if ks.shipped == nil {
		return &openapi.ResourceSchema{Schema: openapi.Schema()}
	}
	return ks.shipped.Root()
}

// forType returns the schema of a kind, nil when there is none.
func (ks *kubeSchema) forType(apiVersion, kind string) *openapi.ResourceSchema {
	if ks.shipped == nil {
		return openapi.SchemaForResourceType(yaml.TypeMeta{APIVersion: apiVersion, Kind: kind})
	}
	return ks.shipped.ForType(apiVersion, kind)
}

type schemaProblem struct{ path, msg string }

type schemaValidator struct {
	strict   bool
	root     *openapi.ResourceSchema // what references resolve against
	problems []schemaProblem
}

func (v *schemaValidator) add(path, format string, args ...any) {
	v.problems = append(v.problems, schemaProblem{path: path, msg: fmt.Sprintf(format, args...)})
}

// resolve follows the schema's references.
func (v *schemaValidator) resolve(rs *openapi.ResourceSchema) *openapi.ResourceSchema {
	for i := 0; rs != nil && rs.Schema != nil && rs.Schema.Ref.String() != "" && i < 32; i++ {
		if v.root == nil {
			return nil
		}
		r, err := openapi.Resolve(&rs.Schema.Ref, v.root.Schema)
		if err != nil || r == nil {
			return nil
		}
		rs = &openapi.ResourceSchema{Schema: r}
	}
	if rs == nil || rs.Schema == nil {
		return nil
	}
	return rs
}

// jsonType is the JSON type of a YAML node.
func jsonType(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "object"
	case yaml.SequenceNode:
		return "array"
	case yaml.AliasNode:
		return jsonType(n.Alias)
	}
	switch n.ShortTag() {
	case yaml.NodeTagInt:
		return "integer"
	case yaml.NodeTagFloat:
		return "number"
	case yaml.NodeTagBool:
		return "boolean"
	case yaml.NodeTagNull:
		return "null"
	}
	return "string"
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func (v *schemaValidator) validate(n *yaml.Node, rs *openapi.ResourceSchema, path string, nullable bool) {
	// A resource quantity is a string or a number in kubeconform's
	// schemas ("cpu: 1", "memory: 1Gi"); the OpenAPI document says string.
	quantity := rs != nil && rs.Schema != nil && strings.HasSuffix(rs.Schema.Ref.String(), "/io.k8s.apimachinery.pkg.api.resource.Quantity")
	rs = v.resolve(rs)
	if rs == nil || n == nil {
		return
	}
	s := rs.Schema
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	got := jsonType(n)
	if got == "null" && nullable {
		return
	}
	if b, _ := s.Extensions.GetBool("x-kubernetes-int-or-string"); b || s.Format == "int-or-string" {
		if got != "integer" && got != "string" {
			v.add(path, "got %s, want %s", got, wantTypes([]string{"string", "integer"}, nullable))
		}
		return
	}
	if quantity {
		if got != "integer" && got != "number" && got != "string" {
			v.add(path, "got %s, want %s", got, wantTypes([]string{"string", "number"}, nullable))
		}
		return
	}
	if len(s.Type) > 0 {
		want := []string(s.Type)
		ok := false
		for _, t := range want {
			if t == got || (t == "number" && got == "integer") {
				ok = true
			}
		}
		if !ok {
			v.add(path, "got %s, want %s", got, wantTypes(want, nullable))
			return
		}
	}
	switch got {
	case "object":
		var present []string
		fields := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			present = append(present, k)
			fields[k] = n.Content[i+1]
		}
		var missing []string
		required := map[string]bool{}
		for _, r := range s.Required {
			required[r] = true
			if _, ok := fields[r]; !ok {
				missing = append(missing, "'"+r+"'")
			}
		}
		switch len(missing) {
		case 0:
		case 1:
			v.add(path, "missing property %s", missing[0])
		default:
			v.add(path, "missing properties %s", strings.Join(missing, ", "))
		}
		preserve, _ := s.Extensions.GetBool("x-kubernetes-preserve-unknown-fields")
		var extra []string
		for _, k := range present {
			child := fields[k]
			if ps, ok := s.Properties[k]; ok {
				v.validate(child, &openapi.ResourceSchema{Schema: &ps}, join(path, k), !required[k])
				continue
			}
			if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				v.validate(child, &openapi.ResourceSchema{Schema: s.AdditionalProperties.Schema}, join(path, k), true)
				continue
			}
			if s.AdditionalProperties != nil && s.AdditionalProperties.Allows {
				continue
			}
			if v.strict && !preserve && len(s.Properties) > 0 {
				extra = append(extra, "'"+k+"'")
			}
		}
		if len(extra) > 0 {
			sort.Strings(extra)
			v.add(path, "additionalProperties %s not allowed", strings.Join(extra, ", "))
		}
	case "array":
		if s.Items == nil || s.Items.Schema == nil {
			return
		}
		for i, el := range n.Content {
			v.validate(el, &openapi.ResourceSchema{Schema: s.Items.Schema}, join(path, fmt.Sprint(i)), false)
		}
	}
}

// wantTypes words the expected types as kubeconform does: "null or
// integer" for an optional field.
func wantTypes(types []string, nullable bool) string {
	all := append([]string{}, types...)
	if nullable {
		all = append([]string{"null"}, all...)
	}
	return strings.Join(all, " or ")
}
