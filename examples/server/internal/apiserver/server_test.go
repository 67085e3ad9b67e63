package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

func TestDiscovery(t *testing.T) {
	ts := startServer(t, "", nil)
	var groups metav1.APIGroupList
	if code := ts.doJSON("GET", "/apis", nil, &groups); code != 200 || len(groups.Groups) != 2 {
		t.Fatalf("/apis: %d %+v", code, groups)
	}
	var rl metav1.APIResourceList
	ts.doJSON("GET", "/apis/porch.kpt.dev/v1alpha1", nil, &rl)
	found := map[string]metav1.APIResource{}
	for _, r := range rl.APIResources {
		found[r.Name] = r
	}
	pr := found["packagerevisions"]
	if pr.Kind != "PackageRevision" || !pr.Namespaced || len(pr.Verbs) != 7 || len(pr.ShortNames) == 0 {
		t.Errorf("packagerevisions: %+v", pr)
	}
	if _, ok := found["packagerevisions/approval"]; !ok {
		t.Errorf("no approval subresource in %+v", rl)
	}
	if prr := found["packagerevisionresources"]; strings.Join(prr.Verbs, ",") != "get,list,patch,update" {
		t.Errorf("packagerevisionresources: %+v", prr)
	}
	rl = metav1.APIResourceList{}
	ts.doJSON("GET", "/apis/config.porch.kpt.dev/v1alpha2", nil, &rl)
	if len(rl.APIResources) != 2 || rl.APIResources[0].Kind != "PackageVariantSet" || rl.APIResources[1].Name != "packagevariantsets/status" {
		t.Errorf("v1alpha2: %+v", rl)
	}
	// Repositories and PackageVariants have a status subresource, as
	// their CRDs in Kubernetes do.
	rl = metav1.APIResourceList{}
	ts.doJSON("GET", "/apis/config.porch.kpt.dev/v1alpha1", nil, &rl)
	found = map[string]metav1.APIResource{}
	for _, r := range rl.APIResources {
		found[r.Name] = r
	}
	for _, name := range []string{"repositories/status", "packagevariants/status"} {
		if r, ok := found[name]; !ok || strings.Join(r.Verbs, ",") != "get,patch,update" {
			t.Errorf("%s: %+v in %+v", name, r, rl)
		}
	}
	if code, _ := ts.do("GET", "/apis/nope.example/v1", "", nil); code != 404 {
		t.Errorf("unknown group: %d", code)
	}
	var root map[string]map[string]any
	ts.doJSON("GET", "/openapi/v3", nil, &root)
	if _, ok := root["paths"]["apis/porch.kpt.dev/v1alpha1"]; !ok {
		t.Errorf("openapi root: %v", root)
	}
}

func TestStatusCodes(t *testing.T) {
	ts := startServer(t, "", func(o *Options) { o.MaxBodyBytes = 64 << 10 })
	var created porchapi.PackageRevision
	if code := ts.doJSON("POST", prPath, initPR("p", "ws"), &created); code != http.StatusCreated {
		t.Fatalf("create: %d %+v", code, created)
	}
	if created.Name != "default.p.ws" || created.Spec.Lifecycle != porchapi.LifecycleDraft || created.ResourceVersion == "" {
		t.Fatalf("created %+v", created)
	}

	for _, tc := range []struct {
		name, method, path, ctype string
		body                      []byte
		code                      int
		reason                    metav1.StatusReason
	}{
		{"get missing", "GET", prPath + "/default.nope.ws", "", nil, 404, metav1.StatusReasonNotFound},
		{"get bad name", "GET", prPath + "/nodots", "", nil, 404, metav1.StatusReasonNotFound},
		{"get unknown repo", "GET", prPath + "/other.p.ws", "", nil, 404, metav1.StatusReasonNotFound},
		{"create again", "POST", prPath, "application/json", mustMarshal(initPR("p", "ws")), 409, metav1.StatusReasonAlreadyExists},
		{"bad JSON", "POST", prPath, "application/json", []byte(`{"spec": `), 400, metav1.StatusReasonBadRequest},
		{"bad package name", "POST", prPath, "application/json", mustMarshal(initPR("Bad_Name", "ws")), 422, metav1.StatusReasonInvalid},
		{"no workspace", "POST", prPath, "application/json", mustMarshal(initPR("q", "")), 422, metav1.StatusReasonInvalid},
		{"branch as workspace", "POST", prPath, "application/json", mustMarshal(initPR("q", "main")), 422, metav1.StatusReasonInvalid},
		{"two tasks", "POST", prPath, "application/json", []byte(`{"spec":{"packageName":"q","repository":"default","workspaceName":"w","tasks":[{"type":"init"},{"type":"init"}]}}`), 422, metav1.StatusReasonInvalid},
		{"unknown repository", "POST", prPath, "application/json", []byte(`{"spec":{"packageName":"q","repository":"nope","workspaceName":"w"}}`), 422, metav1.StatusReasonInvalid},
		{"strict unknown field", "POST", prPath + "?fieldValidation=Strict", "application/json", []byte(`{"spec":{"packageName":"q","repository":"default","workspaceName":"w","bogus":1}}`), 400, metav1.StatusReasonBadRequest},
		{"oversize", "POST", prPath, "application/json", bytes.Repeat([]byte(" "), 65<<10), 413, metav1.StatusReasonRequestEntityTooLarge},
		// Kinds without a protobuf form, as on any k8s.io/apiserver server.
		{"protobuf", "POST", prPath, "application/vnd.kubernetes.protobuf", []byte("x"), 400, metav1.StatusReasonBadRequest},
		{"unknown patch type", "PATCH", prPath + "/default.p.ws", "application/json", []byte(`{}`), 415, metav1.StatusReasonUnsupportedMediaType},
		{"stale update", "PUT", prPath + "/default.p.ws", "application/json", []byte(`{"metadata":{"name":"default.p.ws","resourceVersion":"stale"},"spec":{"lifecycle":"Proposed"}}`), 409, metav1.StatusReasonConflict},
		{"name mismatch", "PUT", prPath + "/default.p.ws", "application/json", []byte(`{"metadata":{"name":"default.p.other"}}`), 400, metav1.StatusReasonBadRequest},
		{"publish by update", "PUT", prPath + "/default.p.ws", "application/json", []byte(`{"metadata":{"name":"default.p.ws"},"spec":{"lifecycle":"Published"}}`), 422, metav1.StatusReasonInvalid},
		{"approve a draft", "PUT", prPath + "/default.p.ws/approval", "application/json", []byte(`{"metadata":{"name":"default.p.ws"},"spec":{"lifecycle":"Published"}}`), 422, metav1.StatusReasonInvalid},
		{"immutable package name", "PUT", prPath + "/default.p.ws", "application/json", []byte(`{"metadata":{"name":"default.p.ws"},"spec":{"packageName":"other"}}`), 422, metav1.StatusReasonInvalid},
		{"set latest label", "PUT", prPath + "/default.p.ws", "application/json", []byte(fmt.Sprintf(`{"metadata":{"name":"default.p.ws","resourceVersion":%q,"labels":{"kpt.dev/latest-revision":"true"}}}`, created.ResourceVersion)), 403, metav1.StatusReasonForbidden},
		// As Porch: no unconditional update of a package revision.
		{"update without resourceVersion", "PUT", prPath + "/default.p.ws", "application/json", []byte(`{"metadata":{"name":"default.p.ws","labels":{"a":"b"}}}`), 422, metav1.StatusReasonInvalid},
		{"prr without resourceVersion", "PUT", prrPath + "/default.p.ws", "application/json", []byte(`{"metadata":{"name":"default.p.ws"},"spec":{"resources":{"Kptfile":"x"}}}`), 422, metav1.StatusReasonInvalid},
		{"prr stale", "PUT", prrPath + "/default.p.ws", "application/json", []byte(`{"metadata":{"name":"default.p.ws","resourceVersion":"stale"},"spec":{"resources":{"Kptfile":"x"}}}`), 409, metav1.StatusReasonConflict},
		{"prr bad path", "PUT", prrPath + "/default.p.ws", "application/json", []byte(fmt.Sprintf(`{"metadata":{"name":"default.p.ws","resourceVersion":%q},"spec":{"resources":{"../x":"x"}}}`, created.ResourceVersion)), 422, metav1.StatusReasonInvalid},
		{"prr create", "POST", prrPath, "application/json", []byte(`{}`), 405, metav1.StatusReasonMethodNotAllowed},
		{"bad label selector", "GET", prPath + "?labelSelector=a%20in%20(", "", nil, 400, metav1.StatusReasonBadRequest},
		{"bad field selector", "GET", prPath + "?fieldSelector=spec.nope%3Dx", "", nil, 400, metav1.StatusReasonBadRequest},
		{"repository bad spec", "POST", repoPath, "application/json", []byte(`{"metadata":{"name":"r"},"spec":{"type":"git"}}`), 422, metav1.StatusReasonInvalid},
		{"repository in missing namespace", "POST", "/apis/config.porch.kpt.dev/v1alpha1/namespaces/nope/repositories", "application/json", []byte(`{"metadata":{"name":"r"},"spec":{"type":"git","git":{"repo":"/tmp/x"}}}`), 404, metav1.StatusReasonNotFound},
		{"delete default namespace", "DELETE", "/api/v1/namespaces/default", "", nil, 403, metav1.StatusReasonForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, data := ts.do(tc.method, tc.path, tc.ctype, tc.body)
			st := decodeStatus(t, data)
			if code != tc.code || st.Code != int32(tc.code) || st.Reason != tc.reason {
				t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, code, data, tc.code, tc.reason)
			}
		})
	}

	// Publish, then a delete is forbidden until deletion is proposed.
	var pr porchapi.PackageRevision
	ts.doJSON("PUT", prPath+"/default.p.ws", map[string]any{"metadata": map[string]any{"name": "default.p.ws", "resourceVersion": created.ResourceVersion},
		"spec": map[string]any{"lifecycle": "Proposed"}}, &pr)
	if pr.Spec.Lifecycle != porchapi.LifecycleProposed {
		t.Fatalf("propose: %+v", pr)
	}
	pr.Spec.Lifecycle = porchapi.LifecyclePublished
	if code := ts.doJSON("PUT", prPath+"/default.p.ws/approval", &pr, &pr); code != 200 || pr.Spec.Revision != 1 || !porchapi.IsLatest(&pr) {
		t.Fatalf("approve: %d %+v", code, pr)
	}
	code, data := ts.do("DELETE", prPath+"/default.p.ws", "", nil)
	if st := decodeStatus(t, data); code != 403 || !strings.Contains(st.Message, "DeletionProposed") {
		t.Errorf("delete published: %d %s", code, data)
	}
	if code, data := ts.do("PATCH", prPath+"/default.p.ws", "application/merge-patch+json", nil); code != 400 {
		t.Errorf("empty patch: %d %s", code, data)
	}
	code, data = ts.do("PATCH", prPath+"/default.p.ws", "application/json-patch+json",
		[]byte(`[{"op":"replace","path":"/spec/lifecycle","value":"DeletionProposed"}]`))
	if code != 200 || !strings.Contains(string(data), `"DeletionProposed"`) {
		t.Fatalf("json patch: %d %s", code, data)
	}
	code, data = ts.do("DELETE", prPath+"/default.p.ws", "", nil)
	if code != 200 || decodeStatus(t, data).Status != metav1.StatusSuccess {
		t.Errorf("delete: %d %s", code, data)
	}
	if code, _ := ts.do("GET", prPath+"/default.p.ws", "", nil); code != 404 {
		t.Errorf("get after delete: %d", code)
	}
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestRestartPersistence registers a repository and a PackageVariant, stops
// the server and starts a new one on the same data directory.
func TestRestartPersistence(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ts := startServer(t, dir, nil)
	bare := filepath.Join(t.TempDir(), "blueprints.git")
	if out, err := exec.Command("git", "init", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
		t.Skipf("git init: %v %s", err, out)
	}
	repo := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
		"metadata": map[string]any{"name": "blueprints", "labels": map[string]any{"tier": "gold"}},
		"spec":     map[string]any{"type": "git", "git": map[string]any{"repo": bare, "branch": "main", "createBranch": true}}}
	var r porchapi.Repository
	if code := ts.doJSON("POST", repoPath, repo, &r); code != 201 {
		t.Fatalf("create repository: %d %+v", code, r)
	}
	if len(r.Status.Conditions) != 1 || r.Status.Conditions[0].Status != metav1.ConditionTrue {
		t.Fatalf("repository status: %+v", r.Status)
	}
	pv := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
		"metadata": map[string]any{"name": "pv1"},
		"spec":     map[string]any{"upstream": map[string]any{"repo": "blueprints", "package": "p", "revision": 1}, "downstream": map[string]any{"repo": "default", "package": "p"}}}
	if code := ts.doJSON("POST", "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/packagevariants", pv, nil); code != 201 {
		t.Fatalf("create pv: %d", code)
	}
	p := initPR("net", "ws")
	p["spec"].(map[string]any)["repository"] = "blueprints"
	if code := ts.doJSON("POST", prPath, p, nil); code != 201 {
		t.Fatalf("create pr: %d", code)
	}
	ts.stop()

	ts2 := startServer(t, dir, nil)
	var list porchapi.RepositoryList
	ts2.doJSON("GET", repoPath, nil, &list)
	if len(list.Items) != 2 || list.Items[0].Name != "blueprints" || list.Items[0].Labels["tier"] != "gold" ||
		list.Items[0].Spec.Git.Repo != bare || list.Items[1].Name != "default" {
		t.Fatalf("repositories after restart: %+v", list.Items)
	}
	var got porchapi.PackageVariant
	if code := ts2.doJSON("GET", "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/packagevariants/pv1", nil, &got); code != 200 ||
		got.Spec.Downstream == nil {
		t.Fatalf("pv after restart: %d %+v", code, got)
	}
	var pr porchapi.PackageRevision
	if code := ts2.doJSON("GET", prPath+"/blueprints.net.ws", nil, &pr); code != 200 || pr.Spec.RepositoryName != "blueprints" {
		t.Fatalf("package revision after restart: %d %+v", code, pr)
	}
	// The default repository is registered once: deleting it sticks.
	if code, data := ts2.do("DELETE", repoPath+"/default", "", nil); code != 200 {
		t.Fatalf("delete default: %d %s", code, data)
	}
	ts2.stop()
	ts3 := startServer(t, dir, nil)
	if code, _ := ts3.do("GET", repoPath+"/default", "", nil); code != 404 {
		t.Errorf("default repository came back: %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "objects", "repositories", "default", "blueprints.json")); err != nil {
		t.Errorf("no object file: %v", err)
	}
}

// TestWatchOutlivesTimeouts watches through a server with short read and
// write timeouts and sees an event after both passed.
func TestWatchOutlivesTimeouts(t *testing.T) {
	ts := startServer(t, "", nil)
	hs := httptest.NewUnstartedServer(ts.Handler())
	hs.Config.ReadTimeout = 300 * time.Millisecond
	hs.Config.WriteTimeout = 300 * time.Millisecond
	hs.Start()
	defer hs.Close()
	resp, err := http.Get(hs.URL + prPath + "?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("watch: %d %v", resp.StatusCode, resp.Header)
	}
	time.Sleep(800 * time.Millisecond)
	if code := ts.doJSON("POST", prPath, initPR("late", "ws"), nil); code != 201 {
		t.Fatalf("create: %d", code)
	}
	events := make(chan metav1.WatchEvent)
	go func() {
		dec := json.NewDecoder(resp.Body)
		for {
			var ev metav1.WatchEvent
			if dec.Decode(&ev) != nil {
				close(events)
				return
			}
			events <- ev
		}
	}()
	select {
	case ev, ok := <-events:
		if !ok || ev.Type != "ADDED" || !strings.Contains(string(ev.Object.Raw), "default.late.ws") {
			t.Fatalf("event %v %+v %s", ok, ev, ev.Object.Raw)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no event")
	}
}

// An update of a draft's resources renders its pipeline and reports each
// function in status.renderStatus, as Porch does.
func TestResourcesRenderStatus(t *testing.T) {
	ts := startServer(t, "", nil)
	var created porchapi.PackageRevision
	if code := ts.doJSON("POST", prPath, initPR("rs", "ws"), &created); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	var prr porchapi.PackageRevisionResources
	if code := ts.doJSON("GET", prrPath+"/default.rs.ws", nil, &prr); code != 200 {
		t.Fatalf("get prr: %d", code)
	}
	prr.Spec.Resources["Kptfile"] = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: rs\npipeline:\n  mutators:\n    - image: set-labels:v0.2.0\n      configMap:\n        tier: web\n"
	prr.Spec.Resources["cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
	var out porchapi.PackageRevisionResources
	if code := ts.doJSON("PUT", prrPath+"/default.rs.ws", prr, &out); code != 200 {
		t.Fatalf("update prr: %d %+v", code, out)
	}
	items := out.Status.RenderStatus.Result.Items
	if len(items) != 1 || !strings.Contains(items[0].Image, "set-labels") || items[0].ExitCode != 0 {
		t.Fatalf("renderStatus after a render: %+v", out.Status.RenderStatus)
	}
	if !strings.Contains(out.Spec.Resources["cm.yaml"], "tier: web") {
		t.Fatalf("cm.yaml not rendered:\n%s", out.Spec.Resources["cm.yaml"])
	}
}
