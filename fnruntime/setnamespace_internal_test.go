package fnruntime

import (
	"context"
	"strings"
	"testing"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestSetNamespaceFailedSetIsNotAChange gives set-namespace a
// namespace-scoped object whose metadata is a string, so setting its
// namespace fails: the failure is an error result naming the object, is not
// counted as a changed value, and the object is left as it was.
func TestSetNamespaceFailedSetIsNotAChange(t *testing.T) {
	const bad = "apiVersion: v1\nkind: ConfigMap\nmetadata: not-a-map\n"
	rl := &pipeline.ResourceList{
		Items: []*yaml.RNode{
			yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\n  namespace: old\n"),
			yaml.MustParse(bad),
		},
		FunctionConfig: yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fc\ndata:\n  namespace: new\n"),
	}
	if err := setNamespace(context.Background(), rl); err != nil {
		t.Fatal(err)
	}
	if got := rl.Items[0].GetNamespace(); got != "new" {
		t.Fatalf("good object's namespace %q, want new", got)
	}
	if got := rl.Items[1].MustString(); got != bad {
		t.Fatalf("object whose set failed changed:\n%s", got)
	}
	var errs, changed []string
	for _, r := range rl.Results {
		if r.Severity == pipeline.SeverityError {
			errs = append(errs, r.Message)
		}
		if strings.Contains(r.Message, "value(s) changed") && strings.HasPrefix(r.Message, "namespace ") {
			changed = append(changed, r.Message)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "ConfigMap") {
		t.Fatalf("error results %q, want one naming the ConfigMap", errs)
	}
	if len(changed) != 1 || !strings.Contains(changed[0], ", 1 value(s) changed") {
		t.Fatalf("change results %q, want 1 value changed", changed)
	}
}
