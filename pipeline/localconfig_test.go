package pipeline_test

import (
	"testing"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func TestIsLocalConfig(t *testing.T) {
	for value, want := range map[string]bool{
		`"true"`: true, `"True"`: true, `"yes"`: true, `"1"`: true,
		`"false"`: false, `""`: false, `"FALSE"`: true,
	} {
		n := yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    config.kubernetes.io/local-config: " + value + "\n")
		if got := pipeline.IsLocalConfig(n); got != want {
			t.Errorf("local-config: %s: %v, want %v", value, got, want)
		}
	}
	for _, doc := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    other: \"true\"\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: x\n",
	} {
		if pipeline.IsLocalConfig(yaml.MustParse(doc)) {
			t.Errorf("unmarked resource read as local config:\n%s", doc)
		}
	}
	if pipeline.IsLocalConfig(nil) {
		t.Error("nil read as local config")
	}
}
