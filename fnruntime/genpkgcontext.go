package fnruntime

import (
	"context"
	"path"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// PkgContextFunction is the image name of kpt's builtin package-context
// generator.
const PkgContextFunction = "builtins/gen-pkg-context"

// genPkgContext is kpt's builtins/gen-pkg-context: it replaces any
// package-context ConfigMap (kptfile.kpt.dev) with one generated from the
// root Kptfile, holding the package name.
func genPkgContext(ctx context.Context, rl *pipeline.ResourceList) error {
	var out, generated []*yaml.RNode
	for _, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if isGVK(it, "", "v1", "ConfigMap") && it.GetKind() == "ConfigMap" && it.GetName() == builtinConfigMapName {
			continue
		}
		out = append(out, it)
		if it.GetApiVersion() != "kpt.dev/v1" || it.GetKind() != "Kptfile" {
			continue
		}
		p := it.GetAnnotations()[pipeline.PathAnnotation]
		if p == "" {
			p = it.GetAnnotations()[pipeline.LegacyPathAnnotation]
		}
		if path.Dir(path.Clean(p)) != "." {
			continue // only the root package gets a context
		}
		cm, err := newPkgContext(it.GetName())
		if err != nil {
			return err
		}
		generated = append(generated, cm)
		rl.Results = append(rl.Results, &pipeline.Result{Message: "generated package context", Severity: pipeline.SeverityInfo,
			File: &pipeline.File{Path: "package-context.yaml"}})
	}
	rl.Items = append(out, generated...)
	return nil
}

func newPkgContext(name string) (*yaml.RNode, error) {
	cm := yaml.NewMapRNode(nil)
	local := yaml.NewStringRNode("true")
	local.YNode().Style = yaml.DoubleQuotedStyle
	for _, f := range []yaml.Filter{
		yaml.SetField("apiVersion", yaml.NewStringRNode("v1")),
		yaml.SetField("kind", yaml.NewStringRNode("ConfigMap")),
		yaml.SetK8sName(builtinConfigMapName),
	} {
		if err := cm.PipeE(f); err != nil {
			return nil, err
		}
	}
	ann, err := cm.Pipe(yaml.LookupCreate(yaml.MappingNode, "metadata", "annotations"))
	if err != nil {
		return nil, err
	}
	if err := ann.PipeE(yaml.SetField(pipeline.LocalConfigAnnotation, local)); err != nil {
		return nil, err
	}
	if err := cm.PipeE(yaml.SetAnnotation(pipeline.PathAnnotation, "package-context.yaml")); err != nil {
		return nil, err
	}
	data, err := cm.Pipe(yaml.LookupCreate(yaml.MappingNode, "data"))
	if err != nil {
		return nil, err
	}
	return cm, data.PipeE(yaml.SetField("name", yaml.NewStringRNode(name)))
}
