package celfn_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/celfn"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// kptfileWithCEL is a kpt.dev/v1 Kptfile using kpt's condition, cad's
// configMapExprs and the declarative CEL validator.
const kptfileWithCEL = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
  - image: set-namespace:v0.4.1
    condition: resources.exists(r, r.kind == "ConfigMap" && r.metadata.name == "env")
    configMapExprs:
      namespace: resources.filter(r, r.kind == "ConfigMap" && r.metadata.name == "env")[0].data.ns
  - image: set-labels:v0.2.0
    condition: "false"
    configMap:
      skipped: "yes"
  validators:
  - image: cad.configasdata.dev/validate-cel
    configPath: rules.yaml
`

const rules = `apiVersion: fn.cad.configasdata.dev/v1alpha1
kind: ValidationRules
metadata:
  name: rules
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  rules:
  - expression: object.kind != "Secret"
    message: secrets do not belong in this package
  - expression: '!has(object.metadata.namespace) || object.metadata.namespace == "prod"'
`

func celRenderer(t *testing.T) *pipeline.Renderer {
	t.Helper()
	e, err := celfn.New()
	if err != nil {
		t.Fatal(err)
	}
	reg := fnruntime.NewRegistry(nil)
	opts := &pipeline.Options{}
	e.Install(opts, reg)
	return pipeline.NewKptfile(reg, opts)
}

// A Kptfile's condition and configMapExprs are read and evaluated, and a
// validate-cel step checks its rules.
func TestKptfileCEL(t *testing.T) {
	ctx := context.Background()
	kf, err := revision.ParseKptfile([]byte(kptfileWithCEL))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if m := kf.Pipeline.Mutators[0]; m.Condition == "" || m.ConfigMapExprs["namespace"] == "" {
		t.Fatalf("the Kptfile lost condition or configMapExprs: %+v", m)
	}
	files := revision.MustFiles(map[string]string{
		revision.KptfileName: kptfileWithCEL,
		"rules.yaml":         rules,
		"env.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: env\ndata:\n  ns: prod\n",
		"deploy.yaml":        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
	})
	out, err := celRenderer(t).Render(ctx, files)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := out.Files.Get("deploy.yaml")
	if !strings.Contains(string(d), "namespace: prod") || strings.Contains(string(d), "skipped") {
		t.Fatalf("deploy.yaml:\n%s", d)
	}
	if len(out.Steps) != 3 || !out.Steps[1].Skipped || out.Steps[2].Skipped {
		t.Fatalf("steps %+v", out.Steps)
	}
	// The Kptfile keeps its fields through the render.
	kfOut, _ := out.Files.Get(revision.KptfileName)
	if !strings.Contains(string(kfOut), "configMapExprs:") || !strings.Contains(string(kfOut), "condition: \"false\"") {
		t.Fatalf("Kptfile after the render:\n%s", kfOut)
	}

	// A Secret breaks the first rule: the render fails with the rule's
	// message as an error result on the Secret.
	bad, err := files.With("secret.yaml", []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = celRenderer(t).Render(ctx, bad)
	var re *pipeline.RenderError
	if !errors.As(err, &re) {
		t.Fatalf("render with a Secret: %v, want a RenderError", err)
	}
	if !strings.Contains(resultsText(re), "secrets do not belong in this package") || !strings.Contains(resultsText(re), "Secret") {
		t.Fatalf("results: %s", resultsText(re))
	}
}

func resultsText(re *pipeline.RenderError) string {
	var b strings.Builder
	if re.Output == nil {
		return ""
	}
	for _, st := range re.Output.Steps {
		for _, r := range st.Results {
			b.WriteString(r.Message)
			if r.ResourceRef != nil {
				b.WriteString(" " + r.ResourceRef.Kind)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// A validate-cel step with a config of the wrong shape, no rules or an
// expression that does not compile fails with an error result saying why.
func TestValidateCELBadConfig(t *testing.T) {
	for name, tc := range map[string]struct{ step, want string }{
		"no config":        {"  - image: cad.configasdata.dev/validate-cel\n", "no functionConfig"},
		"no expression":    {"  - image: cad.configasdata.dev/validate-cel\n    configMap:\n      message: m\n", "no expression"},
		"unknown key":      {"  - image: cad.configasdata.dev/validate-cel\n    configMap:\n      expression: \"true\"\n      rule: x\n", "unknown configMap key"},
		"does not compile": {"  - image: cad.configasdata.dev/validate-cel\n    configMap:\n      expression: object.kind ==\n", "CEL expression"},
	} {
		t.Run(name, func(t *testing.T) {
			kf := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  validators:\n" + tc.step
			files := revision.MustFiles(map[string]string{revision.KptfileName: kf, "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"})
			_, err := celRenderer(t).Render(context.Background(), files)
			var re *pipeline.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("render: %v, want a RenderError", err)
			}
			if got := resultsText(re) + err.Error(); !strings.Contains(got, tc.want) {
				t.Fatalf("results %q, want %q", got, tc.want)
			}
		})
	}
}
