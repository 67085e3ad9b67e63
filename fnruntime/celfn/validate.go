package celfn

import (
	"context"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/pipeline"
)

// The declarative CEL validator, usable from a Kptfile or cad's package
// file as a validator step:
//
//	pipeline:
//	  validators:
//	  - image: cad.configasdata.dev/validate-cel
//	    configPath: rules.yaml
//
// with rules.yaml a ValidationRules object (marked local-config so that it
// is not deployed):
//
//	apiVersion: fn.cad.configasdata.dev/v1alpha1
//	kind: ValidationRules
//	metadata:
//	  name: rules
//	  annotations:
//	    config.kubernetes.io/local-config: "true"
//	spec:
//	  rules:
//	  - expression: object.kind != "Secret"
//	    message: secrets do not belong in this package
//
// or, for one rule, an inline configMap with the keys expression and
// message. Each rule's expression sees the resource as object and all of
// them as resources, and must be true for every resource.
const (
	// ValidatorImage is the image a step names to run the validator.
	ValidatorImage = "cad.configasdata.dev/validate-cel"
	// RulesAPIVersion and RulesKind are the functionConfig's type.
	RulesAPIVersion = "fn.cad.configasdata.dev/v1alpha1"
	RulesKind       = "ValidationRules"
)

// ValidatorFunction returns the declarative CEL validator: a
// pipeline.Function whose rules come from its functionConfig (see
// ValidatorImage). A missing or malformed functionConfig, or one without
// rules, fails the step with an error result, as the catalog's functions
// do with a bad config; a rule that does not compile fails it the same
// way, naming the rule.
func (e *Evaluator) ValidatorFunction() pipeline.Function {
	return pipeline.FunctionFunc(func(ctx context.Context, rl *pipeline.ResourceList) error {
		rules, err := rulesOf(rl.FunctionConfig)
		if err != nil {
			rl.Results = append(rl.Results, &pipeline.Result{Message: err.Error(), Severity: pipeline.SeverityError})
			return &pipeline.FunctionError{ExitCode: 1, Stderr: err.Error(), Err: err}
		}
		for _, r := range rules {
			if _, err := e.program(r.Expression); err != nil {
				rl.Results = append(rl.Results, &pipeline.Result{Message: err.Error(), Severity: pipeline.SeverityError})
				return &pipeline.FunctionError{ExitCode: 1, Stderr: err.Error(), Err: err}
			}
		}
		return (&Validator{Evaluator: e, Rules: rules}).Run(ctx, rl)
	})
}

// rulesOf reads the rules of a ValidationRules object or a function-input
// ConfigMap.
func rulesOf(fc *yaml.RNode) ([]Rule, error) {
	if fc.IsNilOrEmpty() {
		return nil, fmt.Errorf("validate-cel: no functionConfig: give a %s or a configMap with an expression", RulesKind)
	}
	switch {
	case fc.GetApiVersion() == "v1" && fc.GetKind() == "ConfigMap":
		data := fc.GetDataMap()
		if data["expression"] == "" {
			return nil, fmt.Errorf("validate-cel: the configMap has no expression")
		}
		for k := range data {
			if k != "expression" && k != "message" {
				return nil, fmt.Errorf("validate-cel: unknown configMap key %q (expression, message)", k)
			}
		}
		return []Rule{{Expression: data["expression"], Message: data["message"]}}, nil
	case fc.GetApiVersion() == RulesAPIVersion && fc.GetKind() == RulesKind:
	default:
		return nil, fmt.Errorf("validate-cel: unknown functionConfig %s/%s, expect %s/%s", fc.GetApiVersion(), fc.GetKind(), RulesAPIVersion, RulesKind)
	}
	var spec struct {
		Spec struct {
			Rules []Rule `yaml:"rules"`
		} `yaml:"spec"`
	}
	s, err := fc.String()
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal([]byte(s), &spec); err != nil {
		return nil, fmt.Errorf("validate-cel: %s: %v", RulesKind, err)
	}
	if len(spec.Spec.Rules) == 0 {
		return nil, fmt.Errorf("validate-cel: %s %q has no spec.rules", RulesKind, fc.GetName())
	}
	for i, r := range spec.Spec.Rules {
		if r.Expression == "" {
			return nil, fmt.Errorf("validate-cel: %s %q: spec.rules[%d] has no expression", RulesKind, fc.GetName(), i)
		}
	}
	return spec.Spec.Rules, nil
}

// Registrar is what Install registers the validator with:
// *fnruntime.Registry.
type Registrar interface {
	Register(name string, fn pipeline.Function)
}

// Install makes e the evaluator of step conditions and computed inputs in
// opts (when opts is not nil) and registers the validator under
// ValidatorImage in reg (when reg is not nil), so that Kptfiles and
// package files with condition, configMapExprs or validate-cel steps
// render.
func (e *Evaluator) Install(opts *pipeline.Options, reg Registrar) {
	if opts != nil {
		opts.Conditions, opts.Inputs = e, e
	}
	if reg != nil {
		reg.Register(ValidatorImage, e.ValidatorFunction())
	}
}
