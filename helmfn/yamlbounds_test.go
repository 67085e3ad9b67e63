package helmfn_test

import (
	"testing"

	"github.com/configasdata/cad/helmfn"
	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/revision"
)

// TestHostileYAMLRefused: an alias bomb in a values file of the package, or
// 10,001 documents written by a chart's template, fail the function with
// the revision.YAMLLimitError's message (naming the file or "rendered
// manifests") and leaves the items untouched.
func TestHostileYAMLRefused(t *testing.T) {
	const cfg = `apiVersion: fn.kpt.dev/v1alpha1
kind: RenderHelmChart
metadata:
  name: demo
helmGlobals:
  chartHome: charts
helmCharts:
- chartArgs:
    name: hello
  templateOptions:
    releaseName: loc
`
	for _, tc := range []struct {
		name, file, content, config, want string
		limit                             string
	}{
		{"values file", "values/bomb.yaml", hostileyaml.Laughs(9, 9),
			cfg + "    values:\n      valuesFiles: [values/bomb.yaml]\n", `"values/bomb.yaml"`, "MaxAliasNodes"},
		// Helm parses each template's output and refuses alias bombs
		// itself ("excessive aliasing"); what it lets through is more
		// documents than the bound.
		{"template", "charts/hello/templates/many.yaml",
			"{{- range until 10001 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{{ . }}\n{{- end }}\n",
			cfg, `"rendered manifests"`, "MaxDocuments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n"}
			for p, c := range helloChart("0.3.0") {
				m["charts/hello/"+p] = c
			}
			m[tc.file] = tc.content
			rl, err := run(t, &helmfn.Options{Files: revision.MustFiles(m)}, tc.config)
			assertFailed(t, rl, err, "YAMLLimits."+tc.limit)
			assertFailed(t, rl, err, tc.want)
		})
	}
}
