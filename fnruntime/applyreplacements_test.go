package fnruntime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
)

// TestApplyReplacementsFailureChangesNothing: when a later replacement
// fails, the writes of the earlier ones are not kept: every item is as it
// was, byte for byte, and the step fails with one error result naming the
// failing replacement.
func TestApplyReplacementsFailureChangesNothing(t *testing.T) {
	const input = `apiVersion: v1
kind: ConfigMap
metadata:
  name: versions
data:
  image: web:1.4
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # the only target
  annotations:
    image: unset
spec:
  replicas: 2
`
	const config = `apiVersion: fn.kpt.dev/v1alpha1
kind: ApplyReplacements
metadata:
  name: two
replacements:
- source:
    kind: ConfigMap
    fieldPath: data.image
  targets:
  - select:
      kind: Deployment
    fieldPaths:
    - metadata.annotations.image
    - spec.template.metadata.labels.image
    options:
      create: true
- source:
    kind: ConfigMap
    fieldPath: data.image
  targets:
  - select:
      kind: Deployment
    fieldPaths:
    - spec.replicas.count
    options:
      create: true
`
	items, err := kio.FromBytes([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	before := make([]*yaml.Node, len(items))
	for i, it := range items {
		before[i] = it.YNode()
	}
	fc, err := yaml.Parse(config)
	if err != nil {
		t.Fatal(err)
	}
	rl := &pipeline.ResourceList{Items: items, FunctionConfig: fc}
	err = fnruntime.Builtins()["apply-replacements"].Run(context.Background(), rl)
	var fe *pipeline.FunctionError
	if !errors.As(err, &fe) || fe.ExitCode != 1 {
		t.Fatalf("Run = %v, want a *pipeline.FunctionError with exit code 1", err)
	}
	if len(rl.Results) != 1 || rl.Results[0].Severity != pipeline.SeverityError ||
		!strings.Contains(rl.Results[0].Message, "replacements[1]") || !strings.Contains(rl.Results[0].Message, `"count"`) {
		t.Fatalf("results = %v, want one error naming replacements[1] and the field it cannot create", rl.Results)
	}
	for i, it := range rl.Items {
		if it.YNode() != before[i] {
			t.Errorf("item %d is a new node; the renderer tracks items by node", i)
		}
	}
	got, err := kio.StringAll(rl.Items)
	if err != nil {
		t.Fatal(err)
	}
	if got != input {
		t.Errorf("items changed by a failing run:\n%s\nwant\n%s", got, input)
	}
}

// TestApplyReplacementsRerunIsStable: running a replacement with a
// delimiter and an index inside the parts over its own output changes
// nothing more, as a render run twice must not; that holds for a field
// create added too, which starts as an empty string (index 1 of "" gives
// ":2.0", which a second run splits and finds in place).
func TestApplyReplacementsRerunIsStable(t *testing.T) {
	const input = `apiVersion: v1
kind: ConfigMap
metadata:
  name: release
data:
  tag: "2.0"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: web:1.0
`
	const config = `apiVersion: fn.kpt.dev/v1alpha1
kind: ApplyReplacements
metadata:
  name: tag
replacements:
- source:
    kind: ConfigMap
    fieldPath: data.tag
  targets:
  - select:
      kind: Deployment
    fieldPaths:
    - spec.template.spec.containers.[name=web].image
    - spec.template.spec.containers.[name=sidecar].image
    options:
      delimiter: ':'
      index: 1
      create: true
`
	run := func(in string) string {
		t.Helper()
		items, err := kio.FromBytes([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		fc, err := yaml.Parse(config)
		if err != nil {
			t.Fatal(err)
		}
		rl := &pipeline.ResourceList{Items: items, FunctionConfig: fc}
		if err := fnruntime.Builtins()["apply-replacements"].Run(context.Background(), rl); err != nil {
			t.Fatalf("Run: %v (results %v)", err, rl.Results)
		}
		out, err := kio.StringAll(rl.Items)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	once := run(input)
	if !strings.Contains(once, "image: web:2.0") || !strings.Contains(once, "- name: sidecar\n        image: :2.0") {
		t.Fatalf("first run:\n%s", once)
	}
	if twice := run(once); twice != once {
		t.Errorf("second run changed the output:\n%s\nwant\n%s", twice, once)
	}
}

// TestApplyReplacementsWildcardIsForLists: * picks every element of a
// list; in a mapping it finds nothing and, even with create, adds no
// field, while [*] names the key "*".
func TestApplyReplacementsWildcardIsForLists(t *testing.T) {
	const input = `apiVersion: v1
kind: ConfigMap
metadata:
  name: src
  labels:
    a: "1"
data:
  v: new
`
	const config = `apiVersion: fn.kpt.dev/v1alpha1
kind: ApplyReplacements
metadata:
  name: star
replacements:
- source:
    kind: ConfigMap
    fieldPath: data.v
  targets:
  - select:
      kind: ConfigMap
    fieldPaths:
    - metadata.labels.*
    - data.[*]
    options:
      create: true
`
	items, err := kio.FromBytes([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	fc, err := yaml.Parse(config)
	if err != nil {
		t.Fatal(err)
	}
	rl := &pipeline.ResourceList{Items: items, FunctionConfig: fc}
	if err := fnruntime.Builtins()["apply-replacements"].Run(context.Background(), rl); err != nil {
		t.Fatalf("Run: %v (results %v)", err, rl.Results)
	}
	got, err := kio.StringAll(rl.Items)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(input, "  v: new\n", "  v: new\n  '*': new\n", 1)
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
