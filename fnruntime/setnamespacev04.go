package fnruntime

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// nsField is one namespace field set-namespace v0.4.1 visits: the object
// it belongs to, its value and how to set it.
type nsField struct {
	obj *yaml.RNode
	cur string
	set func(string) error
}

// setNamespaceV04 is set-namespace v0.4.1 as released (its README, its
// examples and tests at the tag), which a step pinning v0.4.x runs; an
// unpinned or latest step runs setNamespace, the catalog's later code
// (namespaceMatcher, origin namespaces, a depends-on summary), which kpt's
// conformance cases pin as latest.
//
// Every namespace field of the items that are not local config is set to
// the new namespace, whatever its old value: metadata.namespace of a
// namespace-scoped resource (known kinds by the Kubernetes schema, others
// when metadata.namespace is present; a known namespaced kind without one
// gets it, its old value counting as ""), a Namespace's name, the service
// namespace of a CRD's conversion webhook and of an APIService, and the
// namespace of RoleBinding and ClusterRoleBinding subjects, each where it
// is set, as the README says. A depends-on annotation of a visited object
// naming <group>/namespaces/<old>/<kind>/<name> is moved to the new
// namespace when <old> is one of the values replaced and group, kind and
// name are those of a visited object (the release keys core objects by
// "v1", so a core object's depends-on, whose group is empty, never
// matches; cad keeps that). It reports one info result: `namespace "a","b"
// updated to "new", N value(s) changed` (the old values sorted; the
// release prints them in Go's map order), or `all namespaces are already
// "new". no value changed`; two items with one apiVersion, kind,
// namespace and name are an error result in its place. A config error is
// one error result of message and severity, naming nothing (the SDK's
// ErrorResult), and the step fails with the SDK's "function failure".
func setNamespaceV04(ctx context.Context, rl *pipeline.ResourceList) error {
	newNs, err := setNamespaceV04Config(rl.FunctionConfig)
	if err != nil {
		return &configError{msg: err.Error(), noRef: true}
	}
	var fields []nsField
	for _, o := range nonLocal(rl.Items) {
		if err := ctx.Err(); err != nil {
			return err
		}
		fields = append(fields, namespaceFieldsV04(o)...)
	}
	count := 0
	old := map[string]bool{}
	for _, f := range fields {
		if f.cur == newNs {
			continue
		}
		if err := f.set(newNs); err != nil {
			return fmt.Errorf("%s: cannot set namespace %q: %w", shortString(f.obj), newNs, err)
		}
		old[f.cur] = true
		count++
	}
	// The objects' keys, group/kind/name, after the change: the group is
	// the apiVersion up to its "/", the whole apiVersion when it has none.
	visited := map[string]bool{}
	for _, f := range fields {
		visited[dependsOnKeyV04(f.obj)] = true
	}
	for _, f := range fields {
		v := f.obj.GetAnnotations()[dependsOnAnnotation]
		seg := strings.Split(v, "/")
		if !dependsOnNamespaced.MatchString(v) || !visited[seg[0]+"/"+seg[3]+"/"+seg[4]] || !old[seg[2]] {
			continue
		}
		seg[2] = newNs
		if err := f.obj.PipeE(yaml.SetAnnotation(dependsOnAnnotation, strings.Join(seg, "/"))); err != nil {
			return fmt.Errorf("%s: cannot set its %s annotation: %w", shortString(f.obj), dependsOnAnnotation, err)
		}
	}
	if dup := duplicateItem(rl.Items); dup != "" {
		rl.Results = append(rl.Results, errorResult(dup))
		return nil
	}
	if count == 0 {
		rl.Results = append(rl.Results, info(fmt.Sprintf("all namespaces are already %q. no value changed", newNs)))
		return nil
	}
	quoted := make([]string, 0, len(old))
	for ns := range old {
		quoted = append(quoted, `"`+ns+`"`)
	}
	sort.Strings(quoted)
	rl.Results = append(rl.Results, info(fmt.Sprintf("namespace %s updated to %q, %d value(s) changed", strings.Join(quoted, ","), newNs, count)))
	return nil
}

// setNamespaceV04Config reads v0.4.1's config: a v1 ConfigMap's
// data.namespace (data.name for kpt's package-context ConfigMap
// kptfile.kpt.dev) or a fn.kpt.dev/v1alpha1 SetNamespace's namespace;
// errors are worded as the release words them.
func setNamespaceV04Config(fc *yaml.RNode) (string, error) {
	switch {
	case fc.IsNilOrEmpty():
		return "", fmt.Errorf("FunctionConfig is missing. Expect `ConfigMap` or `SetNamespace`")
	case fc.GetApiVersion() == "v1" && fc.GetKind() == "ConfigMap":
		d := configData(fc)
		if d["namespace"] != "" {
			return d["namespace"], nil
		}
		if fc.GetName() != builtinConfigMapName {
			return "", fmt.Errorf("`data.namespace` should not be empty")
		}
		if d["name"] == "" {
			return "", fmt.Errorf("`data.name` should not be empty")
		}
		return d["name"], nil
	case fc.GetApiVersion() == "fn.kpt.dev/v1alpha1" && fc.GetKind() == "SetNamespace":
		ns, _ := nestedString(fc, "namespace")
		if ns == "" {
			return "", fmt.Errorf("`namespace` should not be empty")
		}
		return ns, nil
	}
	return "", fmt.Errorf("unknown functionConfig Kind=%v ApiVersion=%v, expect `SetNamespace` or `ConfigMap`", fc.GetKind(), fc.GetApiVersion())
}

// namespaceFieldsV04 returns the namespace fields v0.4.1 visits in o, in
// its order: the kind's special field, then metadata.namespace.
func namespaceFieldsV04(o *yaml.RNode) []nsField {
	var out []nsField
	nested := func(n *yaml.RNode, path ...string) {
		if ns, ok := nestedString(n, path...); ok {
			out = append(out, nsField{obj: o, cur: ns, set: func(v string) error { return setNestedString(n, v, path...) }})
		}
	}
	switch {
	case o.GetApiVersion() == "v1" && o.GetKind() == "Namespace":
		out = append(out, nsField{obj: o, cur: o.GetName(), set: o.SetName})
	case o.GetApiVersion() == "apiextensions.k8s.io/v1" && o.GetKind() == "CustomResourceDefinition":
		nested(o, "spec", "conversion", "webhook", "clientConfig", "service", "namespace")
	case o.GetApiVersion() == "apiregistration.k8s.io/v1" && o.GetKind() == "APIService":
		nested(o, "spec", "service", "namespace")
	case o.GetKind() == "ClusterRoleBinding" || o.GetKind() == "RoleBinding":
		for _, s := range getSlice(o, "subjects") {
			nested(s, "namespace")
		}
	}
	if namespaceScoped(o) {
		out = append(out, nsField{obj: o, cur: o.GetNamespace(), set: o.SetNamespace})
	}
	return out
}

// dependsOnKeyV04 is v0.4.1's key of an object: group/kind/name, the
// group being the apiVersion before its "/" (all of it when it has none).
func dependsOnKeyV04(o *yaml.RNode) string {
	g, _, _ := strings.Cut(o.GetApiVersion(), "/")
	return g + "/" + o.GetKind() + "/" + o.GetName()
}

// duplicateItem returns the SDK's message for the first item with the
// apiVersion, kind, namespace and name of an earlier one; "" when none.
func duplicateItem(items []*yaml.RNode) string {
	seen := map[[4]string]bool{}
	for _, o := range items {
		id := [4]string{o.GetApiVersion(), o.GetKind(), o.GetNamespace(), o.GetName()}
		if seen[id] {
			return fmt.Sprintf("duplicate Resource(apiVersion=%v, kind=%v, Namespace=%v, Name=%v)", id[0], id[1], id[2], id[3])
		}
		seen[id] = true
	}
	return ""
}
