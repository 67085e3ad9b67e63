package fnruntime

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// fieldSpec is a kustomize field spec: where annotations go for which kinds.
type fieldSpec struct {
	Group   string `yaml:"group,omitempty"`
	Version string `yaml:"version,omitempty"`
	Kind    string `yaml:"kind,omitempty"`
	Path    string `yaml:"path,omitempty"`
	Create  bool   `yaml:"create,omitempty"`
}

// commonAnnotations are kustomize's builtin field specs for annotations.
var commonAnnotations = []fieldSpec{
	{Path: "metadata/annotations", Create: true},
	{Version: "v1", Kind: "ReplicationController", Path: "spec/template/metadata/annotations", Create: true},
	{Kind: "Deployment", Path: "spec/template/metadata/annotations", Create: true},
	{Kind: "ReplicaSet", Path: "spec/template/metadata/annotations", Create: true},
	{Kind: "DaemonSet", Path: "spec/template/metadata/annotations", Create: true},
	{Kind: "StatefulSet", Path: "spec/template/metadata/annotations", Create: true},
	{Group: "batch", Kind: "Job", Path: "spec/template/metadata/annotations", Create: true},
	{Group: "batch", Kind: "CronJob", Path: "spec/jobTemplate/metadata/annotations", Create: true},
	{Group: "batch", Kind: "CronJob", Path: "spec/jobTemplate/spec/template/metadata/annotations", Create: true},
}

// setAnnotations ports the catalog's set-annotations (kustomize's
// annotations filter with the common annotation field specs).
func setAnnotations(ctx context.Context, rl *pipeline.ResourceList) error {
	fc := rl.FunctionConfig
	fail := func(msg string) error {
		return &configError{msg: "failed to configure function: " + msg, stderr: "failed to configure function: " + msg, cause: errFunctionFailure}
	}
	var anns map[string]string
	var extra []fieldSpec
	var api, kind string
	if !fc.IsNilOrEmpty() {
		api, kind = fc.GetApiVersion(), fc.GetKind()
	}
	switch {
	case api == "v1" && kind == "ConfigMap":
		anns = configData(fc)
	case api == "fn.kpt.dev/v1alpha1" && (kind == "SetAnnotations" || kind == "SetAnnotationConfig"):
		var err error
		if anns, err = strictStringMap(fc, "plugin", "annotations"); err != nil {
			return fail(err.Error())
		}
		for _, key := range []string{"additionalAnnotationFields", "fieldSpecs"} {
			if f := fc.Field(key); f != nil {
				s, _ := f.Value.String()
				var fs []fieldSpec
				if err := yaml.Unmarshal([]byte(s), &fs); err != nil {
					return fail(err.Error())
				}
				extra = append(extra, fs...)
			}
		}
	default:
		return fail("`functionConfig` must be a `ConfigMap` or `SetAnnotations`")
	}
	if len(anns) == 0 {
		return fail("input annotation list cannot be empty")
	}
	keys := make([]string, 0, len(anns))
	for k := range anns {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	type resKey struct {
		file  string
		index int
		field string
	}
	results := map[resKey]map[string]string{}
	specs := append(append([]fieldSpec{}, commonAnnotations...), extra...)
	b := budgetFrom(ctx)
	quotes := quoteCache{}
	for _, o := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		file, idx, _ := kioutil.GetFileAnnotations(o)
		index, _ := strconv.Atoi(idx)
		g, v := groupVersion(o.GetApiVersion())
		for _, fs := range specs {
			if err := ctx.Err(); err != nil {
				return err
			}
			if (fs.Group != "" && fs.Group != g) || (fs.Version != "" && fs.Version != v) || (fs.Kind != "" && fs.Kind != o.GetKind()) {
				continue
			}
			p := strings.Split(fs.Path, "/")
			var m *yaml.RNode
			var err error
			if fs.Create {
				m, err = o.Pipe(yaml.LookupCreate(yaml.MappingNode, p...))
			} else {
				m, err = o.Pipe(yaml.Lookup(p...))
			}
			if err != nil || m == nil {
				continue
			}
			if m.YNode().Kind != yaml.MappingNode {
				// SetField fails on anything but a mapping.
				if err := m.PipeE(yaml.SetField(keys[0], yaml.NewStringRNode(anns[keys[0]]))); err != nil {
					return err
				}
				continue
			}
			fi := newFieldIndex(m.YNode())
			rk := resKey{file: file, index: index, field: strings.Join(p, ".")}
			if results[rk] == nil {
				results[rk] = map[string]string{}
			}
			for i, k := range keys {
				// The annotation, and its mention in the result.
				if err := b.charge(2*scalarSize(k, len(p)) + 2*scalarSize(anns[k], 0)); err != nil {
					return err
				}
				if i&255 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				fi.setString(k, anns[k], quotes)
				results[rk][k] = anns[k]
			}
		}
	}
	rks := make([]resKey, 0, len(results))
	for k := range results {
		rks = append(rks, k)
	}
	sort.Slice(rks, func(i, j int) bool {
		a, b := rks[i], rks[j]
		if a.file != b.file {
			return a.file < b.file
		}
		if a.index != b.index {
			return a.index < b.index
		}
		return a.field < b.field
	})
	if len(rks) == 0 {
		rl.Results = append(rl.Results, info("no annotations applied"))
	}
	for _, k := range rks {
		b, _ := json.Marshal(results[k])
		rl.Results = append(rl.Results, &pipeline.Result{
			Message: "set annotations: " + string(b),
			Field:   &pipeline.Field{Path: k.field},
			File:    &pipeline.File{Path: k.file, Index: k.index},
		})
	}
	return nil
}

// setAnnotationsV01 is set-annotations v0.1.4 as released (its tests and
// examples, on kyaml's framework): the annotations of setAnnotations, and
// no result when it succeeds; a config error is one result of message and
// severity, naming nothing, with the framework's "[error] : <message>" on
// stderr. An unpinned or latest step runs setAnnotations, the catalog's
// later code, whose per-field results kpt's conformance cases expect.
func setAnnotationsV01(ctx context.Context, rl *pipeline.ResourceList) error {
	before := len(rl.Results)
	if err := setAnnotations(ctx, rl); err != nil {
		var ce *configError
		if errors.As(err, &ce) {
			return &configError{msg: ce.msg, stderr: "[error] : " + ce.msg, cause: ce.cause, noRef: true}
		}
		return err
	}
	rl.Results = rl.Results[:before]
	return nil
}
