package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

// A Repository whose git.branch is not a valid git branch name is
// refused with 422 and not stored.
func TestRepositoryBadBranchRefused(t *testing.T) {
	ts := startServer(t, "", nil)
	bare := filepath.Join(t.TempDir(), "r.git")
	gitInitBare(t, bare)
	for _, branch := range []string{"../../x", "a..b", "-x", "x.lock", "a b"} {
		code, body := ts.do("POST", repoPath, "application/yaml", []byte(repoYAML("bad", bare, "\n    branch: \""+branch+"\"")))
		assert.Equal(t, http.StatusUnprocessableEntity, code, "branch %q: %s", branch, body)
		st := decodeStatus(t, body)
		assert.Equal(t, "Invalid", string(st.Reason))
		assert.Contains(t, st.Message, "not a valid git branch name")
		code, _ = ts.do("GET", repoPath+"/bad", "", nil)
		assert.Equal(t, http.StatusNotFound, code, "a refused Repository is not stored")
	}
	code, body := ts.do("POST", repoPath, "application/yaml", []byte(repoYAML("good", bare, "\n    branch: feature/x")))
	assert.Equal(t, http.StatusCreated, code, "%s", body)
}

// A PackageVariant or PackageVariantSet with a field of the wrong type is
// refused with 400 (422 for a patch) and not stored.
func TestVariantWrongTypeRefused(t *testing.T) {
	ts := startServer(t, "", nil)
	const pvPath = "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/packagevariants"
	const pvsPath = "/apis/config.porch.kpt.dev/v1alpha2/namespaces/default/packagevariantsets"
	for _, c := range []struct{ path, body string }{
		{pvPath, `{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"PackageVariant","metadata":{"name":"bad"},"spec":{"upstream":5}}`},
		{pvPath, `{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"PackageVariant","metadata":{"name":"bad"},"spec":{"labels":{"a":1}}}`},
		{pvsPath, `{"apiVersion":"config.porch.kpt.dev/v1alpha2","kind":"PackageVariantSet","metadata":{"name":"bad"},"spec":{"upstream":"x"}}`},
	} {
		code, body := ts.do("POST", c.path, "application/json", []byte(c.body))
		assert.Equal(t, http.StatusBadRequest, code, "%s: %s", c.body, body)
		assert.Equal(t, "BadRequest", string(decodeStatus(t, body).Reason))
		code, _ = ts.do("GET", c.path+"/bad", "", nil)
		assert.Equal(t, http.StatusNotFound, code, "a refused object is not stored")
	}
	// An update is checked too.
	good := `{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"PackageVariant","metadata":{"name":"ok"},"spec":{"upstream":{"repo":"default","package":"a"},"downstream":{"repo":"default","package":"b"}}}`
	code, body := ts.do("POST", pvPath, "application/json", []byte(good))
	require.Equal(t, http.StatusCreated, code, "%s", body)
	// A patch whose result does not decode is Invalid, as Kubernetes
	// answers it.
	code, body = ts.do("PATCH", pvPath+"/ok", "application/merge-patch+json", []byte(`{"spec":{"downstream":7}}`))
	assert.Equal(t, http.StatusUnprocessableEntity, code, "%s", body)
}

// A watch from a resourceVersion the server never issued is a 400, for
// package revisions and for stored resources alike; one it issued works.
func TestWatchBadResourceVersion(t *testing.T) {
	ts := startServer(t, "", nil)
	require.Equal(t, 201, ts.doJSON("POST", prPath, initPR("p", "ws"), nil))
	for _, path := range []string{prPath, repoPath} {
		for _, rv := range []string{"garbage", "not%20a%20version", "l00", "-1"} {
			code, body := ts.do("GET", path+"?watch=true&timeoutSeconds=1&resourceVersion="+rv, "", nil)
			assert.Equal(t, http.StatusBadRequest, code, "%s rv %q: %s", path, rv, body)
			assert.Equal(t, "BadRequest", string(decodeStatus(t, body).Reason))
		}
	}
	var l struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
		Items    []struct {
			Metadata struct{ ResourceVersion string } `json:"metadata"`
		} `json:"items"`
	}
	require.Equal(t, 200, ts.doJSON("GET", prPath, nil, &l))
	require.NotEmpty(t, l.Items)
	for _, rv := range []string{l.Metadata.ResourceVersion, l.Items[0].Metadata.ResourceVersion, "0", "l0123456789abcdef01234567"} {
		code, body := ts.do("GET", prPath+"?watch=true&timeoutSeconds=1&resourceVersion="+rv, "", nil)
		assert.Equal(t, http.StatusOK, code, "rv %q: %s", rv, body)
	}
}

// A resources update with more files than MaxPackageFiles is refused with
// 413 and changes nothing; one at the limit is accepted.
func TestResourcesFileLimit(t *testing.T) {
	assert.Equal(t, DefaultMaxPackageFiles, startServer(t, "", nil).opts.MaxPackageFiles)
	ts := startServer(t, "", func(o *Options) { o.MaxPackageFiles = 20 })
	require.Equal(t, 201, ts.doJSON("POST", prPath, initPR("p", "ws"), nil))
	var prr porchapi.PackageRevisionResources
	require.Equal(t, 200, ts.doJSON("GET", prrPath+"/default.p.ws", nil, &prr))
	before := len(prr.Spec.Resources)
	withFiles := func(n int) porchapi.PackageRevisionResources {
		out := prr
		out.Spec.Resources = map[string]string{"Kptfile": prr.Spec.Resources["Kptfile"]}
		for i := len(out.Spec.Resources); i < n; i++ {
			out.Spec.Resources[fmt.Sprintf("cm%d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm%d\n", i)
		}
		return out
	}
	big := withFiles(21)
	body, _ := json.Marshal(&big)
	code, resp := ts.do("PUT", prrPath+"/default.p.ws", "application/json", body)
	require.Equal(t, http.StatusRequestEntityTooLarge, code, "%s", resp)
	st := decodeStatus(t, resp)
	assert.Equal(t, "RequestEntityTooLarge", string(st.Reason))
	assert.Contains(t, st.Message, "spec.resources has 21 files, more than this server's limit of 20 files")
	var after porchapi.PackageRevisionResources
	require.Equal(t, 200, ts.doJSON("GET", prrPath+"/default.p.ws", nil, &after))
	assert.Len(t, after.Spec.Resources, before, "the refused update changed nothing")
	assert.Equal(t, prr.ResourceVersion, after.ResourceVersion)

	ok := withFiles(20)
	require.Equal(t, 200, ts.doJSON("PUT", prrPath+"/default.p.ws", &ok, nil))
}

// Store-kept objects follow fieldValidation for unknown fields, as
// Kubernetes does: Strict refuses them with 400, the default warns.
func TestStoredObjectsUnknownFields(t *testing.T) {
	ts := startServer(t, "", nil)
	bare := filepath.Join(t.TempDir(), "r.git")
	gitInitBare(t, bare)
	const pvPath = "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/packagevariants"
	repo := []byte(`{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"Repository","metadata":{"name":"r"},"spec":{"type":"git","bogus":1,"git":{"repo":"` + bare + `","createBranch":true}}}`)
	pv := []byte(`{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"PackageVariant","metadata":{"name":"v"},"spec":{"bogus":1,"upstream":{"repo":"default","package":"a"},"downstream":{"repo":"default","package":"b"}}}`)
	for _, c := range []struct {
		path string
		body []byte
	}{{repoPath, repo}, {pvPath, pv}} {
		code, body := ts.do("POST", c.path+"?fieldValidation=Strict", "application/json", c.body)
		assert.Equal(t, http.StatusBadRequest, code, "%s", body)
		assert.Contains(t, string(body), `unknown field \"spec.bogus\"`)

		req, err := http.NewRequest("POST", ts.URL+c.path, bytes.NewReader(c.body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.Contains(t, resp.Header.Get("Warning"), `unknown field \"spec.bogus\"`)
	}
	// A Repository field of the wrong type is a 400.
	code, body := ts.do("POST", repoPath, "application/json", []byte(`{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"Repository","metadata":{"name":"t"},"spec":{"type":"git","git":{"repo":5}}}`))
	assert.Equal(t, http.StatusBadRequest, code, "%s", body)
}
