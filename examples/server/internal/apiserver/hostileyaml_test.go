package apiserver

import (
	"net/http"
	"strings"
	"testing"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/internal/hostileyaml"
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
