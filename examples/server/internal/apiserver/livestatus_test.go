package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/live"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// oneConfigMap is a cluster holding ConfigMap default/present only; reading
// anything in namespace "broken" fails.
type oneConfigMap struct{}

func (oneConfigMap) Get(_ context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	switch {
	case ns == "broken":
		return nil, errors.New("connection refused")
	case gvk.Kind == "ConfigMap" && ns == "default" && name == "present":
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace(ns)
		u.SetName(name)
		return u, nil
	}
	return nil, fmt.Errorf("%s %s/%s: %w", gvk.Kind, ns, name, repository.ErrNotFound)
}

func publishFiles(t *testing.T, ts *testServer, pkg string, files map[string]string) string {
	t.Helper()
	ctx := context.Background()
	e := ts.engine("default")
	key := revision.Key{Package: pkg, Workspace: "v1"}
	_, err := e.Init(ctx, "default", key, engine.InitOptions{})
	require.NoError(t, err)
	_, err = e.Update(ctx, "default", key, revision.MustFiles(files), engine.UpdateOptions{})
	require.NoError(t, err)
	_, err = e.Propose(ctx, "default", key)
	require.NoError(t, err)
	pr, err := e.Approve(ctx, "default", key)
	require.NoError(t, err)
	return porchapi.NameOf(pr.Meta().Key)
}

func TestLiveStatusSubresource(t *testing.T) {
	ts := startServer(t, "", func(o *Options) { o.LiveCluster = oneConfigMap{} })
	name := publishFiles(t, ts, "app", map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: present\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: absent\n",
	})

	var rl metav1.APIResourceList
	ts.doJSON("GET", "/apis/porch.kpt.dev/v1alpha1", nil, &rl)
	var subs []string
	for _, r := range rl.APIResources {
		subs = append(subs, r.Name)
	}
	assert.Contains(t, subs, "packagerevisions/livestatus")

	var ls LiveStatus
	code := ts.doJSON("GET", prPath+"/"+name+"/livestatus", nil, &ls)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, KindLiveStatus, ls.Kind)
	assert.Equal(t, name, ls.Name)
	assert.Equal(t, name, ls.Status.Revision)
	assert.Equal(t, live.NotFound, ls.Status.Summary)
	require.Len(t, ls.Status.Resources, 2)
	assert.Equal(t, live.Current, ls.Status.Resources[0].Status)
	assert.Equal(t, live.NotFound, ls.Status.Resources[1].Status)

	// Bad input and failures, as Kubernetes Statuses.
	for _, tc := range []struct {
		method, path string
		code         int
		reason       metav1.StatusReason
	}{
		{"GET", prPath + "/default.nosuch.v1/livestatus", http.StatusNotFound, metav1.StatusReasonNotFound},
		{"GET", prPath + "/" + name + "/livestatus?defaultNamespace=Not_Valid", http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"GET", prPath + "/" + name + "/livestatus?defaultNamespace=broken", http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable},
		{"PUT", prPath + "/" + name + "/livestatus", http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed},
	} {
		code, data := ts.do(tc.method, tc.path, "application/json", []byte("{}"))
		assert.Equal(t, tc.code, code, "%s %s: %s", tc.method, tc.path, data)
		assert.Equal(t, tc.reason, decodeStatus(t, data).Reason, "%s %s", tc.method, tc.path)
	}

	// Files that are not resources.
	bad := publishFiles(t, ts, "bad", map[string]string{"x.yaml": "just: data\n"})
	code, data := ts.do("GET", prPath+"/"+bad+"/livestatus", "", nil)
	assert.Equal(t, http.StatusBadRequest, code, "%s", data)
	assert.Contains(t, decodeStatus(t, data).Message, "x.yaml")
}

func TestLiveStatusNeedsCluster(t *testing.T) {
	ts := startServer(t, "", nil)
	name := publishFiles(t, ts, "app", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: present\n"})
	code, _ := ts.do("GET", prPath+"/"+name+"/livestatus", "", nil)
	assert.Equal(t, http.StatusNotFound, code)
}
