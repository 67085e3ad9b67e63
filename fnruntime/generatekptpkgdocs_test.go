package fnruntime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// A bad generate-kpt-pkg-docs config fails the render with a
// *pipeline.FunctionError matching ErrInvalidGenerateKptPkgDocsConfig
// (beside the error result the golden cases show), and the package is
// left as it was: the readme is not written.
func TestGenerateKptPkgDocsConfigErrors(t *testing.T) {
	const readme = "<!-- BEGINNING OF PRE-COMMIT-BLUEPRINT DOCS HOOK:TITLE -->\nold\n<!-- END OF PRE-COMMIT-BLUEPRINT DOCS HOOK:TITLE -->\n"
	for name, config := range map[string]string{
		"outside the package": "    configMap:\n      readme-path: /etc/README.md\n",
		"a KRM file":          "    configMap:\n      readme-path: /tmp/cm.yaml\n",
		"the Kptfile":         "    configMap:\n      readme-path: Kptfile\n",
		"not a ConfigMap":     "    configPath: cfg.yaml\n",
	} {
		t.Run(name, func(t *testing.T) {
			files := revision.MustFiles(map[string]string{
				"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n" +
					"  - image: gcr.io/kpt-fn/generate-kpt-pkg-docs:unstable\n" + config,
				"cfg.yaml":  "apiVersion: example.com/v1\nkind: DocsConfig\nmetadata:\n  name: cfg\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n",
				"cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
				"README.md": readme,
			})
			_, err := pipeline.NewKptfile(fnruntime.NewRegistry(nil), nil).Render(context.Background(), files)
			var fe *pipeline.FunctionError
			if !errors.Is(err, fnruntime.ErrInvalidGenerateKptPkgDocsConfig) || !errors.As(err, &fe) || fe.ExitCode != 1 {
				t.Fatalf("got %v, want a *pipeline.FunctionError matching ErrInvalidGenerateKptPkgDocsConfig", err)
			}
			var re *pipeline.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("%v is not a *pipeline.RenderError", err)
			}
			if got, _ := re.Output.Files.Get("README.md"); string(got) != readme {
				t.Errorf("README.md changed:\n%s", got)
			}
			if steps := re.Steps(); len(steps) != 1 || len(steps[0].Results) != 1 || steps[0].Results[0].Severity != pipeline.SeverityError {
				t.Errorf("want one step with one error result, got %+v", steps)
			}
		})
	}
}
