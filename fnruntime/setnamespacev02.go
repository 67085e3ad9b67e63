package fnruntime

import (
	"context"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// builtinLines returns the implementations of older catalog lines, by
// builtin name and release: the registry runs them for a step pinning that
// line and the builtin of Builtins for the others.
func builtinLines() map[string]map[string]pipeline.Function {
	return map[string]map[string]pipeline.Function{
		"set-namespace": {"0.2.0": strict(setNamespaceV02), "0.3.4": strict(setNamespaceV03), "0.4.1": strict(setNamespaceV04)},
		// A pinned set-labels v0.2.x words its config errors as v0.2.0.
		"set-labels": {"0.2.0": strict(setLabelsV02)},
		// A pinned set-annotations v0.1.x runs the release (no results);
		// unpinned, the catalog's later code (a result per field).
		"set-annotations": {"0.1.4": strict(setAnnotationsV01)},
		// export-terraform's lines differ in the kinds they export.
		"export-terraform": {"0.1.0": strict(exportTerraformFor("v0.1")), "0.2.0": strict(exportTerraformFor("v0.2"))},
	}
}

// namespaceFieldSpecs are kustomize's default namespace field specs, which
// set-namespace v0.2 uses besides metadata.namespace.
var namespaceFieldSpecs = []fieldSpec{
	{Kind: "Namespace", Path: "metadata/name", Create: true},
	{Group: "apiregistration.k8s.io", Kind: "APIService", Path: "spec/service/namespace", Create: true},
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Path: "spec/conversion/webhook/clientConfig/service/namespace"},
}

// setNamespaceV02 is set-namespace v0.2 as its documentation describes it
// (kustomize's namespace transformer): every resource that is not known to
// be cluster-scoped gets metadata.namespace, custom kinds and local config
// such as the Kptfile included; a Namespace is renamed; APIService and
// CRD webhook service namespaces and additionalNamespaceFields (or the
// deprecated fieldSpecs) are set; RoleBinding and ClusterRoleBinding
// subjects of kind ServiceAccount are moved when their name is "default"
// or names a ServiceAccount of the package. It reports nothing on
// success; a config of another kind or without namespace fails the step.
func setNamespaceV02(ctx context.Context, rl *pipeline.ResourceList) error {
	fc := rl.FunctionConfig
	var api, kind string
	if !fc.IsNilOrEmpty() {
		api, kind = fc.GetApiVersion(), fc.GetKind()
	}
	var ns string
	extra := append([]fieldSpec{}, namespaceFieldSpecs...)
	switch {
	case api == "v1" && kind == "ConfigMap":
		ns = fc.GetDataMap()["namespace"]
	case api == "fn.kpt.dev/v1alpha1" && (kind == "SetNamespace" || kind == "SetNamespaceConfig"):
		ns, _ = nestedString(fc, "namespace")
		var specs []fieldSpec
		for _, key := range []string{"additionalNamespaceFields", "fieldSpecs"} {
			if f := fc.Field(key); f != nil && !f.Value.IsNil() {
				str, _ := f.Value.String()
				var fs []fieldSpec
				if err := yaml.Unmarshal([]byte(str), &fs); err != nil {
					return kyamlConfigErr("failed to configure function: failed to unmarshal config: " + err.Error())
				}
				if key == "fieldSpecs" && len(specs) > 0 {
					return kyamlConfigErr("failed to configure function: fieldSpecs and additionalNamespaceFields are both set: fieldSpecs is the old name of additionalNamespaceFields, keep one")
				}
				specs = append(specs, fs...)
			}
		}
		extra = append(specs, extra...)
	default:
		return kyamlConfigErr("failed to configure function: `functionConfig` must be a `ConfigMap` or `SetNamespace`")
	}
	if ns == "" {
		return kyamlConfigErr("failed to configure function: input namespace cannot be empty")
	}
	serviceAccounts := map[string]bool{"default": true}
	for _, o := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if o.GetKind() == "ServiceAccount" {
			serviceAccounts[o.GetName()] = true
		}
	}
	for _, o := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if o.IsNilOrEmpty() {
			continue
		}
		if !openapi.IsCertainlyClusterScoped(yaml.TypeMeta{APIVersion: o.GetApiVersion(), Kind: o.GetKind()}) {
			if err := o.PipeE(yaml.LookupCreate(yaml.MappingNode, "metadata"), yaml.SetField("namespace", yaml.NewStringRNode(ns))); err != nil {
				return failWith(rl, "failed to run transformer: "+err.Error())
			}
		}
		if k := o.GetKind(); k == "RoleBinding" || k == "ClusterRoleBinding" {
			for _, s := range getSlice(o, "subjects") {
				name, _ := nestedString(s, "name")
				if k, _ := nestedString(s, "kind"); k == "ServiceAccount" && serviceAccounts[name] {
					if err := s.PipeE(yaml.SetField("namespace", yaml.NewStringRNode(ns))); err != nil {
						return failWith(rl, "failed to run transformer: "+err.Error())
					}
				}
			}
		}
		g, v := groupVersion(o.GetApiVersion())
		for _, fs := range extra {
			if (fs.Group != "" && fs.Group != g) || (fs.Version != "" && fs.Version != v) || (fs.Kind != "" && fs.Kind != o.GetKind()) {
				continue
			}
			p := strings.Split(strings.Trim(fs.Path, "/"), "/")
			var parent *yaml.RNode
			var err error
			if fs.Create {
				parent, err = o.Pipe(yaml.LookupCreate(yaml.MappingNode, p[:len(p)-1]...))
			} else if _, ok := nestedString(o, p...); ok {
				parent, err = o.Pipe(yaml.Lookup(p[:len(p)-1]...))
			}
			if err != nil {
				return failWith(rl, "failed to run transformer: "+err.Error())
			}
			if parent != nil {
				if err := parent.PipeE(yaml.SetField(p[len(p)-1], yaml.NewStringRNode(ns))); err != nil {
					return failWith(rl, "failed to run transformer: "+err.Error())
				}
			}
		}
	}
	return nil
}
