package fnruntime_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/internal/peakmem"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// boundsGrowth is the memory an attack on a builtin may make the process
// hold (three times that under the race detector); the unbounded code
// held from 1 GB to 100 GB.
const boundsGrowth = 128 << 20 * raceFactor

// runBuiltin resolves the builtin name through a registry with opts and
// runs it over items with fc as its functionConfig.
func runBuiltin(t *testing.T, ctx context.Context, opts *fnruntime.Options, name string, fc *yaml.RNode, items ...*yaml.RNode) (*pipeline.ResourceList, error) {
	t.Helper()
	fn, err := fnruntime.NewRegistry(opts).Resolve(ctx, pipeline.Step{Image: "ghcr.io/kptdev/krm-functions-catalog/" + name})
	if err != nil {
		t.Fatal(err)
	}
	rl := &pipeline.ResourceList{Items: items, FunctionConfig: fc}
	return rl, fn.Run(ctx, rl)
}

func configMap(t *testing.T, data map[string]string) *yaml.RNode {
	t.Helper()
	// FromMap is linear in the entries (SetDataMap is quadratic).
	d := make(map[string]any, len(data))
	for k, v := range data {
		d[k] = v
	}
	n, err := yaml.FromMap(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "fn-config"}, "data": d})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func deployment(name string) *yaml.RNode {
	return yaml.MustParse(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
spec:
  selector:
    matchLabels:
      app: %s
  template:
    metadata:
      labels:
        app: %s
    spec:
      containers:
      - name: c
        image: nginx
`, name, name, name))
}

// wantLimit fails t unless err is a refusal by the named bound.
func wantLimit(t *testing.T, err error, limit string) {
	t.Helper()
	var le *revision.LimitError
	if !errors.Is(err, revision.ErrLimit) || !errors.As(err, &le) {
		t.Fatalf("got %v, want an error matching revision.ErrLimit", err)
	}
	if limit != "" && le.Limit != limit {
		t.Fatalf("refused by %s (%v), want %s", le.Limit, err, limit)
	}
	var fe *pipeline.FunctionError
	if !errors.As(err, &fe) || fe.ExitCode != 1 {
		t.Fatalf("got %T, want a *pipeline.FunctionError", err)
	}
}

// checkGrowth fails t when the measured child held more than boundsGrowth.
func checkGrowth(t *testing.T, r peakmem.Result, what string) {
	t.Helper()
	t.Logf("%s: grew by %d MiB (start %d MiB, peak %d MiB)", what, r.Growth()>>20, r.StartRSS>>20, r.PeakRSS>>20)
	if r.Killed || r.Growth() > boundsGrowth {
		t.Errorf("%s: grew by %d MiB (killed %v), want under %d MiB", what, r.Growth()>>20, r.Killed, boundsGrowth>>20)
	}
}

// search-replace's put-value: ${1} 100,000 times over a 1 MiB value asked
// for one 100 GB string; groups naming the next group doubled the text at
// each group (282 bytes became 128 MB, then 2^30 copies). Both are
// refused before the expansion.
func TestSearchReplaceCaptureGroupBounds(t *testing.T) {
	t.Run("repeated", func(t *testing.T) {
		r := peakmem.Measure(t, 1<<30, func(t *testing.T) {
			item := yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  v: x\n")
			if err := item.PipeE(yaml.Lookup("data"), yaml.SetField("v", yaml.NewStringRNode(strings.Repeat("a", 1<<20)))); err != nil {
				t.Fatal(err)
			}
			fc := configMap(t, map[string]string{"by-value-regex": "^(a+)$", "put-value": strings.Repeat("${1}", 100000)})
			rl, err := runBuiltin(t, context.Background(), nil, "search-replace", fc, item)
			wantLimit(t, err, "")
			if len(rl.Results) != 1 || rl.Results[0].Severity != pipeline.SeverityError {
				t.Errorf("results %v, want one error", rl.Results)
			}
		})
		checkGrowth(t, r, "${1} x 100000 over 1 MiB")
	})
	t.Run("doubling", func(t *testing.T) {
		r := peakmem.Measure(t, 1<<30, func(t *testing.T) {
			const groups = 34
			var value, re []string
			for i := 2; i <= groups; i++ {
				value = append(value, fmt.Sprintf("${%d}${%d}", i, i))
				re = append(re, `([^|]*)`)
			}
			value = append(value, "xxxxxxxx")
			re = append(re, `([^|]*)`)
			item := configMap(t, map[string]string{"v": strings.Join(value, "|")})
			item.SetName("item")
			fc := configMap(t, map[string]string{"by-value-regex": "^" + strings.Join(re, `\|`) + "$", "put-value": "${1}"})
			_, err := runBuiltin(t, context.Background(), nil, "search-replace", fc, item)
			wantLimit(t, err, "fnruntime.Limits.OutputFactor")
		})
		checkGrowth(t, r, "2^33 doubling")
	})
}

// Ordinary capture groups still expand.
func TestSearchReplaceCaptureGroups(t *testing.T) {
	item := configMap(t, map[string]string{"image": "nginx:1.2"})
	item.SetName("item")
	fc := configMap(t, map[string]string{"by-value-regex": `^(\w+):([0-9.]+)$`, "put-value": "registry/${1}:${2}-fixed"})
	if _, err := runBuiltin(t, context.Background(), nil, "search-replace", fc, item); err != nil {
		t.Fatal(err)
	}
	if got := item.GetDataMap()["image"]; got != "registry/nginx:1.2-fixed" {
		t.Errorf("image = %q", got)
	}
}

// 19,000 labels on 10 Deployments took 289 s and 994 MB when each label
// scanned the labels map: now linear, and bounded by the output budget.
func TestSetLabelsManyLabels(t *testing.T) {
	r := peakmem.Measure(t, 1<<30, func(t *testing.T) {
		labels := map[string]string{}
		for i := range 19000 {
			labels[fmt.Sprintf("label-%05d", i)] = "v"
		}
		var items []*yaml.RNode
		for i := range 10 {
			items = append(items, deployment(fmt.Sprintf("d%d", i)))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := runBuiltin(t, ctx, nil, "set-labels", configMap(t, labels), items...)
		if err != nil && !errors.Is(err, revision.ErrLimit) {
			t.Fatalf("set-labels: %v, want success or a refusal by a bound", err)
		}
		t.Logf("set-labels: %v", err)
		if err == nil {
			if got := len(items[9].GetLabels()); got != 19000 {
				t.Errorf("%d labels set, want 19000", got)
			}
		}
	})
	checkGrowth(t, r, "19,000 labels on 10 Deployments")
}

// Many labels on few resources are set (well inside the budget), and a
// cancelled context stops set-labels and set-annotations.
func TestSetLabelsAnnotationsContext(t *testing.T) {
	labels := map[string]string{}
	for i := range 2000 {
		labels[fmt.Sprintf("l%d", i)] = "v"
	}
	items := []*yaml.RNode{deployment("a"), deployment("b")}
	if _, err := runBuiltin(t, context.Background(), nil, "set-labels", configMap(t, labels), items...); err != nil {
		t.Fatal(err)
	}
	if got := len(items[1].GetLabels()); got != 2000 {
		t.Fatalf("%d labels, want 2000", got)
	}
	sel := stringMapAt(t, items[0], "spec", "template", "metadata", "labels")
	if len(sel) != 2001 || sel["l1999"] != "v" || sel["app"] != "a" {
		t.Errorf("template labels: %d", len(sel))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range []string{"set-labels", "set-annotations", "search-replace", "apply-replacements", "set-namespace"} {
		_, err := runBuiltin(t, ctx, nil, name, configMap(t, labels), deployment("c"))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v", name, err)
		}
	}
}

func stringMapAt(t *testing.T, n *yaml.RNode, path ...string) map[string]string {
	t.Helper()
	m, err := n.Pipe(yaml.Lookup(path...))
	if err != nil || m == nil {
		t.Fatalf("%v: %v", path, err)
	}
	out := map[string]string{}
	_ = m.VisitFields(func(f *yaml.MapNode) error {
		out[f.Key.YNode().Value] = f.Value.YNode().Value
		return nil
	})
	return out
}

// deepPath is a field path of n segments.
func deepPath(n int) string {
	segs := make([]string, n)
	for i := range segs {
		segs[i] = fmt.Sprintf("f%d", i)
	}
	return strings.Join(segs, ".")
}

// A path of 10,000 segments wrote 100 MB of YAML per resource (the
// indentation grows with the depth) from a 20 KB config; it is refused
// before any resource is touched, as a config error.
func TestDeepPathRefused(t *testing.T) {
	t.Run("search-replace", func(t *testing.T) {
		r := peakmem.Measure(t, 1<<30, func(t *testing.T) {
			fc := configMap(t, map[string]string{"by-path": deepPath(10000), "put-value": "x"})
			items := []*yaml.RNode{deployment("a"), deployment("b")}
			_, err := runBuiltin(t, context.Background(), nil, "search-replace", fc, items...)
			wantLimit(t, err, "fnruntime.Limits.MaxPathDepth")
			if !errors.Is(err, fnruntime.ErrInvalidFunctionConfig) {
				t.Errorf("%v, want a config error", err)
			}
			if s := items[0].MustString(); strings.Contains(s, "f0") {
				t.Errorf("the resource was changed:\n%s", s)
			}
		})
		checkGrowth(t, r, "search-replace by-path of 10,000 segments")
	})
	t.Run("apply-replacements", func(t *testing.T) {
		r := peakmem.Measure(t, 1<<30, func(t *testing.T) {
			fc := yaml.MustParse(fmt.Sprintf(`apiVersion: fn.kpt.dev/v1alpha1
kind: ApplyReplacements
metadata:
  name: r
replacements:
- source:
    kind: Deployment
    name: a
    fieldPath: metadata.name
  targets:
  - select:
      kind: Deployment
    fieldPaths:
    - %s
    options:
      create: true
`, deepPath(10000)))
			items := []*yaml.RNode{deployment("a"), deployment("b")}
			_, err := runBuiltin(t, context.Background(), nil, "apply-replacements", fc, items...)
			wantLimit(t, err, "fnruntime.Limits.MaxPathDepth")
		})
		checkGrowth(t, r, "apply-replacements create through 10,000 segments")
	})
	t.Run("within", func(t *testing.T) {
		fc := configMap(t, map[string]string{"by-path": deepPath(50), "put-value": "x"})
		item := deployment("a")
		if _, err := runBuiltin(t, context.Background(), nil, "search-replace", fc, item); err != nil {
			t.Fatal(err)
		}
		if v, _ := item.Pipe(yaml.Lookup(strings.Split(deepPath(50), ".")...)); v == nil || v.YNode().Value != "x" {
			t.Errorf("the 50-segment path was not written")
		}
		fc = configMap(t, map[string]string{"by-path": deepPath(8), "put-value": "x"})
		_, err := runBuiltin(t, context.Background(), &fnruntime.Options{Limits: fnruntime.Limits{MaxPathDepth: 4}}, "search-replace", fc, deployment("b"))
		wantLimit(t, err, "fnruntime.Limits.MaxPathDepth")
	})
}

// A value copied into every resource multiplies the config by the
// resources: a 1 MiB annotation on 2,000 ConfigMaps is 2 GB of YAML to
// write, though the strings are shared in memory. The output budget
// (a multiple of the input) refuses it as it is built.
func TestOutputBudget(t *testing.T) {
	r := peakmem.Measure(t, 1<<30, func(t *testing.T) {
		var items []*yaml.RNode
		for i := range 2000 {
			items = append(items, yaml.MustParse(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\n", i)))
		}
		fc := configMap(t, map[string]string{"big": strings.Repeat("b", 1<<20)})
		rl, err := runBuiltin(t, context.Background(), nil, "set-annotations", fc, items...)
		wantLimit(t, err, "fnruntime.Limits.OutputFactor")
		if len(rl.Results) != 1 || !strings.Contains(rl.Results[0].Message, "fnruntime.Limits.OutputFactor") {
			t.Errorf("results %v, want one naming the bound", rl.Results)
		}
	})
	checkGrowth(t, r, "1 MiB annotation on 2,000 resources")

	// MaxOutputBytes caps the output whatever the input.
	if peakmem.InChild() {
		return
	}
	fc := configMap(t, map[string]string{"a": strings.Repeat("b", 1000)})
	var items []*yaml.RNode
	for i := range 200 {
		items = append(items, yaml.MustParse(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\n", i)))
	}
	_, err := runBuiltin(t, context.Background(), &fnruntime.Options{Limits: fnruntime.Limits{MaxOutputBytes: 64 << 10}}, "set-annotations", fc, items...)
	wantLimit(t, err, "fnruntime.Limits.MaxOutputBytes")
	// No bound at all.
	if _, err := runBuiltin(t, context.Background(), &fnruntime.Options{Limits: fnruntime.Limits{MaxOutputBytes: -1, OutputFactor: -1}}, "set-annotations", fc, items...); err != nil {
		t.Fatal(err)
	}
}

// fuzzItems are the resources each fuzzed builtin config runs over.
const fuzzItems = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: pkg
  annotations:
    config.kubernetes.io/local-config: "true"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ns
  labels:
    app: web
spec:
  replicas: 3 # kpt-set: ${replicas}
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
        image: nginx:1.2 # kpt-set: ${image}
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: ns
spec:
  selector:
    app: web
  ports:
  - port: 80
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: ns
data:
  key: value
  image: nginx:1.2
`

// fuzzBudget is what one fuzzed run may produce (encoded) and allocate.
const (
	fuzzMaxOutput = 4 << 20
	fuzzMaxAlloc  = 512 << 20
)

// FuzzBuiltinConfig runs a builtin over a fixed package with a fuzzed
// functionConfig, under Limits of 4 MiB of output, and fails when a run
// produces more than its bound allows or allocates more than 512 MiB.
// Seeds: one ordinary config per builtin and the attacks of issue 30.
func FuzzBuiltinConfig(f *testing.F) {
	cm := func(data string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fn-config\ndata:\n" + data
	}
	f.Add("set-namespace", cm("  namespace: prod\n"))
	f.Add("set-labels", cm("  color: blue\n  tier: web\n"))
	f.Add("set-annotations", cm("  owner: team\n"))
	f.Add("set-image", "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetImage\nmetadata:\n  name: s\nimage:\n  name: nginx\n  newTag: \"1.3\"\n")
	f.Add("search-replace", cm("  by-value: value\n  put-value: other\n"))
	f.Add("search-replace", cm("  by-value-regex: '^(\\w+):(.*)$'\n  put-value: 'r/${1}:${2}'\n"))
	f.Add("search-replace", cm("  by-value-regex: '^(.*)$'\n  put-value: '"+strings.Repeat("${1}", 5000)+"'\n"))
	f.Add("search-replace", cm("  by-value-regex: '^(.*)\\|(.*)$'\n  put-value: '${1}${1}${1}${1}'\n"))
	f.Add("search-replace", cm("  by-path: "+deepPath(200)+"\n  put-value: x\n"))
	f.Add("apply-replacements", "apiVersion: fn.kpt.dev/v1alpha1\nkind: ApplyReplacements\nmetadata:\n  name: r\nreplacements:\n- source:\n    kind: ConfigMap\n    fieldPath: data.key\n  targets:\n  - select:\n      kind: Deployment\n    fieldPaths:\n    - metadata.annotations.key\n    options:\n      create: true\n")
	f.Add("apply-replacements", "apiVersion: fn.kpt.dev/v1alpha1\nkind: ApplyReplacements\nmetadata:\n  name: r\nreplacements:\n- source:\n    kind: Deployment\n    fieldPath: spec\n  targets:\n  - select:\n      kind: Service\n    fieldPaths:\n    - "+deepPath(150)+"\n    options:\n      create: true\n")
	f.Add("apply-setters", cm("  replicas: \"4\"\n  image: nginx:1.3\n"))
	f.Add("ensure-name-substring", cm("  prepend: dev-\n"))
	f.Add("upsert-resource", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: ns\ndata:\n  key: new\n")
	f.Add("set-project-id", cm("  project-id: p1\n"))
	f.Add("remove-local-config-resources", "")
	f.Add("format", "")
	f.Add("set-enforcement-action", cm("  enforcementAction: dryrun\n"))
	f.Add("list-setters", "")
	f.Add("create-setters", cm("  replicas: \"3\"\n"))
	f.Add("fix", "")
	f.Add("generate-folders", "")
	f.Add("kubeconform", cm("  strict: \"true\"\n"))
	f.Add("enable-gcp-services", "")
	f.Add("export-terraform", "")
	f.Add("generate-kpt-pkg-docs", cm("  readme-path: README.md\n"))
	f.Add(fnruntime.PkgContextFunction, "")
	var labels strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&labels, "  l%d: v\n", i)
	}
	f.Add("set-labels", cm(labels.String()))
	f.Add("set-annotations", cm("  big: "+strings.Repeat("b", 256<<10)+"\n"))

	builtins := fnruntime.Builtins()
	opts := &fnruntime.Options{Limits: fnruntime.Limits{MaxOutputBytes: fuzzMaxOutput}, Timeout: 20 * time.Second}
	f.Fuzz(func(t *testing.T, name, config string) {
		if _, ok := builtins[name]; !ok || name == "starlark" {
			return
		}
		var fc *yaml.RNode
		if config != "" {
			var err error
			if fc, err = yaml.Parse(config); err != nil {
				return
			}
		}
		rl := &pipeline.ResourceList{FunctionConfig: fc}
		for _, doc := range strings.Split(fuzzItems, "---\n") {
			rl.Items = append(rl.Items, yaml.MustParse(doc))
		}
		in, err := rl.Encode()
		if err != nil {
			return
		}
		image := "ghcr.io/kptdev/krm-functions-catalog/" + name
		if name == fnruntime.PkgContextFunction {
			image = name
		}
		fn, err := fnruntime.NewRegistry(opts).Resolve(context.Background(), pipeline.Step{Image: image})
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		runErr := fn.Run(context.Background(), rl)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > fuzzMaxAlloc {
			t.Fatalf("%s allocated %d MiB from %d bytes of config (error %v)", name, alloc>>20, len(config), runErr)
		}
		if runErr != nil {
			return
		}
		out, err := rl.Encode()
		if err != nil {
			return
		}
		for _, b := range rl.WriteFiles {
			out = append(out, b...)
		}
		// The estimate the bound uses counts more than the encoding (160
		// bytes a node): an output within the bound encodes within it.
		if len(out) > fuzzMaxOutput+len(in) {
			t.Fatalf("%s produced %d bytes from %d, over the %d bound", name, len(out), len(in), fuzzMaxOutput)
		}
	})
}
