package apiserver

import (
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/stdfn"
	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/revision"
)

// TestHostileYAMLBodies: a YAML request body over a bound is refused with
// 400 before it is converted, and hostile package resources in a JSON
// PackageRevisionResources update are refused by the engine with 422
// (Invalid, as for any ErrInvalidInput) naming the file, leaving the
// draft as it was.
func TestHostileYAMLBodies(t *testing.T) {
	ts := startServer(t, "", nil)
	var created porchapi.PackageRevision
	if code := ts.doJSON("POST", prPath, initPR("hy", "ws"), &created); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	var before porchapi.PackageRevisionResources
	if code := ts.doJSON("GET", prrPath+"/default.hy.ws", nil, &before); code != 200 {
		t.Fatalf("get prr: %d", code)
	}
	for name, data := range hostileyaml.All() {
		t.Run(name, func(t *testing.T) {
			code, body := ts.do("POST", prPath, "application/yaml", []byte(data))
			if code != http.StatusBadRequest || !strings.Contains(string(body), `request body`) || !strings.Contains(string(body), "YAMLLimits.") {
				t.Errorf("YAML body: %d %.300s, want 400 naming the bound", code, body)
			}
			prr := before
			prr.Spec.Resources = map[string]string{}
			for k, v := range before.Spec.Resources {
				prr.Spec.Resources[k] = v
			}
			prr.Spec.Resources["cm.yaml"] = data
			var st map[string]any
			code = ts.doJSON("PUT", prrPath+"/default.hy.ws", prr, &st)
			if msg, _ := st["message"].(string); code != http.StatusUnprocessableEntity || !strings.Contains(msg, `"cm.yaml"`) {
				t.Errorf("resources update: %d %v, want 422 naming cm.yaml", code, st)
			}
			var after porchapi.PackageRevisionResources
			if code := ts.doJSON("GET", prrPath+"/default.hy.ws", nil, &after); code != 200 {
				t.Fatalf("get prr: %d", code)
			}
			if after.ResourceVersion != before.ResourceVersion || len(after.Spec.Resources) != len(before.Spec.Resources) {
				t.Errorf("the refused update changed the draft: %s -> %s, %d -> %d files", before.ResourceVersion,
					after.ResourceVersion, len(before.Spec.Resources), len(after.Spec.Resources))
			}
		})
	}
}

// TestYAMLLimitsOption: Options.YAMLLimits are the bounds of YAML bodies
// and of the engine. A package file whose aliases add 10 nodes, and a
// YAML body whose add 6, pass the default bounds; with MaxAliasNodes 4 the
// update is refused with 422 naming the file and the draft is unchanged
// (by the engine, also when the server is given a Pipeline without
// bounds), and the body with 400.
func TestYAMLLimitsOption(t *testing.T) {
	const aliased = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: &d {x: \"1\", y: \"2\"}\nextra: [*d, *d]\n"
	for _, tc := range []struct {
		name        string
		limits      *revision.YAMLLimits
		ownPipeline bool // a Pipeline without limits: only the engine's apply
		refused     bool
	}{
		{"defaults", nil, false, false},
		{"MaxAliasNodes 4", &revision.YAMLLimits{MaxAliasNodes: 4}, false, true},
		{"MaxAliasNodes 4, own pipeline", &revision.YAMLLimits{MaxAliasNodes: 4}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, "", func(o *Options) {
				o.YAMLLimits = tc.limits
				if tc.ownPipeline {
					o.Pipeline = stdfn.Kptfile(fnruntime.NewRegistry(nil), nil)
				}
			})
			body := []byte(initPRYAML("yl", "ws") + "  x: &x [a, b]\n  y: [*x, *x]\n")
			code, resp := ts.do("POST", prPath, "application/yaml", body)
			if got := code == http.StatusBadRequest && strings.Contains(string(resp), "YAMLLimits.MaxAliasNodes"); got != tc.refused {
				t.Errorf("YAML body: %d %.300s; refused %v, want %v", code, resp, got, tc.refused)
			}
			var created porchapi.PackageRevision
			if code := ts.doJSON("POST", prPath, initPR("hy", "ws"), &created); code != http.StatusCreated {
				t.Fatalf("create: %d", code)
			}
			var before porchapi.PackageRevisionResources
			if code := ts.doJSON("GET", prrPath+"/default.hy.ws", nil, &before); code != 200 {
				t.Fatalf("get prr: %d", code)
			}
			prr := before
			prr.Spec.Resources = maps.Clone(before.Spec.Resources)
			prr.Spec.Resources["cm.yaml"] = aliased
			var st map[string]any
			code = ts.doJSON("PUT", prrPath+"/default.hy.ws", prr, &st)
			msg, _ := st["message"].(string)
			if tc.refused {
				if code != http.StatusUnprocessableEntity || !strings.Contains(msg, `"cm.yaml"`) || !strings.Contains(msg, "YAMLLimits.MaxAliasNodes") {
					t.Errorf("resources update: %d %v, want 422 naming cm.yaml and MaxAliasNodes", code, st)
				}
				var after porchapi.PackageRevisionResources
				if code := ts.doJSON("GET", prrPath+"/default.hy.ws", nil, &after); code != 200 {
					t.Fatalf("get prr: %d", code)
				}
				if after.ResourceVersion != before.ResourceVersion {
					t.Errorf("the refused update changed the draft: %s -> %s", before.ResourceVersion, after.ResourceVersion)
				}
			} else if code != http.StatusOK {
				t.Errorf("resources update: %d %v, want 200", code, st)
			}
		})
	}
}
