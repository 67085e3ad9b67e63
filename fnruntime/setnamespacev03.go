package fnruntime

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/pipeline"
)

// setNamespaceV03 is set-namespace v0.3 as its README describes it
// (every v0.3.x release has the same one): it replaces one "old"
// namespace with the new one wherever a target field is set to it, and
// never adds a namespace. The old namespace is chosen by one of three
// modes:
//
//   - matcher: the config's namespaceMatcher;
//   - default namespace: the name of the one Namespace object among the
//     items (more than one is an error);
//   - restrict: otherwise every target field must hold the same value,
//     which is the old namespace (different values are an error).
//
// Target fields: metadata.namespace where set, a Namespace's
// metadata.name, the namespace of RoleBinding and ClusterRoleBinding
// subjects of kind ServiceAccount where set, a CRD's
// spec.conversion.webhook.clientConfig.service.namespace and an
// APIService's spec.service.namespace where set, and the namespace
// segment of config.kubernetes.io/depends-on annotations. Local-config
// resources are left alone, as in v0.4.
func setNamespaceV03(ctx context.Context, rl *pipeline.ResourceList) error {
	newNs, matcher, err := setNamespaceConfig(rl.FunctionConfig)
	if err != nil {
		return configErr(err.Error())
	}
	type target struct {
		get func() string
		set func(string) error
	}
	var targets []target
	var namespaces []string
	objects := nonLocal(rl.Items)
	for _, o := range objects {
		if err := ctx.Err(); err != nil {
			return err
		}
		o := o
		if isGVK(o, "", "v1", "Namespace") {
			namespaces = append(namespaces, o.GetName())
			targets = append(targets, target{o.GetName, o.SetName})
		}
		if _, set := nestedString(o, "metadata", "namespace"); set {
			targets = append(targets, target{o.GetNamespace, o.SetNamespace})
		}
		field := func(n *yaml.RNode, path ...string) {
			if _, ok := nestedString(n, path...); ok {
				targets = append(targets, target{
					func() string { v, _ := nestedString(n, path...); return v },
					func(v string) error { return setNestedString(n, v, path...) },
				})
			}
		}
		switch {
		case o.GetKind() == "RoleBinding" || o.GetKind() == "ClusterRoleBinding":
			for _, s := range getSlice(o, "subjects") {
				if k, _ := nestedString(s, "kind"); k == "ServiceAccount" {
					field(s, "namespace")
				}
			}
		case isGVK(o, "apiextensions.k8s.io", "", "CustomResourceDefinition"):
			field(o, "spec", "conversion", "webhook", "clientConfig", "service", "namespace")
		case isGVK(o, "apiregistration.k8s.io", "", "APIService"):
			field(o, "spec", "service", "namespace")
		}
	}
	old := matcher
	if old == "" {
		switch {
		case len(namespaces) > 1:
			rl.Results = append(rl.Results, errorResult(fmt.Sprintf(
				"found more than one Namespace object %v; set `namespaceMatcher` to choose the namespace to replace", namespaces)))
			return nil
		case len(namespaces) == 1:
			old = namespaces[0]
		default:
			values := map[string]bool{}
			for _, t := range targets {
				values[t.get()] = true
			}
			if len(values) > 1 {
				rl.Results = append(rl.Results, errorResult(fmt.Sprintf(
					"the namespace fields hold different values %v; set `namespaceMatcher` to choose the namespace to replace", sortedKeys(values))))
				return nil
			}
			for v := range values {
				old = v
			}
		}
	}
	count := 0
	if old != "" && old != newNs {
		for _, t := range targets {
			if t.get() == old {
				if err := t.set(newNs); err != nil {
					return err
				}
				count++
			}
		}
		for _, o := range objects {
			if err := ctx.Err(); err != nil {
				return err
			}
			v, ok := o.GetAnnotations()[dependsOnAnnotation]
			if !ok {
				continue
			}
			refs := strings.Split(v, ",")
			changed := false
			for i, ref := range refs {
				seg := strings.Split(ref, "/")
				if len(seg) == 5 && seg[1] == "namespaces" && seg[2] == old {
					seg[2] = newNs
					refs[i] = strings.Join(seg, "/")
					changed = true
				}
			}
			if changed {
				if err := o.PipeE(yaml.SetAnnotation(dependsOnAnnotation, strings.Join(refs, ","))); err != nil {
					return err
				}
				count++
			}
		}
	}
	if count == 0 {
		rl.Results = append(rl.Results, info(fmt.Sprintf("no namespace changed: none is %q", old)))
	} else {
		rl.Results = append(rl.Results, info(fmt.Sprintf("namespace %q updated to %q, %d value(s) changed", old, newNs, count)))
	}
	return nil
}
