package pipeline

import (
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/internal/kptattr"
)

// attribute adds kpt's "fn" attribution to every Config Connector
// resource among items, in kptattr.BlueprintAnnotation.
func attribute(items []*yaml.RNode) {
	for _, it := range items {
		if !strings.Contains(it.GetApiVersion(), ".cnrm.") || it.Field(yaml.MetadataField).IsNilOrEmpty() {
			continue
		}
		v := withKRMAction(it.GetAnnotations()[kptattr.BlueprintAnnotation], "fn")
		_ = it.PipeE(yaml.SetAnnotation(kptattr.BlueprintAnnotation, v))
	}
}

// withKRMAction records the kpt command group (pkg, fn or live) in a
// blueprint annotation value: an empty value becomes "krm-<group>"; a
// value without a krm part gets ",krm-<group>" appended; a krm part
// becomes "krm" followed by the groups it named and this one, in the
// order pkg, fn, live.
func withKRMAction(cur, group string) string {
	if cur == "" {
		return "krm-" + group
	}
	if !strings.Contains(cur, "krm-") {
		return cur + ",krm-" + group
	}
	parts := strings.Split(cur, ",")
	for i, p := range parts {
		if !strings.Contains(p, "krm") {
			continue
		}
		out := []string{"krm"}
		for _, g := range []string{"pkg", "fn", "live"} {
			if strings.Contains(p, g) || group == g {
				out = append(out, g)
			}
		}
		parts[i] = strings.Join(out, "-")
	}
	return strings.Join(parts, ",")
}
