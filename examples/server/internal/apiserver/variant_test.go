package apiserver

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

// publish creates, proposes and approves package pkg in the default
// repository.
func publish(t *testing.T, ts *testServer, pkg string) {
	t.Helper()
	var pr porchapi.PackageRevision
	if code := ts.doJSON("POST", prPath, initPR(pkg, "v1"), &pr); code != 201 {
		t.Fatalf("create %s: %d", pkg, code)
	}
	pr.Spec.Lifecycle = porchapi.LifecycleProposed
	if code := ts.doJSON("PUT", prPath+"/"+pr.Name, &pr, &pr); code != 200 {
		t.Fatalf("propose %s: %d", pkg, code)
	}
	pr.Spec.Lifecycle = porchapi.LifecyclePublished
	if code := ts.doJSON("PUT", prPath+"/"+pr.Name+"/approval", &pr, &pr); code != 200 || pr.Spec.Revision != 1 {
		t.Fatalf("approve %s: %d %+v", pkg, code, pr)
	}
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// packages returns the package names of the revisions in namespace default.
func packages(t *testing.T, ts *testServer) map[string]porchapi.PackageRevision {
	var l porchapi.PackageRevisionList
	ts.doJSON("GET", prPath, nil, &l)
	out := map[string]porchapi.PackageRevision{}
	for _, it := range l.Items {
		if it.Spec.Revision != -1 {
			out[it.Spec.PackageName] = it
		}
	}
	return out
}

func TestVariantSync(t *testing.T) {
	ts := startServer(t, "", nil)
	publish(t, ts, "base")

	pv := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
		"metadata": map[string]any{"name": "edge"},
		"spec": map[string]any{
			"upstream":       map[string]any{"repo": "default", "package": "base"},
			"downstream":     map[string]any{"repo": "default", "package": "edge"},
			"labels":         map[string]any{"variant": "edge"},
			"packageContext": map[string]any{"data": map[string]any{"region": "eu"}},
		}}
	const pvPath = "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/packagevariants"
	if code := ts.doJSON("POST", pvPath, pv, nil); code != 201 {
		t.Fatalf("create pv: %d", code)
	}
	waitFor(t, "the downstream of the PackageVariant", func() bool {
		d, ok := packages(t, ts)["edge"]
		return ok && d.Labels["variant"] == "edge" && d.Spec.Lifecycle == porchapi.LifecycleDraft
	})
	waitFor(t, "the PackageVariant's status", func() bool {
		var got porchapi.PackageVariant
		ts.doJSON("GET", pvPath+"/edge", nil, &got)
		var st struct {
			Conditions []metav1.Condition `json:"conditions"`
		}
		json.Unmarshal(got.Status.Raw, &st)
		for _, c := range st.Conditions {
			if c.Type == "Ready" && c.Status == metav1.ConditionTrue {
				return true
			}
		}
		return false
	})
	d := packages(t, ts)["edge"]
	var res porchapi.PackageRevisionResources
	ts.doJSON("GET", prrPath+"/"+d.Name, nil, &res)
	if !strings.Contains(res.Spec.Resources["package-context.yaml"], "region: eu") {
		t.Errorf("package context not specialised: %q", res.Spec.Resources["package-context.yaml"])
	}

	// A set fans the upstream out; deleting it releases its downstreams.
	pvs := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha2", "kind": "PackageVariantSet",
		"metadata": map[string]any{"name": "fan"},
		"spec": map[string]any{
			"upstream": map[string]any{"repo": "default", "package": "base"},
			"targets":  []any{map[string]any{"repositories": []any{map[string]any{"name": "default", "packageNames": []any{"fan-a", "fan-b"}}}}},
		}}
	const pvsPath = "/apis/config.porch.kpt.dev/v1alpha2/namespaces/default/packagevariantsets"
	if code := ts.doJSON("POST", pvsPath, pvs, nil); code != 201 {
		t.Fatalf("create pvs: %d", code)
	}
	waitFor(t, "the set's downstreams", func() bool {
		p := packages(t, ts)
		_, a := p["fan-a"]
		_, b := p["fan-b"]
		return a && b
	})
	if code, _ := ts.do("DELETE", pvsPath+"/fan", "", nil); code != 200 {
		t.Fatalf("delete pvs: %d", code)
	}
	if code, _ := ts.do("DELETE", pvPath+"/edge", "", nil); code != 200 {
		t.Fatalf("delete pv: %d", code)
	}
	waitFor(t, "the downstreams to be released", func() bool {
		p := packages(t, ts)
		_, a := p["fan-a"]
		_, e := p["edge"]
		return !a && !e
	})
}
