package fnruntime

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const (
	dependsOnAnnotation       = "config.kubernetes.io/depends-on"
	upstreamIdentifier        = "internal.kpt.dev/upstream-identifier"
	builtinConfigMapName      = "kptfile.kpt.dev"
	unknownNamespace          = "~C"
	defaultNamespace          = "default"
	setNamespaceConfigMissing = "FunctionConfig is missing. Expect `ConfigMap.v1` or `SetNamespace.v1alpha1.fn.kpt.dev`"
)

// setNamespace ports the catalog's set-namespace: the namespace of
// namespace-scoped resources, Namespace names, RoleBinding subjects, CRD
// and APIService service namespaces and depends-on annotations.
func setNamespace(ctx context.Context, rl *pipeline.ResourceList) error {
	newNs, matcher, err := setNamespaceConfig(rl.FunctionConfig)
	if err != nil {
		// As kpt issue 4547 shows set-namespace's output: the result
		// names the functionConfig (v1/ConfigMap/function-input).
		return configErr(err.Error())
	}
	objects := nonLocal(rl.Items)
	dependsOn := map[string]bool{}
	for _, o := range objects {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ns, ok := idNamespace(o); ok {
			g, _ := groupVersion(o.GetApiVersion())
			dependsOn[fmt.Sprintf("%s/namespaces/%s/%s/%s", g, ns, o.GetKind(), o.GetName())] = true
		}
	}
	origins := map[string]bool{}
	for _, o := range objects {
		if err := ctx.Err(); err != nil {
			return err
		}
		origin, ok := originID(o)
		if !ok || !namespaceScoped(o) {
			continue
		}
		if origin.namespace == unknownNamespace {
			rl.Results = append(rl.Results, errorResult(fmt.Sprintf("%s is namespace-scoped, but has cluster-scoped or unknown scoepd origin", shortString(o))))
			return nil
		}
		origins[origin.namespace] = true
	}
	var matchers []string
	if matcher != "" {
		matchers = []string{matcher}
	} else if len(origins) > 1 {
		rl.Results = append(rl.Results, errorResult(fmt.Sprintf(
			"unable to use origin `namespace` to match. expect a single upstream namespace, found %v. please switch to use `namespaceMatcher`to specify the namespace value you want to change",
			sortedKeys(origins))))
		return nil
	}
	count := 0
	old := map[string]bool{}
	// visit sets one namespace value; id names the object in the
	// matching-origin message (empty for a nested field), who names it in
	// an error. A set that fails is an error result, not a change.
	visit := func(origin string, cur string, set func(string) error, id, who string) {
		if origin == unknownNamespace {
			return
		}
		if cur == "" {
			cur = defaultNamespace
		}
		if cur == newNs {
			return
		}
		change := len(matchers) == 0
		for _, m := range matchers {
			if m == origin {
				rl.Results = append(rl.Results, info(fmt.Sprintf("[%s] has matching origin %s", id, origin)))
			}
			if m == cur || m == origin {
				change = true
			}
		}
		if change {
			if err := set(newNs); err != nil {
				rl.Results = append(rl.Results, errorResult(fmt.Sprintf("%s: cannot set namespace %q: %v", who, newNs, err)))
				return
			}
			old[cur] = true
			count++
		}
	}
	// Cluster-scoped resources with namespace fields.
	for _, o := range objects {
		if err := ctx.Err(); err != nil {
			return err
		}
		if namespaceScoped(o) {
			continue
		}
		switch {
		case isGVK(o, "", "v1", "Namespace"):
			origin := o.GetName()
			if oid, ok := originID(o); ok {
				origin = oid.name
			}
			visit(origin, o.GetName(), func(s string) error { return o.SetName(s) }, shortString(o), shortString(o))
		case isGVK(o, "apiextensions.k8s.io", "v1", "CustomResourceDefinition"):
			p := []string{"spec", "conversion", "webhook", "clientConfig", "service", "namespace"}
			if ns, ok := nestedString(o, p...); ok {
				visit("", ns, func(s string) error { return setNestedString(o, s, p...) }, "", shortString(o))
			}
		case isGVK(o, "apiregistration.k8s.io", "v1", "APIService"):
			p := []string{"spec", "service", "namespace"}
			if ns, ok := nestedString(o, p...); ok {
				visit("", ns, func(s string) error { return setNestedString(o, s, p...) }, "", shortString(o))
			}
		case o.GetKind() == "ClusterRoleBinding" || o.GetKind() == "RoleBinding":
			for _, s := range getSlice(o, "subjects") {
				if ns, ok := nestedString(s, "namespace"); ok {
					visit("", ns, func(v string) error { return setNestedString(s, v, "namespace") }, "", shortString(o))
				}
			}
		}
	}
	for _, o := range objects {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !namespaceScoped(o) {
			continue
		}
		origin := o.GetNamespace()
		if origin == "" {
			origin = defaultNamespace
		}
		if oid, ok := originID(o); ok {
			origin = oid.namespace
		}
		visit(origin, o.GetNamespace(), func(s string) error { return o.SetNamespace(s) }, shortString(o), shortString(o))
	}
	if count == 0 {
		rl.Results = append(rl.Results, info(fmt.Sprintf("all matching namespaces are already %q. no value changed", newNs)))
	} else {
		rl.Results = append(rl.Results, info(fmt.Sprintf("namespace %v updated to %q, %d value(s) changed", sortedKeys(old), newNs, count)))
	}
	// depends-on annotations.
	annCount := 0
	oldAnn := map[string]bool{}
	for _, o := range objects {
		if err := ctx.Err(); err != nil {
			return err
		}
		v := o.GetAnnotations()[dependsOnAnnotation]
		seg := strings.Split(v, "/")
		if len(seg) != 5 || seg[1] != "namespaces" || !dependsOn[v] || seg[2] == newNs {
			continue
		}
		change := len(matchers) == 0
		for _, m := range matchers {
			if m == seg[2] {
				change = true
			}
		}
		if change {
			from := seg[2]
			seg[2] = newNs
			if err := o.PipeE(yaml.SetAnnotation(dependsOnAnnotation, strings.Join(seg, "/"))); err != nil {
				rl.Results = append(rl.Results, errorResult(fmt.Sprintf("%s: cannot set the namespace of its %s annotation: %v", shortString(o), dependsOnAnnotation, err)))
				continue
			}
			oldAnn[from] = true
			annCount++
		}
	}
	if annCount == 0 {
		rl.Results = append(rl.Results, info("all `depends-on` annotations are up-to-date. no `namespace` changed"))
	} else {
		rl.Results = append(rl.Results, info(fmt.Sprintf("`depends-on` annotation namespace %v updated to %q, %d value(s) changed", sortedKeys(oldAnn), newNs, annCount)))
	}
	return nil
}

func setNamespaceConfig(fc *yaml.RNode) (string, string, error) {
	switch {
	case fc.IsNilOrEmpty():
		return "", "", fmt.Errorf("%s", setNamespaceConfigMissing)
	case isGVK(fc, "", "v1", "ConfigMap"):
		d := configData(fc)
		if d["namespace"] != "" {
			return d["namespace"], d["namespaceMatcher"], nil
		}
		if d["name"] != "" && fc.GetName() == builtinConfigMapName {
			return d["name"], d["namespaceMatcher"], nil
		}
		if fc.GetName() == builtinConfigMapName {
			return "", "", fmt.Errorf("`data.name` should not be empty")
		}
		return "", "", fmt.Errorf("`data.namespace` should not be empty")
	case isGVK(fc, "fn.kpt.dev", "v1alpha1", "SetNamespace"):
		ns, _ := nestedString(fc, "namespace")
		m, _ := nestedString(fc, "namespaceMatcher")
		if ns == "" {
			return "", "", fmt.Errorf("`namespace` should not be empty")
		}
		return ns, m, nil
	}
	return "", "", fmt.Errorf("unknown functionConfig Kind=%v ApiVersion=%v, expect `ConfigMap.v1` or `SetNamespace.v1alpha1.fn.kpt.dev`", fc.GetKind(), fc.GetApiVersion())
}

// namespaceScoped is the Go SDK's IsNamespaceScoped: known kinds from the
// Kubernetes schema, otherwise whether metadata.namespace is set.
func namespaceScoped(o *yaml.RNode) bool {
	if ns, ok := openapi.IsNamespaceScoped(yaml.TypeMeta{APIVersion: o.GetApiVersion(), Kind: o.GetKind()}); ok {
		return ns
	}
	_, found := nestedString(o, "metadata", "namespace")
	return found
}

func idNamespace(o *yaml.RNode) (string, bool) {
	if !namespaceScoped(o) {
		return "", false
	}
	ns := o.GetNamespace()
	if ns == "" {
		ns = defaultNamespace
	}
	return ns, true
}

type origin struct{ group, kind, namespace, name string }

// originID parses internal.kpt.dev/upstream-identifier
// (group|kind|namespace|name).
func originID(o *yaml.RNode) (origin, bool) {
	v := o.GetAnnotations()[upstreamIdentifier]
	seg := strings.Split(v, "|")
	if v == "" || len(seg) != 4 {
		return origin{}, false
	}
	return origin{group: seg[0], kind: seg[1], namespace: seg[2], name: seg[3]}, true
}

func shortString(o *yaml.RNode) string {
	return fmt.Sprintf("Resource(apiVersion=%v, kind=%v, namespace=%v, name=%v)", o.GetApiVersion(), o.GetKind(), o.GetNamespace(), o.GetName())
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
