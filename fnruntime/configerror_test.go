package fnruntime_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// configErrorCase is one unusable functionConfig for a builtin: missing,
// of another kind, with a field of the wrong shape or a value outside the
// documented ones.
type configErrorCase struct {
	name   string
	config string // "" is no functionConfig
	items  string // an extra input item; optional
	// infoOnly marks the one documented exception to severity error:
	// set-labels without a functionConfig reports [info] "`FunctionConfig`
	// is not given", naming nothing, and fails (kpt's conformance case
	// fn-render/no-fnconfig); kpt's implicit empty function-input
	// ConfigMap counts as none.
	infoOnly bool
	// noRef marks a builtin whose release names nothing in its config
	// error result (starlark's processor writes message and severity
	// only); releaseShapes marks whole builtins.
	noRef bool
}

// releaseShapes are the builtins whose claimed release reports a config
// error otherwise than the later code's one result naming the
// functionConfig, read from each release's main and its SDK or framework
// (and, for set-labels, its tests): "noRef" is one result of message and
// severity naming nothing, "noResult" is no result at all, the message on
// stderr (the release returns the error from its processor).
var releaseShapes = map[string]string{
	"apply-replacements":     "noRef",    // v0.1.1: rl.LogResult(err), the SDK's ErrorResult
	"create-setters":         "noRef",    // v0.1.0: one framework result item
	"search-replace":         "noRef",    // v0.2.0: one framework result item
	"set-enforcement-action": "noRef",    // v0.1.0: one framework result item
	"ensure-name-substring":  "noResult", // v0.2.0: the processor's error
	"set-image":              "noResult", // v0.1.1: the processor's error ("failed to evaluate function: ...")
	"set-project-id":         "noResult", // v0.2.0: the processor's error
	"upsert-resource":        "noResult", // v0.2.0: the processor's error
}

// pinnedShapes are the lines a pinned step runs with the release's shape
// while the unpinned builtin keeps the later code's: by image, the shape.
var pinnedShapes = map[string]string{
	"set-namespace:v0.4.1":   "noRef", // v0.4.1: the SDK's ErrorResult
	"set-labels:v0.2.0":      "noRef", // v0.2.0's tests: no resourceRef
	"set-annotations:v0.1.4": "noRef", // v0.1.4: message and severity
}

const (
	cfgSecret  = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: wrong-kind\n"
	cfgEmptyCM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: empty\n"
)

func cfgCM(data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fn-config\ndata:\n" + data
}

// configErrorCases are, per builtin that takes a functionConfig, the
// config errors it must report with the builtins' config-error shape.
var configErrorCases = map[string][]configErrorCase{
	"apply-replacements": {
		{name: "missing"},
		{name: "wrong kind", config: cfgSecret},
		{name: "replacements not a list", config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: ApplyReplacements\nmetadata:\n  name: ar\nreplacements: nope\n"},
		{name: "replacement by path", config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: ApplyReplacements\nmetadata:\n  name: ar\nreplacements:\n- path: r.yaml\n"},
	},
	"create-setters": {
		{name: "missing"},
		{name: "wrong kind", config: cfgSecret},
		{name: "no setters", config: cfgEmptyCM},
	},
	"ensure-name-substring": {
		{name: "missing"},
		{name: "wrong kind", config: cfgSecret},
		{name: "no substring", config: cfgEmptyCM},
		{name: "bad editMode", config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: EnsureNameSubstring\nmetadata:\n  name: ens\nsubstring: prod-\neditMode: middle\n"},
		{name: "empty substring", config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: EnsureNameSubstring\nmetadata:\n  name: ens\nsubstring: ''\n"},
	},
	"generate-kpt-pkg-docs": {
		{name: "wrong kind", config: cfgSecret, items: kptfileItem},
		{name: "readme-path outside the package", config: cfgCM("  readme-path: /etc/README.md\n"), items: kptfileItem},
		{name: "readme-path naming a KRM file", config: cfgCM("  readme-path: /tmp/d.yaml\n"), items: kptfileItem},
	},
	"kubeconform": {
		{name: "schema_location", config: cfgCM("  schema_location: https://example.com/schemas\n")},
		{name: "unknown kubernetes_version", config: cfgCM("  kubernetes_version: '1.2'\n")},
	},
	"search-replace": {
		{name: "unknown matcher", config: cfgCM("  by-colour: red\n")},
		{name: "by-value and by-value-regex", config: cfgCM("  by-value: a\n  by-value-regex: b\n")},
		{name: "bad regex", config: cfgCM("  by-value-regex: '('\n  put-value: x\n")},
	},
	"set-annotations": {
		{name: "missing"},
		{name: "wrong kind", config: cfgSecret},
		{name: "no annotations", config: cfgEmptyCM},
		{name: "annotations a list", config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetAnnotations\nmetadata:\n  name: sa\nannotations: [a, b]\n"},
	},
	"set-enforcement-action": {
		{name: "missing"},
		{name: "wrong kind", config: cfgSecret},
		{name: "unknown action", config: cfgCM("  enforcementAction: block\n")},
		{name: "two keys", config: cfgCM("  enforcementAction: deny\n  other: x\n")},
	},
	"set-image": {
		{name: "missing"},
		{name: "wrong field", config: cfgCM("  name: nginx\n  newColour: red\n")},
		{name: "no new value", config: cfgCM("  name: nginx\n")},
		{name: "wrong kind", config: cfgSecret},
		{name: "newTag and digest", config: cfgCM("  name: nginx\n  newTag: \"1.2\"\n  digest: sha256:00\n")},
	},
	"set-labels": {
		{name: "missing", infoOnly: true},
		{name: "kpt's implicit empty function-input", config: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\n", infoOnly: true},
		{name: "wrong kind", config: cfgSecret},
		{name: "labels a list", config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetLabels\nmetadata:\n  name: sl\nlabels: [a, b]\n"},
	},
	"set-namespace": {
		{name: "missing"},
		{name: "wrong kind", config: cfgSecret},
		{name: "empty namespace", config: cfgCM("  namespace: ''\n")},
		{name: "typed without namespace", config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetNamespace\nmetadata:\n  name: sn\n"},
	},
	"set-project-id": {
		{name: "missing", items: kptfileItem},
		{name: "no project-id", config: cfgEmptyCM, items: kptfileItem},
	},
	"starlark": {
		{name: "missing", noRef: true},
		{name: "wrong kind", config: cfgSecret, noRef: true},
		{name: "no source", config: "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: star\n", noRef: true},
		// kpt's implicit config on empty input: the release's one
		// result names nothing.
		{name: "kpt's implicit empty function-input", config: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\n", noRef: true},
	},
	"upsert-resource": {
		{name: "missing"},
		{name: "list item not an object", config: "apiVersion: v1\nkind: List\nmetadata:\n  name: l\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: first\n- 42\n"},
	},
}

// configFree are the builtins that read no functionConfig (or read any
// ConfigMap as data with no invalid shape), so they have no config error.
var configFree = map[string]string{
	fnruntime.PkgContextFunction:    "kpt's builtin reads the Kptfile, not a config",
	"apply-setters":                 "any ConfigMap's data are setters; none is invalid",
	"enable-gcp-services":           "reads ProjectServiceSet resources, no config",
	"export-terraform":              "converts the items, no config",
	"fix":                           "reads the Kptfiles, no config",
	"format":                        "no config",
	"generate-folders":              "reads ResourceHierarchy resources, no config",
	"list-setters":                  "no config",
	"remove-local-config-resources": "no config",
}

const kptfileItem = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: pkg
  annotations:
    config.kubernetes.io/local-config: "true"
    internal.config.kubernetes.io/path: Kptfile
`

const configErrorBaseItem = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels:
    app: web
  annotations:
    internal.config.kubernetes.io/path: d.yaml
spec:
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.27
`

// TestBuiltinConfigErrorShape feeds every builtin each kind of config
// error and asserts the builtins' config-error contract (fnruntime's
// DESIGN.md, "Config errors"): the step fails with a
// *pipeline.FunctionError of exit code 1 matching
// fnruntime.ErrInvalidFunctionConfig; the function reports what its
// release reports: one result, of severity error, naming the
// functionConfig in its resourceRef when there is one (the later code's
// shape), naming nothing (releaseShapes, pinnedShapes: "noRef"), or no
// result and the message on stderr ("noResult"); the items, their order
// and their text are unchanged, and no file is written.
func TestBuiltinConfigErrorShape(t *testing.T) {
	builtins := fnruntime.Builtins()
	var names []string
	for name := range builtins {
		names = append(names, name)
		_, hasCases := configErrorCases[name]
		_, free := configFree[name]
		if hasCases == free {
			t.Errorf("builtin %s: list it in exactly one of configErrorCases and configFree", name)
		}
	}
	sort.Strings(names)
	for name := range configErrorCases {
		if builtins[name] == nil {
			t.Errorf("configErrorCases names %s, which is not a builtin", name)
		}
	}
	run := func(t *testing.T, fn pipeline.Function, c configErrorCase, shape string) {
		items := []*yaml.RNode{yaml.MustParse(configErrorBaseItem)}
		if c.items != "" {
			items = append(items, yaml.MustParse(c.items))
		}
		var before []string
		for _, it := range items {
			before = append(before, it.MustString())
		}
		rl := &pipeline.ResourceList{Items: slices.Clone(items)}
		var fc *yaml.RNode
		if c.config != "" {
			fc = yaml.MustParse(c.config)
			rl.FunctionConfig = fc
		}
		err := fn.Run(context.Background(), rl)

		var fe *pipeline.FunctionError
		if !errors.As(err, &fe) || fe.ExitCode != 1 {
			t.Errorf("error %v, want a *pipeline.FunctionError with exit code 1", err)
		}
		if !errors.Is(err, fnruntime.ErrInvalidFunctionConfig) {
			t.Errorf("error %v does not match ErrInvalidFunctionConfig", err)
		}
		unchanged := func() {
			t.Helper()
			var after []string
			for _, it := range rl.Items {
				after = append(after, it.MustString())
			}
			if !slices.Equal(before, after) {
				t.Errorf("items changed:\nbefore: %q\nafter:  %q", before, after)
			}
			if len(rl.WriteFiles) != 0 {
				t.Errorf("wrote files %v", rl.WriteFiles)
			}
		}
		defer unchanged()
		if shape == "noResult" {
			if len(rl.Results) != 0 {
				t.Errorf("%d results, want none (the release writes none): %v", len(rl.Results), rl.Results)
			}
			if fe == nil || strings.TrimSpace(fe.Stderr) == "" || fe.Stderr == "failed to evaluate function: error: function failure" {
				t.Errorf("stderr %q: the message must be on stderr when no result carries it", fe.Stderr)
			}
			return
		}
		if len(rl.Results) != 1 {
			t.Fatalf("%d results, want exactly 1: %v", len(rl.Results), rl.Results)
		}
		r := rl.Results[0]
		wantSeverity := pipeline.SeverityError
		if c.infoOnly {
			wantSeverity = pipeline.SeverityInfo
		}
		if r.Severity != wantSeverity || r.Message == "" {
			t.Errorf("result %q of severity %q, want a message of severity %q", r.Message, r.Severity, wantSeverity)
		}
		var wantRef *pipeline.ResourceRef
		if fc != nil && !c.infoOnly && !c.noRef && shape != "noRef" {
			wantRef = &pipeline.ResourceRef{APIVersion: fc.GetApiVersion(), Kind: fc.GetKind(), Name: fc.GetName(), Namespace: fc.GetNamespace()}
		}
		if !reflect.DeepEqual(wantRef, r.ResourceRef) {
			t.Errorf("result %q: resourceRef %+v, want %+v", r.Message, r.ResourceRef, wantRef)
		}
		if r.File != nil {
			t.Errorf("result %q names file %v; a config error concerns the functionConfig", r.Message, r.File)
		}
	}
	for _, name := range names {
		for _, c := range configErrorCases[name] {
			t.Run(name+"/"+c.name, func(t *testing.T) { run(t, builtins[name], c, releaseShapes[name]) })
		}
	}
	// The lines with their own implementations share the contract, in
	// their release's shape.
	reg := fnruntime.NewRegistry(nil)
	for _, image := range []string{"set-namespace:v0.2.0", "set-namespace:v0.3.4", "set-namespace:v0.4.1", "set-labels:v0.2.0", "set-annotations:v0.1.4"} {
		fn, err := reg.Resolve(context.Background(), pipeline.Step{Image: image})
		if err != nil {
			t.Fatal(err)
		}
		name, _, _ := strings.Cut(image, ":")
		for _, c := range configErrorCases[name] {
			t.Run(image+"/"+c.name, func(t *testing.T) { run(t, fn, c, pinnedShapes[image]) })
		}
	}
}
