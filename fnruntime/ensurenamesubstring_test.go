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

// TestEnsureNameSubstringConfigErrors: every unusable functionConfig is a
// *pipeline.FunctionError (exit code 1) wrapping
// ErrInvalidEnsureNameSubstringConfig and ErrInvalidFunctionConfig whose
// message (on stderr) names what is wrong, with no result, as v0.2.0
// fails (TestBuiltinConfigErrorShape), and the items are left as they
// were.
func TestEnsureNameSubstringConfigErrors(t *testing.T) {
	const input = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\ndata:\n  locale: en-GB\n"
	const ens = "apiVersion: fn.kpt.dev/v1alpha1\nkind: EnsureNameSubstring\nmetadata:\n  name: names\n"
	for _, tc := range []struct {
		name, config string
		want         []string // words the message must contain
	}{
		{"none", "", []string{"no functionConfig", "ConfigMap", "EnsureNameSubstring"}},
		{"other kind", "apiVersion: example.com/v1\nkind: NameRules\nmetadata:\n  name: rules\n", []string{"NameRules", "example.com/v1"}},
		{"two keys", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  prepend: a-\n  append: -b\n", []string{"one key", "2 keys"}},
		{"unknown key", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  insert: a-\n", []string{`"insert"`, "prepend nor append"}},
		{"unknown editMode", ens + "editMode: middle\nsubstring: a-\n", []string{`"middle"`}},
		{"fieldSpecs beside additionalNameFields", ens + "substring: a-\nfieldSpecs:\n- path: spec/name\nadditionalNameFields:\n- path: spec/title\n", []string{"fieldSpecs", "additionalNameFields"}},
		{"empty path", ens + "substring: a-\nadditionalNameFields:\n- kind: Dashboard\n", []string{"path"}},
		{"empty substring", ens + "editMode: append\n", []string{"substring"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, err := kio.FromBytes([]byte(input))
			if err != nil {
				t.Fatal(err)
			}
			rl := &pipeline.ResourceList{Items: items}
			if tc.config != "" {
				rl.FunctionConfig = yaml.MustParse(tc.config)
			}
			err = fnruntime.Builtins()["ensure-name-substring"].Run(context.Background(), rl)
			var fe *pipeline.FunctionError
			if !errors.Is(err, fnruntime.ErrInvalidEnsureNameSubstringConfig) || !errors.Is(err, fnruntime.ErrInvalidFunctionConfig) || !errors.As(err, &fe) || fe.ExitCode != 1 {
				t.Fatalf("got %v, want a *pipeline.FunctionError with exit code 1 matching ErrInvalidEnsureNameSubstringConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(fe.Stderr, w) {
					t.Errorf("message %q does not name %q", fe.Stderr, w)
				}
			}
			// v0.2.0 fails on kyaml's framework with the error on
			// stderr and writes no result.
			if len(rl.Results) != 0 {
				t.Errorf("want no result, the message on stderr (%q); got %v", fe.Stderr, rl.Results)
			}
			got, err := kio.StringAll(rl.Items)
			if err != nil {
				t.Fatal(err)
			}
			if got != input {
				t.Errorf("items changed:\n%s", got)
			}
		})
	}
}
