// Package pipeline transforms packages with KRM functions.
//
// A [ResourceList] (config.kubernetes.io/v1) is the unit a [Function]
// works on: items, a functionConfig and [Results]. Steps of a pipeline are
// data ([Step], [Steps]); a [Resolver] passed in by the caller turns each
// step into a Function (fnruntime.Registry is the standard one). There is
// no package-level registration.
//
// [Renderer] implements [Pipeline] with the semantics of kpt fn render:
// subpackages depth-first (or breadth-first with kpt.dev/bfs-rendering),
// mutators then validators, selectors and exclude, configPath and
// configMap, non-KRM files carried through (an in-process function reads
// them in ResourceList.PackageFiles and writes them through
// ResourceList.WriteFiles), the root Kptfile's Rendered
// condition and renderStatus, and kpt.dev/save-on-render-failure. The root
// Kptfile is edited in place: only its status is rewritten, so a step's
// configMap keeps its key order and quoting, an empty configMap and
// comments stay (Options.KptStyleKptfile rewrites it as kpt does). Use
// [NewKptfile] for kpt packages and [New] for packages whose steps come
// from code.
//
// Where a package's steps come from, first match wins: steps given in code
// ([New]) for the root; else the root Kptfile's pipeline; else, for a
// package without a Kptfile, spec.pipeline of cad's package file
// (revision.PackageFileName, see [StepsFromPackageFile]), which may use
// conditions and computed inputs; else no step. A Kptfile and a package
// file are never merged: beside a Kptfile, the package file is an ordinary
// local-config resource. A package with no Kptfile, no package file and no
// subpackage is returned unparsed; [Options].RequireKptfile restores kpt's
// refusal of a root without a Kptfile.
//
// Beyond kpt, a step may carry expressions the caller's evaluators run over
// the package's resources: a Condition that skips the step
// (Options.Conditions, a [ConditionEvaluator]) and ConfigMapExprs, computed
// function inputs whose values overlay the static ConfigMap, winning on a
// clash (Options.Inputs, an [InputEvaluator]). fnruntime/celfn implements
// both with CEL. A failed computed input is an *[ExprError] naming the step
// and key, and fails the render like any other step failure.
//
// Function diagnostics are data ([Results], [StepResult]); a Go error
// means the render failed, and a failed render returns a *[RenderError]
// carrying the results of every step that ran.
package pipeline
