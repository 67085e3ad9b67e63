package fnruntime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Builtins returns the in-process functions, by catalog name, as a new
// map: set-namespace, set-labels, set-annotations, set-image,
// search-replace, starlark ([StarlarkFunction]), apply-replacements,
// apply-setters, ensure-name-substring, upsert-resource, set-project-id,
// remove-local-config-resources, format, set-enforcement-action,
// list-setters, create-setters, fix, generate-folders, kubeconform,
// enable-gcp-services, export-terraform, generate-kpt-pkg-docs and kpt's
// builtins/gen-pkg-context.
// They follow the catalog functions of the same name for the documented
// inputs, including their result messages where the documentation gives
// them, and fail (a *pipeline.FunctionError) whenever they report an error
// result. A config error has one shape in every builtin (one error result
// naming the functionConfig, an error matching ErrInvalidFunctionConfig;
// see fnruntime/DESIGN.md, "Config errors"). apply-replacements is
// written from kustomize's replacements reference and the catalog's
// README; [BuiltinVersions] says, per function, what differs.
func Builtins() map[string]pipeline.Function {
	return map[string]pipeline.Function{
		"set-namespace":                 strict(setNamespace),
		"set-labels":                    strict(setLabels),
		"set-annotations":               strict(setAnnotations),
		"set-image":                     strict(setImage),
		"search-replace":                strict(searchReplaceFn),
		"starlark":                      &StarlarkFunction{},
		"apply-replacements":            strict(applyReplacements),
		"apply-setters":                 strict(applySetters),
		"ensure-name-substring":         strict(ensureNameSubstring),
		"upsert-resource":               strict(upsertResource),
		"set-project-id":                strict(setProjectID),
		"remove-local-config-resources": strict(removeLocalConfigResources),
		"format":                        strict(formatFn),
		"set-enforcement-action":        strict(setEnforcementAction),
		"list-setters":                  strict(listSetters),
		"create-setters":                strict(createSetters),
		"fix":                           strict(fixKptfiles),
		"generate-folders":              strict(generateFolders),
		"kubeconform":                   strict(kubeconform),
		"enable-gcp-services":           strict(enableGCPServices),
		"export-terraform":              strict(exportTerraformFor("v0.3")),
		"generate-kpt-pkg-docs":         strict(generateKptPkgDocs),
		PkgContextFunction:              strict(genPkgContext),
	}
}

// strict makes a builtin fail as its catalog function's process does: the
// catalog's Go SDK and kyaml's framework both exit 1 when the function
// returned a result of severity error, whatever the function itself
// returned. A function that added an error result and returned nil
// therefore fails with the SDK's "function failure", its results kept.
//
// strict also bounds the run (see [Limits]): the function runs with a
// budget sized by its input, which it charges as it writes, and what it
// added is measured before it returns; a run over a bound fails with an
// error matching revision.ErrLimit.
func strict(fn func(context.Context, *pipeline.ResourceList) error) pipeline.Function {
	return pipeline.FunctionFunc(func(ctx context.Context, rl *pipeline.ResourceList) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		before := len(rl.Results)
		l := limitsFrom(ctx)
		in := listSize(rl, -1)
		b := newBudget(ctx, "builtin output", l, in)
		if err := fn(context.WithValue(ctx, budgetKey{}, b), rl); err != nil {
			var ce *configError
			var fe *pipeline.FunctionError
			switch {
			case errors.As(err, &ce):
				return reportConfigError(rl, before, ce)
			case refusedByLimit(err) && !errors.As(err, &fe):
				return limitFailure(rl, before, err)
			}
			return err
		}
		// What the run added, charged or not.
		if out := listSize(rl, satAdd(in, b.max)); out > in {
			if err := b.check(out - in); err != nil {
				return limitFailure(rl, before, err)
			}
		}
		if before <= len(rl.Results) && pipeline.Results(rl.Results[before:]).HasErrors() {
			return sdkFailure()
		}
		return nil
	})
}

// CatalogVersion says which releases of a catalog function a builtin
// implements.
type CatalogVersion struct {
	// Releases are the newest release of each minor line the builtin
	// behaves like ("v0.4.1" stands for every v0.4.x), oldest first. A
	// step pinning a version of one of these lines, or a constraint one
	// of these releases satisfies, resolves to the builtin; any other
	// version gives a *VersionError (see Registry.Resolve).
	Releases []string
	// Differs says what the builtin does not do as the implemented
	// releases document, and why other lines are refused; empty when
	// nothing is known to differ.
	Differs string
	// SortsOutput says the catalog function is built on the kpt
	// functions SDK (krm-functions-sdk's go/fn), whose ResourceList
	// output is sorted by apiVersion, kind, namespace and name whatever
	// the function did; functions on kyaml's framework keep their order.
	// The builtin itself keeps the input order (the renderer writes each
	// resource back to its own file either way); a tool that prints the
	// output list, as kpt fn eval does, sorts it when this is set.
	SortsOutput bool
	// Released are the versions of the function known to have been
	// released, oldest first: the catalog repository's git tags as of
	// 2025-06-25 (catalogReleases) and the versions known to be published
	// without a git tag (catalogUntaggedReleases: set-namespace v0.4.3,
	// set-labels v0.2.5 and apply-setters v0.2.2, which Porch's test
	// blueprints and kpt's fixtures pull from the registry). It is a
	// record, not a gate: the catalog publishes patch images from its
	// release branches without tagging them, so no list cad can hold is
	// complete, and a version missing from it is not known not to exist.
	// A pinned version therefore resolves whenever its minor line is
	// implemented (the catalog's versioning policy keeps a minor line's
	// behaviour across patches); only a function known never to have
	// been released with a version (Unreleased) refuses versions.
	Released []string
	// Unreleased says the catalog never released the function with a
	// version: its documentation runs it by a plain tag ("unstable"), and
	// Releases and Released are empty. Such a builtin resolves for plain
	// tags only; any version or constraint gives a *VersionError (never
	// released).
	Unreleased bool
}

// catalogUntaggedReleases are released versions that have no git tag in
// the catalog repository (as of 2025-06-25), by function, each with where
// it is seen published: Porch's test blueprints and kpt's fixtures pull
// set-namespace:v0.4.3, set-labels:v0.2.5 and apply-setters:v0.2.2
// (Porch's e2e TestApplySetters and its bucket blueprint pin
// apply-setters v0.2.2) from the catalog's registry.
var catalogUntaggedReleases = map[string][]string{
	"set-namespace": {"v0.4.3"},
	"set-labels":    {"v0.2.5"},
	"apply-setters": {"v0.2.2"},
}

// catalogReleases are the catalog's release tags by function (the
// krm-functions-catalog repository's tags <fn>/vX.Y.Z, functions/go/<fn>/
// and go/<fn>/ ones included, as of 2025-06-25, read from a clone of
// github.com/kptdev/krm-functions-catalog with git tag).
var catalogReleases = map[string][]string{
	"set-namespace":                 {"v0.1.0", "v0.1.1", "v0.1.2", "v0.1.3", "v0.1.4", "v0.2.0", "v0.3.0", "v0.3.1", "v0.3.2", "v0.3.3", "v0.3.4", "v0.4.0", "v0.4.1"},
	"set-labels":                    {"v0.1.3", "v0.1.4", "v0.1.5", "v0.2.0", "v0.2.1"},
	"set-annotations":               {"v0.1.3", "v0.1.4"},
	"set-image":                     {"v0.1.0", "v0.1.1"},
	"search-replace":                {"v0.1.0", "v0.1.1", "v0.2.0"},
	"starlark":                      {"v0.1.0", "v0.1.1", "v0.1.2", "v0.2.0", "v0.2.1", "v0.2.2", "v0.3.0", "v0.4.0", "v0.4.1", "v0.4.2", "v0.4.3", "v0.5.0", "v0.5.1"},
	"apply-replacements":            {"v0.1.0", "v0.1.1", "v0.1.2"},
	"apply-setters":                 {"v0.1.0", "v0.1.1", "v0.2.0", "v0.2.1"},
	"ensure-name-substring":         {"v0.1.0", "v0.1.1", "v0.2.0"},
	"upsert-resource":               {"v0.1.0", "v0.2.0"},
	"set-project-id":                {"v0.1.0", "v0.2.0"},
	"remove-local-config-resources": {"v0.1.0"},
	"format":                        {"v0.1.0"},
	"set-enforcement-action":        {"v0.1.0"},
	"list-setters":                  {"v0.1.0"},
	"create-setters":                {"v0.1.0"},
	"fix":                           {"v0.2.0", "v0.2.1"},
	"generate-folders":              {"v0.1.1"},
	"enable-gcp-services":           {"v0.1.0"},
	"export-terraform":              {"v0.1.0", "v0.2.0", "v0.3.0"},
}

// mergeReleases returns a and b as one list, oldest first, each version
// once.
func mergeReleases(a, b []string) []string {
	if len(a)+len(b) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, v := range append(append([]string(nil), a...), b...) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		vi, erri := parseVersion(out[i])
		vj, errj := parseVersion(out[j])
		if erri != nil || errj != nil {
			return out[i] < out[j]
		}
		return vi.LessThan(vj)
	})
	return out
}

// BuiltinVersions returns, as a new map by builtin name, the catalog
// releases each builtin implements. Builtins not listed (kpt's
// gen-pkg-context, kubeconform, whose image kpt's tests pin only as
// latest) have no version and resolve for any tag; one marked Unreleased
// resolves for plain tags only. fnruntime/DESIGN.md has the same table,
// with what each implementation differs in.
func BuiltinVersions() map[string]CatalogVersion {
	out := builtinVersions()
	for name, cv := range out {
		cv.Released = mergeReleases(catalogReleases[name], catalogUntaggedReleases[name])
		cv.SortsOutput = sdkFunctions[name]
		out[name] = cv
	}
	return out
}

// sdkFunctions are the builtins whose catalog function runs on the kpt
// functions SDK's fn.AsMain (its main package), which sorts the output
// items; the others run on kyaml's fn/framework.
var sdkFunctions = map[string]bool{
	"set-namespace": true, "set-labels": true, "set-image": true, "starlark": true, "apply-replacements": true,
}

func builtinVersions() map[string]CatalogVersion {
	return map[string]CatalogVersion{
		"set-namespace": {Releases: []string{"v0.2.0", "v0.3.4", "v0.4.1"},
			Differs: "v0.2.x and v0.3.x have their own implementations, as their READMEs document: v0.2 is kustomize's namespace transformer (every resource not known to be cluster-scoped, custom kinds and the Kptfile included, Namespace names, binding subjects, additionalNamespaceFields); v0.3 replaces one old namespace chosen by namespaceMatcher, the single Namespace object or the one value all namespace fields share (restrict mode), with result messages worded by cad (the README gives none); v0.1 is refused"},
		"set-labels": {Releases: []string{"v0.2.0"},
			Differs: "v0.1.x (kustomize's label transformer and its field specs, additionalLabelFields) is refused"},
		"set-annotations": {Releases: []string{"v0.1.4"},
			Differs: "a step pinning v0.1.x runs v0.1.4 as released: no result when it succeeds, a config error as one result of message and severity naming nothing (stderr \"[error] : <message>\"); an unpinned or latest step behaves as the catalog's later code, which kpt's conformance cases pin as latest: one result per field set (\"set annotations: {...}\") and a config error naming the functionConfig"},
		"set-image": {Releases: []string{"v0.1.1"},
			Differs: "additionalImageFields updates existing fields only (create adds no field); a ConfigMap key other than name, newName, newTag and digest is a config error (the release ignores it)"},
		"search-replace": {Releases: []string{"v0.2.0"}},
		"starlark": {Releases: []string{"v0.4.3", "v0.5.0"},
			Differs: "load() provides json, math, time, base64, yaml, hash and krmfn, not bsoup, csv, geo, html, http, re, xlsx or zipfile; ctx.environment is empty"},
		"apply-replacements": {Releases: []string{"v0.1.1"},
			Differs: "written from kustomize's replacements reference and the catalog's v0.1.x README, not from either's code: an ApplyReplacements (fn.kpt.dev/v1alpha1) config only; a replacement given by path is refused (a function reads no files); sourceValue is refused (kustomize added it in v5.7.0, 2025, after v0.1.x); a source with a label or annotation selector is refused (the schema gives those to select and reject); name, namespace and [key=value] match exactly (no patterns); * picks every element of a list; a failing replacement leaves every resource unchanged; a field create adds with a delimiter starts as an empty string; error messages are cad's, except the source-selection ones, which read as kustomize prints them"},
		"apply-setters": {Releases: []string{"v0.2.0"}, Differs: "v0.1.x (OpenAPI setter definitions in the Kptfile) is refused"},
		"ensure-name-substring": {Releases: []string{"v0.2.0"},
			Differs: "renames in place as v0.2.0 does (its README and examples): every resource keeps its file and package (the catalog's later, unreleased code moves resources to kpt's default files); a subset of kustomize's name-reference table is rewritten; config errors are worded by cad (the README documents none)"},
		"upsert-resource": {Releases: []string{"v0.2.0"}, Differs: "v0.1 refused"},
		"set-project-id": {Releases: []string{"v0.2.0"},
			Differs: "a missing project-id is an error (the catalog sets empty values); an empty annotation is set, as documented; the Kptfile is edited in place, comments kept; v0.1 (OpenAPI setters) refused"},
		"remove-local-config-resources": {Releases: []string{"v0.1.0"}},
		"format":                        {Releases: []string{"v0.1.0"}},
		"set-enforcement-action":        {Releases: []string{"v0.1.0"}},
		"list-setters":                  {Releases: []string{"v0.1.0"}},
		"generate-folders": {Releases: []string{"v0.1.1"},
			Differs: "written from the README, the ResourceHierarchy CRDs and the v1, v2 and v3 example packages; where they are silent the behaviour is cad's: a cft.dev hierarchy under a Folder gets cnrm.cloud.google.com/folder-id, a v1alpha3 hierarchy without a namespace no depends-on annotation, the hierarchy's annotations are inherited except config.kubernetes.io/*, internal.config.kubernetes.io/* and config.k8s.io/*, a Folder already among the items with a generated name is replaced in its file, and the result messages are worded by cad"},
		"enable-gcp-services": {Releases: []string{"v0.1.0"},
			Differs: "written from the README and examples: a set that is not local-config or lacks spec.services is an error result worded by cad; a new Service's file is service_<name>.yaml in its set's directory"},
		"export-terraform": {Releases: []string{"v0.1.0", "v0.2.0", "v0.3.0"},
			Differs: "written from the README and examples: Folder and IAMPolicyMember (on an Organization or Folder) are converted as the examples show; the other kinds each release lists (Project, IAMPolicy, IAMPartialPolicy, and from v0.2 logging, network and storage kinds) have no documented Terraform and are error results; each line keeps its own list of supported kinds"},
		"generate-kpt-pkg-docs": {Unreleased: true,
			Differs: "published by the catalog only as its unstable image (no version was released); written from its README and generate-kpt-pkg-docs-simple example: readme-path's /tmp is the package's directory (the documented mount point), the readme is written through ResourceList.WriteFiles; no setters, no resources, sub-packages and a Kptfile without a title annotation are worded by cad; local-config resources are not listed; Resource References link Config Connector kinds only; the skip warning and the config errors (a config that is not a ConfigMap, a readme-path outside the package or naming a KRM file) are worded by cad, as the README gives no words"},
		"fix": {Releases: []string{"v0.2.1"},
			Differs: "setters go into the apply-setters configMap, as the documentation shows (the catalog's code writes setters.yaml); a v1alpha2 Kptfile's apply-setters configMap is left in place; OpenAPI enum values are not substituted"},
		"create-setters": {Releases: []string{"v0.1.0"},
			Differs: "kpt's path and index annotations are not parameterised; scalar setters of equal length are tried in name order (the catalog's order is random)"},
	}
}

// ErrInvalidFunctionConfig is matched (errors.Is) by the error of a
// builtin that cannot use its functionConfig: none where one is required,
// one of another kind, a field of the wrong shape or a value outside the
// documented ones. The error is a *pipeline.FunctionError (exit code 1);
// the function's one error result says what is wrong (see
// fnruntime/DESIGN.md, "Config errors").
var ErrInvalidFunctionConfig = errors.New("invalid functionConfig")

// configError is a builtin's config error, which strict (and the starlark
// builtin) report in the builtins' one shape: see reportConfigError.
type configError struct {
	msg    string // the error result's message
	stderr string // the process's stderr; "" is the SDK's "function failure"
	cause  error  // what else errors.Is and errors.As reach; may be nil
	// noRef leaves the result's resourceRef out, for a builtin whose
	// release writes none (starlark: one result, message and severity).
	noRef bool
}

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return e.cause }

// configErr returns a config error whose result message is msg, failing
// as the kpt functions SDK does (stderr "function failure").
func configErr(msg string) error { return &configError{msg: msg} }

// kyamlConfigErr returns a config error whose result message is msg,
// failing as a function on kyaml's framework does (the message on stderr).
func kyamlConfigErr(msg string) error { return &configError{msg: msg, stderr: msg} }

// reportConfigError gives a config error the builtins' shape
// (fnruntime/DESIGN.md, "Config errors"): the results the function added since
// before are replaced by one error result naming the functionConfig in its
// resourceRef (nothing when there is none, or when the release names
// nothing: ce.noRef), and the step fails with a
// *pipeline.FunctionError of exit code 1 matching ErrInvalidFunctionConfig
// and ce's cause.
func reportConfigError(rl *pipeline.ResourceList, before int, ce *configError) error {
	r := errorResult(ce.msg)
	if fc := rl.FunctionConfig; !fc.IsNilOrEmpty() && !ce.noRef {
		r.ResourceRef = &pipeline.ResourceRef{APIVersion: fc.GetApiVersion(), Kind: fc.GetKind(), Name: fc.GetName(), Namespace: fc.GetNamespace()}
	}
	rl.Results = append(rl.Results[:before], r)
	stderr := ce.stderr
	if stderr == "" {
		stderr = sdkFailure().(*pipeline.FunctionError).Stderr
	}
	return &pipeline.FunctionError{ExitCode: 1, Stderr: stderr, Err: errors.Join(ErrInvalidFunctionConfig, ce)}
}

// errFunctionFailure is what the catalog's Go SDK reports when a function
// fails with its diagnostics in the results.
var errFunctionFailure = errors.New("function failure")

func sdkFailure() error {
	return &pipeline.FunctionError{ExitCode: 1, Stderr: "failed to evaluate function: error: function failure", Err: errFunctionFailure}
}

func info(msg string) *pipeline.Result {
	return &pipeline.Result{Message: msg, Severity: pipeline.SeverityInfo}
}

func errorResult(msg string) *pipeline.Result {
	return &pipeline.Result{Message: msg, Severity: pipeline.SeverityError}
}

// isLocalConfig reports the config.kubernetes.io/local-config annotation
// as the Go SDK reads it (pipeline.IsLocalConfig).
func isLocalConfig(n *yaml.RNode) bool { return pipeline.IsLocalConfig(n) }

func nonLocal(items []*yaml.RNode) []*yaml.RNode {
	var out []*yaml.RNode
	for _, it := range items {
		if !isLocalConfig(it) {
			out = append(out, it)
		}
	}
	return out
}

func groupVersion(apiVersion string) (string, string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}

// isGVK matches like the Go SDK: an empty argument, or an empty field of
// the object, matches anything.
func isGVK(n *yaml.RNode, group, version, kind string) bool {
	g, v := groupVersion(n.GetApiVersion())
	k := n.GetKind()
	return (group == "" || g == "" || g == group) && (version == "" || v == "" || v == version) && (kind == "" || k == "" || k == kind)
}

// nestedString returns the string at path and whether it exists.
func nestedString(n *yaml.RNode, path ...string) (string, bool) {
	if n == nil {
		return "", false
	}
	f, err := n.Pipe(yaml.Lookup(path...))
	if err != nil || f == nil || f.YNode().Kind != yaml.ScalarNode {
		return "", false
	}
	return f.YNode().Value, true
}

// setNestedString sets the string at path, creating maps on the way.
func setNestedString(n *yaml.RNode, val string, path ...string) error {
	parent, err := n.Pipe(yaml.LookupCreate(yaml.MappingNode, path[:len(path)-1]...))
	if err != nil {
		return err
	}
	return parent.PipeE(yaml.SetField(path[len(path)-1], yaml.NewStringRNode(val)))
}

func getMap(n *yaml.RNode, path ...string) *yaml.RNode {
	if n == nil {
		return nil
	}
	f, err := n.Pipe(yaml.Lookup(path...))
	if err != nil || f == nil || f.YNode().Kind != yaml.MappingNode {
		return nil
	}
	return f
}

func getSlice(n *yaml.RNode, path ...string) []*yaml.RNode {
	if n == nil {
		return nil
	}
	f, err := n.Pipe(yaml.Lookup(path...))
	if err != nil || f == nil || f.YNode().Kind != yaml.SequenceNode {
		return nil
	}
	els, _ := f.Elements()
	return els
}

// configData returns a ConfigMap's data as strings.
func configData(n *yaml.RNode) map[string]string {
	out := map[string]string{}
	d := getMap(n, "data")
	if d == nil {
		return out
	}
	_ = d.VisitFields(func(f *yaml.MapNode) error {
		out[f.Key.YNode().Value] = f.Value.YNode().Value
		return nil
	})
	return out
}

func stringMap(n *yaml.RNode, path ...string) map[string]string {
	out := map[string]string{}
	m := getMap(n, path...)
	if m == nil {
		return out
	}
	_ = m.VisitFields(func(f *yaml.MapNode) error {
		out[f.Key.YNode().Value] = f.Value.YNode().Value
		return nil
	})
	return out
}

// strictStringMap decodes the map of strings at field of a typed function
// config as the catalog's Go SDK does (through encoding/json into a
// map[string]string): an absent or null field is an empty map, and any
// other shape (a list, a scalar, a nested map) is an error worded as
// encoding/json words it, naming the Go type the SDK decodes into.
func strictStringMap(fc *yaml.RNode, goType, field string) (map[string]string, error) {
	out := map[string]string{}
	f := fc.Field(field)
	if f == nil || f.Value == nil || f.Value.IsNil() {
		return out, nil
	}
	bad := func(what string) error {
		return fmt.Errorf("json: cannot unmarshal %s into Go struct field %s.%s of type map[string]string", what, goType, field)
	}
	n := f.Value.YNode()
	if n.Kind != yaml.MappingNode {
		return nil, bad(jsonKind(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind == yaml.ScalarNode && v.ShortTag() == yaml.NodeTagNull {
			// encoding/json decodes null into a map value as "".
			out[k.Value] = ""
			continue
		}
		if v.Kind != yaml.ScalarNode || v.ShortTag() != yaml.NodeTagString {
			return nil, fmt.Errorf("json: cannot unmarshal %s into Go struct field %s.%s of type string", jsonKind(v), goType, field)
		}
		out[k.Value] = v.Value
	}
	return out, nil
}

// jsonKind names a YAML node's JSON type as encoding/json's
// UnmarshalTypeError does.
func jsonKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "array"
	case yaml.MappingNode:
		return "object"
	}
	switch n.ShortTag() {
	case yaml.NodeTagInt, yaml.NodeTagFloat:
		return "number"
	case yaml.NodeTagBool:
		return "bool"
	case yaml.NodeTagNull:
		return "null"
	}
	return "string"
}
