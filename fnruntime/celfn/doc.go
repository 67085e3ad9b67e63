// Package celfn evaluates CEL (github.com/google/cel-go) over KRM
// resources, for pipeline steps.
//
// An [Evaluator] implements two pipeline interfaces:
//
//   - pipeline.ConditionEvaluator ([Evaluator.Eval]): the Condition that
//     skips a step; the expression must yield a bool.
//   - pipeline.InputEvaluator ([Evaluator.EvalString]): computed function
//     inputs, the values of a step's ConfigMapExprs. Each result overlays
//     the step's static ConfigMap (the expression wins on a clash) in the
//     function-input ConfigMap. A string is used as is, an int, uint,
//     double or bool is formatted; any other result is a [*CompileError].
//
// Pass one Evaluator as both Options.Conditions and Options.Inputs of a
// pipeline.Renderer. Expressions see the resources of the step's package
// (before selectors) as the variable resources, a list of maps, one per
// resource. For example, with a ConfigMap named env in the package,
//
//	resources.filter(r, r.kind == "ConfigMap" && r.metadata.name == "env")[0].data.namespace
//
// computes the namespace input of set-namespace.
//
// [Validator] is a KRM validator function whose rules are CEL expressions
// over each resource (the variable object), in the spirit of
// ValidatingAdmissionPolicy. [Evaluator.ValidatorFunction] is the same
// validator declared in a package: a step naming [ValidatorImage], its
// rules in a ValidationRules functionConfig (or one rule in an inline
// configMap).
//
// In a Kptfile (kpt.dev/v1) a step's condition is kpt's own field and
// configMapExprs is cad's; both are read into the step. [Evaluator.Install]
// wires an Evaluator into a renderer's options and registers the validator
// with a function registry, which is all a program needs for such
// Kptfiles to render; the example binaries do it.
//
// The environment is built once; each expression is compiled once and its
// program cached; evaluation honours the context and a cost limit, and an
// expression over its budget fails with an error matching [ErrCostLimit]
// instead of running on. Failures of computed inputs reach the caller
// wrapped in a *pipeline.ExprError naming the step and key.
package celfn
