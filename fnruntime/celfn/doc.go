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
// program cached (see [Programs]). Failures of computed inputs reach the
// caller wrapped in a *pipeline.ExprError naming the step and key.
//
// # Bounds
//
// An expression is user input: a few hundred bytes of CEL can ask for
// terabytes or hours. Every evaluation (of an Evaluator, a Validator, or a
// [Programs] such as variant's templates) runs under three bounds, each
// refusing with a *revision.LimitError that matches revision.ErrLimit and
// names its option:
//
//   - The value bound, [WithMaxValueBytes] (default [DefaultMaxValueBytes],
//     1 MiB): a call of a function whose result can be larger than its
//     arguments is refused before the function runs when its result would
//     exceed the bound, computed from the arguments: string and bytes +
//     (the sum of the lengths), list + (16 bytes an element), replace
//     (exact), split (16 bytes a piece), join (the elements and
//     separators), format (the format plus a bound of each argument's
//     formatting), strings.quote (three bytes a byte), and, when a library
//     adding them is given with [WithEnvOptions], base64.encode and
//     lists.range. cel-go's cost tracking charges a result only once it is
//     made, so without this x.replace("", x) three deep allocated tens of
//     gigabytes in one call. Functions whose result is never larger than
//     an argument (substring, trim, lowerAscii, reverse, conversions) are
//     not checked; comprehensions add one element an iteration and are
//     bounded by the cost limit.
//   - The cost limit, [WithCostLimit] (default [DefaultCostLimit], in
//     cel-go's runtime cost units, which charge string and list operations
//     by their sizes): an evaluation past it stops with [ErrCostLimit].
//     Comparisons (==, !=, in) of nested lists and maps are charged the
//     elements they would walk before they run: literals share elements,
//     so a value of 2^40 nested elements costs nothing to build, and
//     comparing it is one call nothing else could stop.
//   - The timeout, [WithTimeout] (default [DefaultTimeout], 10 s), besides
//     the caller's context: either is noticed at the next iteration of a
//     comprehension or the next guarded call, and the timeout fails with
//     [ErrTimeout], the context with its error.
//
// Functions of other libraries given with WithEnvOptions are bounded only
// by the cost limit and the timeout.
package celfn
