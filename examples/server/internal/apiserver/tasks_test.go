package apiserver

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

func taskPR(pkg, ws string, task map[string]any) map[string]any {
	return map[string]any{
		"spec": map[string]any{"packageName": pkg, "repository": "default", "workspaceName": ws,
			"tasks": []any{task}},
	}
}

// approve proposes and approves a draft.
func approve(t *testing.T, ts *testServer, name string) porchapi.PackageRevision {
	t.Helper()
	var pr porchapi.PackageRevision
	if code, data := ts.do("PATCH", prPath+"/"+name, "application/merge-patch+json", nil); code != 400 {
		t.Fatalf("empty patch: %d %s", code, data)
	}
	code, data := ts.do("PATCH", prPath+"/"+name, "application/merge-patch+json", []byte(`{"spec":{"lifecycle":"Proposed"}}`))
	if code != 200 {
		t.Fatalf("propose %s: %d %s", name, code, data)
	}
	ts.doJSON("GET", prPath+"/"+name, nil, &pr)
	pr.Spec.Lifecycle = porchapi.LifecyclePublished
	if code := ts.doJSON("PUT", prPath+"/"+name+"/approval", &pr, &pr); code != 200 {
		t.Fatalf("approve %s: %d", name, code)
	}
	return pr
}

func TestCreationTasks(t *testing.T) {
	ts := startServer(t, "", nil)
	var pr porchapi.PackageRevision
	if code := ts.doJSON("POST", prPath, initPR("base", "v1"), &pr); code != 201 {
		t.Fatalf("init: %d", code)
	}
	approve(t, ts, "default.base.v1")

	// clone from a registered upstream.
	clone := taskPR("cl", "ws", map[string]any{"type": "clone", "clone": map[string]any{
		"upstreamRef": map[string]any{"upstreamRef": map[string]any{"name": "default.base.v1"}}}})
	if code := ts.doJSON("POST", prPath, clone, &pr); code != 201 || pr.Status.UpstreamLock == nil || pr.Status.UpstreamLock.Git.Ref != "base/v1" {
		t.Fatalf("clone: %d %+v", code, pr)
	}
	// The revision records its creation task, before and after approval,
	// as Porch's readers (porchctl rpkg upgrade) expect in spec.tasks[0].
	for _, name := range []string{"", "default.cl.ws"} {
		got := pr
		if name != "" {
			approve(t, ts, name)
			got = porchapi.PackageRevision{}
			ts.doJSON("GET", prPath+"/"+name, nil, &got)
		}
		if len(got.Spec.Tasks) != 1 || got.Spec.Tasks[0].Clone == nil || got.Spec.Tasks[0].Clone.Upstream.UpstreamRef == nil ||
			got.Spec.Tasks[0].Clone.Upstream.UpstreamRef.Name != "default.base.v1" {
			t.Fatalf("clone %q: tasks %+v", name, got.Spec.Tasks)
		}
	}
	// The placeholder is not a source.
	bad := taskPR("cl2", "ws", map[string]any{"type": "clone", "clone": map[string]any{
		"upstreamRef": map[string]any{"upstreamRef": map[string]any{"name": "default.base.main"}}}})
	if code, data := ts.do("POST", prPath, "", mustMarshal(bad)); code != 422 || !strings.Contains(string(data), "placeholder") {
		t.Errorf("clone of the placeholder: %d %s", code, data)
	}
	// clone from a git upstream (the default repository itself, by path).
	gitClone := taskPR("fromgit", "ws", map[string]any{"type": "clone", "clone": map[string]any{
		"upstreamRef": map[string]any{"type": "git", "git": map[string]any{
			"repo": filepath.Join(ts.dataDir, "git", "default.git"), "ref": "v1", "directory": "base"}}}})
	if code := ts.doJSON("POST", prPath, gitClone, &pr); code != 201 || pr.Status.UpstreamLock == nil || pr.Status.UpstreamLock.Git.Commit == "" {
		t.Fatalf("git clone: %d %+v", code, pr)
	}

	// edit: a new revision of base, with a readiness gate that blocks approval.
	edit := taskPR("base", "v2", map[string]any{"type": "edit", "edit": map[string]any{"sourceRef": map[string]any{"name": "default.base.v1"}}})
	edit["spec"].(map[string]any)["readinessGates"] = []any{map[string]any{"conditionType": "example.com/ok"}}
	if code := ts.doJSON("POST", prPath, edit, &pr); code != 201 || len(pr.Spec.ReadinessGates) != 1 {
		t.Fatalf("edit: %d %+v", code, pr)
	}
	ts.do("PATCH", prPath+"/default.base.v2", "application/merge-patch+json", []byte(`{"spec":{"lifecycle":"Proposed"}}`))
	ts.doJSON("GET", prPath+"/default.base.v2", nil, &pr)
	pr.Spec.Lifecycle = porchapi.LifecyclePublished
	if code, data := ts.do("PUT", prPath+"/default.base.v2/approval", "", mustMarshal(&pr)); code != 422 || !strings.Contains(string(data), "example.com/ok") {
		t.Fatalf("approval with an unready gate: %d %s", code, data)
	}
	// Reject, set the condition, propose and approve.
	pr.Spec.Lifecycle = porchapi.LifecycleDraft
	if code := ts.doJSON("PUT", prPath+"/default.base.v2/approval", &pr, &pr); code != 200 || pr.Spec.Lifecycle != porchapi.LifecycleDraft {
		t.Fatalf("reject: %d %+v", code, pr)
	}
	pr.Status.Conditions = append(pr.Status.Conditions, porchapi.Condition{Type: "example.com/ok", Status: porchapi.ConditionTrue})
	if code := ts.doJSON("PUT", prPath+"/default.base.v2", &pr, &pr); code != 200 {
		t.Fatalf("set condition: %d", code)
	}
	if v2 := approve(t, ts, "default.base.v2"); v2.Spec.Revision != 2 || !porchapi.IsLatest(&v2) {
		t.Fatalf("v2: %+v", v2)
	}
	var v1 porchapi.PackageRevision
	if ts.doJSON("GET", prPath+"/default.base.v1", nil, &v1); porchapi.IsLatest(&v1) {
		t.Errorf("v1 kept the latest label")
	}

	// upgrade cl from base v1 to v2.
	up := taskPR("cl", "ws2", map[string]any{"type": "upgrade", "upgrade": map[string]any{
		"oldUpstreamRef":          map[string]any{"name": "default.base.v1"},
		"newUpstreamRef":          map[string]any{"name": "default.base.v2"},
		"localPackageRevisionRef": map[string]any{"name": "default.cl.ws"},
		"strategy":                "resource-merge"}})
	if code := ts.doJSON("POST", prPath, up, &pr); code != 201 || pr.Status.UpstreamLock == nil || pr.Status.UpstreamLock.Git.Ref != "base/v2" {
		t.Fatalf("upgrade: %d %+v", code, pr)
	}
	if len(pr.Spec.Tasks) != 1 || pr.Spec.Tasks[0].Upgrade == nil ||
		pr.Spec.Tasks[0].Upgrade.NewUpstream.Name != "default.base.v2" || pr.Spec.Tasks[0].Upgrade.LocalPackageRevisionRef.Name != "default.cl.ws" {
		t.Fatalf("upgrade: tasks %+v", pr.Spec.Tasks)
	}
	// Unknown sources are 422, naming the field.
	missing := taskPR("base", "v3", map[string]any{"type": "edit", "edit": map[string]any{"sourceRef": map[string]any{"name": "default.base.nope"}}})
	if code, data := ts.do("POST", prPath, "", mustMarshal(missing)); code != 422 || !strings.Contains(string(data), "spec.tasks[0]") || !strings.Contains(string(data), "nope") {
		t.Errorf("missing source: %d %s", code, data)
	}
}
