package fnruntime

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/pipeline"
)

// seqBomb is a "billion laughs" that is a YAML sequence, as an array
// setter value must be: 9 levels of 9 aliases, 387 million strings
// expanded, in about 300 bytes.
func seqBomb() string {
	var b strings.Builder
	b.WriteString("[&l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]")
	for l := 1; l < 9; l++ {
		b.WriteString(", &l" + string(rune('0'+l)) + " [")
		for i := range 9 {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("*l" + string(rune('0'+l-1)))
		}
		b.WriteString("]")
	}
	b.WriteString("]")
	return b.String()
}

// TestSetterValuesBounded: apply-setters and create-setters refuse a
// setter value that is an alias bomb with the revision.YAMLLimitError's
// message, and leave the items unchanged. (Before, apply-setters copied
// the sequence bomb into the item, and create-setters parsed it and
// reported no match.)
func TestSetterValuesBounded(t *testing.T) {
	const item = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  list: [] # kpt-set: ${s}\n"
	for _, tc := range []struct {
		name string
		fn   func(context.Context, *pipeline.ResourceList) error
	}{
		{"apply-setters", applySetters},
		{"create-setters", createSetters},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, bomb := range []string{seqBomb(), hostileyaml.Laughs(9, 9)} {
				fc := yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: setters\n")
				if err := fc.PipeE(yaml.SetField("data", yaml.NewMapRNode(&map[string]string{"s": bomb}))); err != nil {
					t.Fatal(err)
				}
				rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse(item)}, FunctionConfig: fc}
				before := rl.Items[0].MustString()
				// Through strict, as Builtins runs them: a config error
				// becomes its result there.
				err := strict(tc.fn).Run(context.Background(), rl)
				if err == nil || len(rl.Results) == 0 || !strings.Contains(rl.Results[len(rl.Results)-1].Message, "YAMLLimits.MaxAliasNodes") {
					t.Errorf("err %v, results %v: want the MaxAliasNodes refusal", err, rl.Results)
				}
				if got := rl.Items[0].MustString(); got != before {
					t.Errorf("item changed:\n%s", got)
				}
			}
		})
	}
}
