package apiserver

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const pkgFileHead = "apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nmetadata:\n  name: x\nspec:\n"

// TestDependenciesSubresource: GET packagerevisions/NAME/dependencies
// resolves a revision's requirements against the published packages, names
// the providers as PackageRevisions, reports what is missing, and refuses
// bad input with Kubernetes Statuses.
func TestDependenciesSubresource(t *testing.T) {
	ts := startServer(t, "", nil)
	provider := publishFiles(t, ts, "certs", map[string]string{
		"Kptfile":         "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: certs\n",
		"cadpackage.yaml": pkgFileHead + "  provides:\n  - capability: certificates\n",
	})
	app := publishFiles(t, ts, "app", map[string]string{
		"Kptfile":         "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
		"cadpackage.yaml": pkgFileHead + "  requires:\n  - capability: certificates\n  - capability: dns\n",
	})

	var d Dependencies
	require.Equal(t, http.StatusOK, ts.doJSON("GET", prPath+"/"+app+"/dependencies", nil, &d))
	assert.Equal(t, KindDependencies, d.Kind)
	assert.False(t, d.Status.Satisfied)
	require.Len(t, d.Status.Bindings, 2)
	assert.Equal(t, "Satisfied", d.Status.Bindings[0].Status)
	assert.Equal(t, provider, d.Status.Bindings[0].Provider)
	assert.Equal(t, "Missing", d.Status.Bindings[1].Status)
	assert.Empty(t, d.Status.Bindings[1].Provider)
	assert.Equal(t, metav1.ConditionFalse, d.Status.Condition.Status)
	assert.Contains(t, d.Status.Summary, "dns")

	// A provider of dns published: satisfied.
	publishFiles(t, ts, "dns", map[string]string{
		"Kptfile":         "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: dns\n",
		"cadpackage.yaml": pkgFileHead + "  provides:\n  - capability: dns\n",
	})
	require.Equal(t, http.StatusOK, ts.doJSON("GET", prPath+"/"+app+"/dependencies", nil, &d))
	assert.True(t, d.Status.Satisfied, d.Status.Summary)

	for _, tc := range []struct {
		method, path string
		code         int
		reason       metav1.StatusReason
	}{
		{"GET", prPath + "/default.nosuch.v1/dependencies", http.StatusNotFound, metav1.StatusReasonNotFound},
		{"GET", prPath + "/" + app + "/dependencies?repo=nosuch", http.StatusNotFound, metav1.StatusReasonNotFound},
		{"PUT", prPath + "/" + app + "/dependencies", http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed},
	} {
		code, data := ts.do(tc.method, tc.path, "application/json", []byte("{}"))
		assert.Equal(t, tc.code, code, "%s %s: %s", tc.method, tc.path, data)
		assert.Equal(t, tc.reason, decodeStatus(t, data).Reason, "%s %s", tc.method, tc.path)
	}
}
