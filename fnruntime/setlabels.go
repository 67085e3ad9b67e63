package fnruntime

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// setLabels ports the catalog's set-labels: metadata labels plus the
// selector and template labels of workload kinds and NetworkPolicy.
// No functionConfig, or kpt's implicit empty ConfigMap function-input, is
// the one config error reported with an info result (kpt's conformance
// case fn-render/no-fnconfig); it fails the step all the same, with an
// error matching ErrInvalidFunctionConfig.
func setLabels(ctx context.Context, rl *pipeline.ResourceList) error {
	fc := rl.FunctionConfig
	var labels map[string]string
	notGiven := fc.IsNilOrEmpty() || (isGVK(fc, "", "v1", "ConfigMap") && fc.GetName() == "function-input" && len(configData(fc)) == 0)
	switch {
	case notGiven:
		rl.Results = append(rl.Results, info("`FunctionConfig` is not given"))
	case isGVK(fc, "", "v1", "ConfigMap"):
		labels = configData(fc)
	case isGVK(fc, "fn.kpt.dev", "v1alpha1", "SetLabels"):
		var err error
		if labels, err = strictStringMap(fc, "SetLabels", "labels"); err != nil {
			return configErr(err.Error())
		}
	default:
		return configErr(fmt.Sprintf("unknown FunctionConfig `%v`, expect SetLabels", fc.GetKind()))
	}
	objects := nonLocal(rl.Items)
	if len(objects) == 0 {
		rl.Results = append(rl.Results, info("no input resources"))
		return nil
	}
	if notGiven {
		fe := sdkFailure().(*pipeline.FunctionError)
		fe.Err = errors.Join(ErrInvalidFunctionConfig, fe.Err)
		return fe
	}
	if len(labels) == 0 {
		rl.Results = append(rl.Results, &pipeline.Result{Message: "no `labels` arguments are given in FunctionConfig", Severity: pipeline.SeverityWarning})
		return nil
	}
	s := &labelSetter{ctx: ctx, budget: budgetFrom(ctx), labels: labels, quotes: quoteCache{}}
	for k := range labels {
		s.keys = append(s.keys, k)
	}
	sort.Strings(s.keys)
	failed := false
	for _, o := range objects {
		if err := s.object(o); err != nil {
			if ctx.Err() != nil || refusedByLimit(err) {
				return err
			}
			rl.Results = append(rl.Results, errorResult(err.Error()))
			failed = true
		}
	}
	rl.Results = append(rl.Results, info(fmt.Sprintf("set %v labels in total", s.count)))
	if failed {
		return sdkFailure()
	}
	return nil
}

type labelSetter struct {
	ctx    context.Context
	budget *budget
	labels map[string]string
	keys   []string // labels' keys, sorted
	quotes quoteCache
	count  int
}

func (p *labelSetter) object(o *yaml.RNode) error {
	if err := p.update(o, true, "metadata", "labels"); err != nil {
		return err
	}
	if isGVK(o, "", "v1", "Service") || isGVK(o, "", "v1", "ReplicationController") {
		if err := p.update(o, true, "spec", "selector"); err != nil {
			return err
		}
	}
	if isGVK(o, "", "", "Deployment") || isGVK(o, "", "", "ReplicaSet") || isGVK(o, "", "", "DaemonSet") || isGVK(o, "apps", "", "StatefulSet") {
		if err := p.update(o, true, "spec", "selector", "matchLabels"); err != nil {
			return err
		}
	} else if isGVK(o, "batch", "", "Job") || isGVK(o, "policy", "", "PodDisruptionBudget") {
		if err := p.update(o, false, "spec", "selector", "matchLabels"); err != nil {
			return err
		}
	}
	netpol := isGVK(o, "networking.k8s.io", "", "NetworkPolicy")
	if netpol {
		if err := p.update(o, false, "spec", "podSelector", "matchLabels"); err != nil {
			return err
		}
	}
	spec := getMap(o, "spec")
	if spec == nil {
		return nil
	}
	if isGVK(o, "", "v1", "ReplicationController") || isGVK(o, "", "", "Deployment") || isGVK(o, "", "", "ReplicaSet") ||
		isGVK(o, "", "", "DaemonSet") || isGVK(o, "apps", "", "StatefulSet") || isGVK(o, "batch", "", "Job") {
		_ = p.pod(getMap(spec, "template"))
	}
	if isGVK(o, "batch", "", "CronJob") {
		if job := getMap(spec, "jobTemplate"); job != nil {
			if err := p.update(job, true, "metadata", "labels"); err != nil {
				return err
			}
			js := getMap(job, "spec")
			if err := p.update(js, false, "selector", "matchLabels"); err != nil {
				return err
			}
			if err := p.pod(getMap(js, "template")); err != nil {
				return err
			}
		}
	}
	if isGVK(o, "apps", "", "StatefulSet") {
		for _, v := range getSlice(spec, "volumeClaimTemplates") {
			if err := p.update(v, true, "metadata", "labels"); err != nil {
				return err
			}
			if err := p.update(v, false, "selector", "matchLabels"); err != nil {
				return err
			}
		}
	}
	if netpol {
		for _, in := range getSlice(spec, "ingress") {
			for _, f := range getSlice(in, "from") {
				if err := p.update(f, false, "podSelector", "matchLabels"); err != nil {
					return err
				}
			}
		}
		for _, eg := range getSlice(spec, "egress") {
			for _, t := range getSlice(eg, "to") {
				if err := p.update(t, false, "podSelector", "matchLabels"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (p *labelSetter) pod(pod *yaml.RNode) error {
	if pod == nil {
		return nil
	}
	if err := p.update(pod, true, "metadata", "labels"); err != nil {
		return err
	}
	spec := getMap(pod, "spec")
	if spec == nil {
		return nil
	}
	for _, t := range getSlice(spec, "topologySpreadConstraints") {
		if err := p.update(t, false, "labelSelector", "matchLabels"); err != nil {
			return err
		}
	}
	if aff := getMap(spec, "affinity"); aff != nil {
		for _, kind := range []string{"podAffinity", "podAntiAffinity"} {
			if getMap(aff, kind) == nil {
				continue
			}
			// The catalog looks for the terms on the affinity object itself.
			for _, t := range getSlice(aff, "preferredDuringSchedulingIgnoredDuringExecution") {
				if term := getMap(t, "podAffinityTerm"); term != nil {
					if err := p.update(term, false, "labelSelector", "matchLabels"); err != nil {
						return err
					}
				}
			}
			for _, t := range getSlice(aff, "requiredDuringSchedulingIgnoredDuringExecution") {
				if err := p.update(t, false, "labelSelector", "matchLabels"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// update sets every label under path (creating it when create is set) and
// counts each label, as the catalog does. The mapping under path is
// indexed once, so that a call is linear in the number of labels, and
// each label written is charged to the run's budget.
func (p *labelSetter) update(o *yaml.RNode, create bool, path ...string) error {
	if o == nil {
		return nil
	}
	if err := p.ctx.Err(); err != nil {
		return err
	}
	var fi *fieldIndex
	if m, err := o.Pipe(yaml.Lookup(path...)); err == nil && m != nil && m.YNode().Kind == yaml.MappingNode {
		fi = newFieldIndex(m.YNode())
	}
	for _, k := range p.keys {
		v := p.labels[k]
		var old *yaml.Node
		if fi != nil {
			old = fi.get(k)
		}
		exist := old != nil && old.Kind == yaml.ScalarNode && old.ShortTag() != yaml.NodeTagNull
		if (exist && old.Value != v) || (!exist && create) {
			if fi == nil {
				m, err := o.Pipe(yaml.LookupCreate(yaml.MappingNode, path...))
				if err != nil {
					return err
				}
				fi = newFieldIndex(m.YNode())
			}
			if err := p.budget.charge(scalarSize(k, len(path)) + scalarSize(v, 0)); err != nil {
				return err
			}
			fi.setString(k, v, p.quotes)
		}
		p.count++
	}
	return nil
}

// setLabelsV02 is set-labels v0.2.x as released (v0.2.0's tests), which a
// step pinning v0.2.x runs: setLabels, with the config errors of the kpt
// functions SDK the release is built on, one result of message and
// severity naming nothing: a config of another kind is "unknown
// FunctionConfig `<Kind.group>`, expect `SetLabels.fn.kpt.dev` or
// `ConfigMap.v1`", and a SetLabels whose labels are not a map of strings
// is "unable to convert object to *setlabels.SetLabels with error: <the
// decoding error>". An unpinned or latest step runs setLabels, the
// catalog's later code.
func setLabelsV02(ctx context.Context, rl *pipeline.ResourceList) error {
	err := setLabels(ctx, rl)
	var ce *configError
	if !errors.As(err, &ce) {
		return err
	}
	out := *ce
	out.noRef = true
	fc := rl.FunctionConfig
	group, _ := groupVersion(fc.GetApiVersion())
	switch {
	case group == "" && fc.GetKind() == "ConfigMap":
	case group == "fn.kpt.dev" && fc.GetKind() == "SetLabels":
		out.msg = "unable to convert object to *setlabels.SetLabels with error: " + ce.msg
	default:
		gk := fc.GetKind()
		if group != "" {
			gk += "." + group
		}
		out.msg = fmt.Sprintf("unknown FunctionConfig `%s`, expect `SetLabels.fn.kpt.dev` or `ConfigMap.v1`", gk)
	}
	return &out
}
