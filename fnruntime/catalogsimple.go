package fnruntime

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/kio/filters"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// failWith records msg as an error result and fails the step as a
// function built on kyaml's framework does: exit code 1 with the message
// on stderr.
func failWith(rl *pipeline.ResourceList, msg string) error {
	rl.Results = append(rl.Results, errorResult(msg))
	return &pipeline.FunctionError{ExitCode: 1, Stderr: msg, Err: errors.New(msg)}
}

// itemPath is an item's path annotation, the internal spelling first.
func itemPath(n *yaml.RNode) string {
	a := n.GetAnnotations()
	if p := a[kioutil.PathAnnotation]; p != "" {
		return p
	}
	return a[kioutil.LegacyPathAnnotation]
}

// removeLocalConfigResources is the catalog's
// remove-local-config-resources: it drops every item annotated
// config.kubernetes.io/local-config: "true" (any case), reporting the
// count and each dropped resource by name and file, or a warning when
// there was none. It takes no config.
func removeLocalConfigResources(ctx context.Context, rl *pipeline.ResourceList) error {
	var kept []*yaml.RNode
	var pruned pipeline.Results
	for _, n := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if n.IsNilOrEmpty() {
			continue
		}
		if !strings.EqualFold(n.GetAnnotations()[pipeline.LocalConfigAnnotation], "true") {
			kept = append(kept, n)
			continue
		}
		pruned = append(pruned, &pipeline.Result{Message: fmt.Sprintf("Resource name: [%s]", n.GetName()),
			Severity: pipeline.SeverityInfo, File: &pipeline.File{Path: itemPath(n)}})
	}
	rl.Items = kept
	if len(pruned) == 0 {
		rl.Results = append(rl.Results, &pipeline.Result{Message: "Found no resources to prune with the local config annotation", Severity: pipeline.SeverityWarning})
		return nil
	}
	rl.Results = append(rl.Results, info(fmt.Sprintf("Number of resources pruned: %d", len(pruned))))
	rl.Results = append(rl.Results, pruned...)
	return nil
}

const gatekeeperConstraintAPIVersion = "constraints.gatekeeper.sh/v1beta1"

// setEnforcementAction is the catalog's set-enforcement-action: a
// ConfigMap whose data is exactly enforcementAction (deny, warn or
// dryrun) sets spec.enforcementAction of every Gatekeeper constraint
// (constraints.gatekeeper.sh/v1beta1 with a kind and a name). Any other
// config is an error result that fails the step.
func setEnforcementAction(ctx context.Context, rl *pipeline.ResourceList) error {
	var data map[string]string
	if !rl.FunctionConfig.IsNilOrEmpty() {
		data = rl.FunctionConfig.GetDataMap()
	}
	if len(data) != 1 {
		return kyamlConfigErr("failed to process policies: expecting exactly 1 enforcementAction as part of the ConfigMap")
	}
	action := data["enforcementAction"]
	if action != "deny" && action != "warn" && action != "dryrun" {
		return kyamlConfigErr("failed to process policies: expected values for enforcementAction are [deny] or [warn] or [dryrun]")
	}
	var set pipeline.Results
	for _, n := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if n.IsNilOrEmpty() || n.GetName() == "" || n.GetKind() == "" || n.GetApiVersion() != gatekeeperConstraintAPIVersion {
			continue
		}
		if err := n.PipeE(yaml.LookupCreate(yaml.MappingNode, "spec"), yaml.SetField("enforcementAction", yaml.NewScalarRNode(action))); err != nil {
			return failWith(rl, "failed to process policies: "+err.Error())
		}
		set = append(set, &pipeline.Result{Message: fmt.Sprintf("Policy name: [%s]", n.GetName()),
			Severity: pipeline.SeverityInfo, File: &pipeline.File{Path: itemPath(n)}})
	}
	if len(set) == 0 {
		rl.Results = append(rl.Results, &pipeline.Result{Message: fmt.Sprintf("Found no policy to set to [%s]", action), Severity: pipeline.SeverityWarning})
		return nil
	}
	rl.Results = append(rl.Results, info(fmt.Sprintf("Number of policies set to [%s]: %d", action, len(set))))
	rl.Results = append(rl.Results, set...)
	return nil
}

const (
	upsertTargetPathAnnotation = "config.kubernetes.io/target-path"
	legacyFunctionAnnotation   = "config.k8s.io/function"
	functionAnnotation         = "config.kubernetes.io/function"
)

// upsertResource is the catalog's upsert-resource: the functionConfig is
// the resource to upsert, or a List whose items are. Each replaces every
// item of the same group, kind, name and namespace (and, when it carries
// config.kubernetes.io/target-path, at that path), keeping the replaced
// item's file; items that are function configs are never replaced. A
// resource that replaces nothing is added, in the file its target-path
// names (else the renderer's default path). A config without metadata
// fails the step.
func upsertResource(ctx context.Context, rl *pipeline.ResourceList) error {
	fail := func(err error) error { return kyamlConfigErr("failed to upsert resource: " + err.Error()) }
	fc := rl.FunctionConfig
	if fc.IsNilOrEmpty() {
		return fail(errors.New("missing Resource metadata"))
	}
	var inputs []*yaml.RNode
	if fc.GetKind() == "List" {
		for _, it := range getSlice(fc, "items") {
			inputs = append(inputs, it)
		}
	} else {
		inputs = []*yaml.RNode{fc}
	}
	// Every input is checked before any is upserted: a config error
	// changes nothing.
	for _, in := range inputs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := in.GetMeta(); err != nil {
			return fail(err)
		}
	}
	for _, in := range inputs {
		if err := ctx.Err(); err != nil {
			return err
		}
		inAnns := in.GetAnnotations()
		target := inAnns[upsertTargetPathAnnotation]
		g, _ := groupVersion(in.GetApiVersion())
		replaced := false
		for i, n := range rl.Items {
			if err := ctx.Err(); err != nil {
				return err
			}
			a := n.GetAnnotations()
			if a[functionAnnotation] != "" || a[legacyFunctionAnnotation] != "" {
				continue
			}
			ng, _ := groupVersion(n.GetApiVersion())
			if ng != g || n.GetKind() != in.GetKind() || n.GetName() != in.GetName() || n.GetNamespace() != in.GetNamespace() {
				continue
			}
			if target != "" && target != a[kioutil.PathAnnotation] && target != a[kioutil.LegacyPathAnnotation] {
				continue
			}
			out := in.Copy()
			anns := map[string]string{}
			for k, v := range inAnns {
				anns[k] = v
			}
			delete(anns, functionAnnotation)
			delete(anns, legacyFunctionAnnotation)
			delete(anns, upsertTargetPathAnnotation)
			for _, k := range []string{kioutil.PathAnnotation, kioutil.IndexAnnotation, kioutil.LegacyPathAnnotation, kioutil.LegacyIndexAnnotation} {
				delete(anns, k)
				if v, ok := a[k]; ok {
					anns[k] = v
				}
			}
			if err := out.SetAnnotations(anns); err != nil {
				return fail(err)
			}
			rl.Items[i] = out
			replaced = true
		}
		if replaced {
			continue
		}
		out := in.Copy()
		anns := out.GetAnnotations()
		for _, k := range []string{functionAnnotation, legacyFunctionAnnotation, upsertTargetPathAnnotation,
			kioutil.PathAnnotation, kioutil.IndexAnnotation, kioutil.LegacyPathAnnotation, kioutil.LegacyIndexAnnotation} {
			delete(anns, k)
		}
		if target != "" {
			anns[kioutil.PathAnnotation] = target
		}
		if err := out.SetAnnotations(anns); err != nil {
			return fail(err)
		}
		rl.Items = append(rl.Items, out)
	}
	return nil
}

// format is the catalog's format: kyaml's format filter with the
// Kubernetes schema, which orders fields as the OpenAPI document does
// (others alphabetically), fixes indentation and quotes ambiguous string
// values ("100", "true"). kpt and cad restore the input's field order
// afterwards, so in a render the quoting is what shows.
func formatFn(ctx context.Context, rl *pipeline.ResourceList) error {
	if _, err := (filters.FormatFilter{UseSchema: true}).Filter(rl.Items); err != nil {
		return failWith(rl, "failed to format resources: "+err.Error())
	}
	return nil
}

var kccAPIVersion = regexp.MustCompile(`^(\w+)\.cnrm\.cloud\.google\.com/\w+$`)

const (
	projectIDSetter     = "project-id"
	projectIDAnnotation = "cnrm.cloud.google.com/project-id"
)

// setProjectID is the catalog's set-project-id: given a ConfigMap with
// data project-id, it sets the project-id setter of every Kptfile among
// the items (in the configMap or configPath of its first apply-setters
// mutator when that does not set it yet, else in a new apply-setters
// mutator, declaring the pipeline if needed), and the
// cnrm.cloud.google.com/project-id annotation of every Config Connector
// resource (apiVersion *.cnrm.cloud.google.com/*, except core) that has
// none or an empty one, as the catalog documents. The Kptfile is edited in
// place, comments kept. No Kptfile among the items, or no project-id, is
// an error that fails the step.
func setProjectID(ctx context.Context, rl *pipeline.ResourceList) error {
	var id string
	if !rl.FunctionConfig.IsNilOrEmpty() {
		id = rl.FunctionConfig.GetDataMap()[projectIDSetter]
	}
	if id == "" {
		return kyamlConfigErr("failed to set project-id setter: `data.project-id` should not be empty")
	}
	found := false
	for _, n := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if n.GetKind() != "Kptfile" {
			continue
		}
		found = true
		if err := setProjectIDSetter(rl.Items, n, id); err != nil {
			return failWith(rl, "failed to set project-id setter: error updating Kptfile: "+err.Error())
		}
	}
	if !found {
		return failWith(rl, "failed to set project-id setter: failed to find Kptfile: unable to find Kptfile, please include --include-meta-resources flag if a Kptfile is present")
	}
	for _, n := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		m := kccAPIVersion.FindStringSubmatch(n.GetApiVersion())
		if len(m) != 2 || m[1] == "core" || n.GetAnnotations()[projectIDAnnotation] != "" {
			continue
		}
		if err := n.PipeE(yaml.LookupCreate(yaml.MappingNode, "metadata", "annotations"), yaml.SetField(projectIDAnnotation, yaml.NewStringRNode(id))); err != nil {
			return failWith(rl, "failed to set project-id annotation: "+err.Error())
		}
	}
	return nil
}

func setProjectIDSetter(items []*yaml.RNode, kf *yaml.RNode, id string) error {
	for _, m := range getSlice(kf, "pipeline", "mutators") {
		img, _ := nestedString(m, "image")
		if !strings.Contains(img, "apply-setters") {
			continue
		}
		if cm := getMap(m, "configMap"); cm != nil {
			if v, _ := nestedString(cm, projectIDSetter); v == "" {
				return cm.PipeE(yaml.SetField(projectIDSetter, yaml.NewStringRNode(id)))
			}
			return nil
		}
		if p, ok := nestedString(m, "configPath"); ok && p != "" {
			dir := strings.TrimSuffix(itemPath(kf), "Kptfile")
			for _, n := range items {
				if itemPath(n) == dir+p || itemPath(n) == p {
					if v := n.GetDataMap()[projectIDSetter]; v == "" {
						return n.PipeE(yaml.LookupCreate(yaml.MappingNode, "data"), yaml.SetField(projectIDSetter, yaml.NewStringRNode(id)))
					}
					return nil
				}
			}
			return fmt.Errorf("failed to find setter file: file %s doesn't exist, please ensure the file specified in \"configPath\" exists and retry", p)
		}
		return errors.New("unable to find `ConfigMap` or `configPath` as the `functionConfig` for apply-setters")
	}
	mutators, err := kf.Pipe(yaml.LookupCreate(yaml.SequenceNode, "pipeline", "mutators"))
	if err != nil {
		return err
	}
	fn := yaml.NewMapRNode(nil)
	if err := fn.PipeE(yaml.SetField("image", yaml.NewStringRNode("gcr.io/kpt-fn/apply-setters:v0.2"))); err != nil {
		return err
	}
	if err := fn.PipeE(yaml.LookupCreate(yaml.MappingNode, "configMap"), yaml.SetField(projectIDSetter, yaml.NewStringRNode(id))); err != nil {
		return err
	}
	return mutators.PipeE(yaml.Append(fn.YNode()))
}
