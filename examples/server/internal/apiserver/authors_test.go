package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
)

func TestAuthorsAnnotation(t *testing.T) {
	md := revision.Metadata{Labels: map[string]string{"a": "b"}}
	md1, added := withAuthor(md, "alice")
	assert.True(t, added)
	assert.Equal(t, `["alice"]`, md1.Annotations[AuthorsAnnotation])
	assert.Nil(t, md.Annotations, "withAuthor must not change its argument")
	md2, added := withAuthor(md1, "alice")
	assert.False(t, added)
	assert.Equal(t, md1, md2)
	md3, _ := withAuthor(md1, `bob "the, builder"`)
	names, err := authorsOf(md3)
	require.NoError(t, err)
	assert.Equal(t, []string{"alice", `bob "the, builder"`}, names)

	// A client's value is replaced by the current one; leaving it out is
	// not a change the client is warned about.
	forged := revision.Metadata{Annotations: map[string]string{AuthorsAnnotation: "[]", "x": "y"}}
	kept, overridden := keepManaged(forged, md1)
	assert.True(t, overridden)
	assert.Equal(t, map[string]string{AuthorsAnnotation: `["alice"]`, "x": "y"}, kept.Annotations)
	kept, overridden = keepManaged(revision.Metadata{}, md1)
	assert.False(t, overridden)
	assert.Equal(t, `["alice"]`, kept.Annotations[AuthorsAnnotation])
	kept, overridden = keepManaged(forged, revision.Metadata{})
	assert.True(t, overridden)
	assert.Equal(t, map[string]string{"x": "y"}, kept.Annotations)

	// A damaged record is an error, not "no authors", and adding an
	// author leaves it as it is.
	damaged := revision.Metadata{Annotations: map[string]string{AuthorsAnnotation: "not json"}}
	names, err = authorsOf(damaged)
	assert.Error(t, err)
	assert.Empty(t, names)
	same, added := withAuthor(damaged, "alice")
	assert.False(t, added)
	assert.Equal(t, "not json", same.Annotations[AuthorsAnnotation])
}

// An update refused for its lifecycle or an immutable field writes
// nothing, not even its labels or the authors record.
func TestRefusedUpdateWritesNothing(t *testing.T) {
	ts := startServer(t, "", nil)
	require.Equal(t, 201, ts.doJSON("POST", prPath, initPR("p", "ws"), nil))
	var pr map[string]any
	require.Equal(t, 200, ts.doJSON("GET", prPath+"/default.p.ws", nil, &pr))
	pr["metadata"].(map[string]any)["labels"] = map[string]any{"stage": "prod"}
	pr["spec"].(map[string]any)["lifecycle"] = "Published"
	assert.Equal(t, 422, ts.doJSON("PUT", prPath+"/default.p.ws", pr, nil))
	var after map[string]any
	require.Equal(t, 200, ts.doJSON("GET", prPath+"/default.p.ws", nil, &after))
	assert.Nil(t, after["metadata"].(map[string]any)["labels"])
	assert.Equal(t, "Draft", after["spec"].(map[string]any)["lifecycle"])
}

const selfApprovalTokens = `alice-token,alice,2,"cad:editor,cad:approver"
bob-token,bob,3,cad:editor
carol-token,carol,4,cad:approver
`

// doAs sends v as JSON with a bearer token and decodes the answer into out
// (when not nil); it returns the status code and the body.
func (ts *testServer) doAs(token, method, path string, v, out any) (int, string) {
	ts.t.Helper()
	var body []byte
	if v != nil {
		var err error
		if body, err = json.Marshal(v); err != nil {
			ts.t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, ts.URL+path, bytes.NewReader(body))
	require.NoError(ts.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(ts.t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		require.NoError(ts.t, json.Unmarshal(data, out), "%s", data)
	}
	return resp.StatusCode, string(data)
}

func selfApprovalServer(t *testing.T) *testServer {
	tokens, err := ParseTokens(strings.NewReader(selfApprovalTokens))
	require.NoError(t, err)
	return startServer(t, "", func(o *Options) { o.Tokens = tokens; o.RefuseSelfApproval = true })
}

// proposeAs proposes revision name as the user of token.
func proposeAs(t *testing.T, ts *testServer, token, name string) {
	t.Helper()
	var pr porchapi.PackageRevision
	code, body := ts.doAs(token, "GET", prPath+"/"+name, nil, &pr)
	require.Equal(t, 200, code, body)
	pr.Spec.Lifecycle = porchapi.LifecycleProposed
	code, body = ts.doAs(token, "PUT", prPath+"/"+name, &pr, nil)
	require.Equal(t, 200, code, body)
}

// approveAs approves revision name as the user of token and returns the
// status code and body.
func approveAs(t *testing.T, ts *testServer, token, name string) (int, string) {
	t.Helper()
	var pr porchapi.PackageRevision
	code, body := ts.doAs(token, "GET", prPath+"/"+name, nil, &pr)
	require.Equal(t, 200, code, body)
	pr.Spec.Lifecycle = porchapi.LifecyclePublished
	return ts.doAs(token, "PUT", prPath+"/"+name+"/approval", &pr, nil)
}

// A user who writes content through their own PackageVariant cannot
// approve it after someone else proposed it: the variant's owner is an
// author of what the sync writes.
func TestSelfApprovalThroughPackageVariant(t *testing.T) {
	ts := selfApprovalServer(t)
	var base porchapi.PackageRevision
	code, body := ts.doAs("bob-token", "POST", prPath, initPR("base", "v1"), &base)
	require.Equal(t, 201, code, body)
	proposeAs(t, ts, "bob-token", base.Name)
	code, body = approveAs(t, ts, "carol-token", base.Name)
	require.Equal(t, 200, code, body)

	pv := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
		"metadata": map[string]any{"name": "edge", "annotations": map[string]any{AuthorsAnnotation: `["nobody"]`}},
		"spec": map[string]any{
			"upstream":       map[string]any{"repo": "default", "package": "base"},
			"downstream":     map[string]any{"repo": "default", "package": "edge"},
			"deletionPolicy": "orphan",
		}}
	const pvPath = "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/packagevariants"
	var created map[string]any
	code, body = ts.doAs("alice-token", "POST", pvPath, pv, &created)
	require.Equal(t, 201, code, body)
	assert.Equal(t, `["alice"]`, created["metadata"].(map[string]any)["annotations"].(map[string]any)[AuthorsAnnotation],
		"the server records the variant's author and ignores the client's value")

	var edge porchapi.PackageRevision
	waitFor(t, "the downstream draft with its authors", func() bool {
		var l porchapi.PackageRevisionList
		ts.doAs("carol-token", "GET", prPath, nil, &l)
		for _, it := range l.Items {
			if it.Spec.PackageName == "edge" {
				edge = it
			}
		}
		return edge.Annotations[AuthorsAnnotation] == `["alice"]`
	})
	proposeAs(t, ts, "bob-token", edge.Name)
	code, body = approveAs(t, ts, "alice-token", edge.Name)
	assert.Equal(t, 403, code, body)
	assert.Contains(t, body, `User \"alice\" cannot approve a package revision`)
	var got porchapi.PackageRevision
	ts.doAs("carol-token", "GET", prPath+"/"+edge.Name, nil, &got)
	assert.Equal(t, porchapi.LifecycleProposed, got.Spec.Lifecycle, "the refused approval changed nothing")

	// With the variant gone (orphaned), the record on the revision still
	// refuses alice.
	code, body = ts.doAs("alice-token", "DELETE", pvPath+"/edge", nil, nil)
	require.Equal(t, 200, code, body)
	waitFor(t, "the revision orphaned", func() bool {
		var cur porchapi.PackageRevision
		ts.doAs("carol-token", "GET", prPath+"/"+edge.Name, nil, &cur)
		_, owned := cur.Annotations[variant.OwnerAnnotation]
		return cur.Name != "" && !owned
	})
	code, body = approveAs(t, ts, "alice-token", edge.Name)
	assert.Equal(t, 403, code, body)
	code, body = approveAs(t, ts, "carol-token", edge.Name)
	assert.Equal(t, 200, code, body)
}

// A damaged authors record refuses the approval (fails closed) with a
// message that says why.
func TestSelfApprovalDamagedAuthorsFailsClosed(t *testing.T) {
	ts := selfApprovalServer(t)
	var pr porchapi.PackageRevision
	code, body := ts.doAs("bob-token", "POST", prPath, initPR("p", "v1"), &pr)
	require.Equal(t, 201, code, body)
	proposeAs(t, ts, "bob-token", pr.Name)
	// Damage the record behind the server's back, as a git user could.
	e := ts.engine("default")
	rev, err := e.Get(context.Background(), "default", revision.Key{Repository: "default", Package: "p", Workspace: "v1"})
	require.NoError(t, err)
	md := rev.Meta().Metadata.Clone()
	md.Annotations[AuthorsAnnotation] = `["bob"`
	_, err = e.SetMetadata(context.Background(), "default", rev.Meta().Key, md, rev.Meta().Version)
	require.NoError(t, err)

	code, body = approveAs(t, ts, "carol-token", pr.Name)
	assert.Equal(t, 403, code, body)
	assert.Contains(t, body, "cannot be read")
	var got porchapi.PackageRevision
	ts.doAs("carol-token", "GET", prPath+"/"+pr.Name, nil, &got)
	assert.Equal(t, porchapi.LifecycleProposed, got.Spec.Lifecycle)
}

// The same through a PackageVariantSet: its author is an author of the
// revisions its generated variants write.
func TestSelfApprovalThroughPackageVariantSet(t *testing.T) {
	ts := selfApprovalServer(t)
	var base porchapi.PackageRevision
	code, body := ts.doAs("bob-token", "POST", prPath, initPR("base", "v1"), &base)
	require.Equal(t, 201, code, body)
	proposeAs(t, ts, "bob-token", base.Name)
	code, body = approveAs(t, ts, "carol-token", base.Name)
	require.Equal(t, 200, code, body)

	pvs := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha2", "kind": "PackageVariantSet",
		"metadata": map[string]any{"name": "fan"},
		"spec": map[string]any{
			"upstream": map[string]any{"repo": "default", "package": "base"},
			"targets":  []any{map[string]any{"repositories": []any{map[string]any{"name": "default", "packageNames": []any{"fan-a"}}}}},
		}}
	const pvsPath = "/apis/config.porch.kpt.dev/v1alpha2/namespaces/default/packagevariantsets"
	code, body = ts.doAs("alice-token", "POST", pvsPath, pvs, nil)
	require.Equal(t, 201, code, body)
	var fan porchapi.PackageRevision
	waitFor(t, "the set's downstream draft with its authors", func() bool {
		var l porchapi.PackageRevisionList
		ts.doAs("carol-token", "GET", prPath, nil, &l)
		for _, it := range l.Items {
			if it.Spec.PackageName == "fan-a" {
				fan = it
			}
		}
		return fan.Annotations[AuthorsAnnotation] == `["alice"]`
	})
	proposeAs(t, ts, "bob-token", fan.Name)
	code, body = approveAs(t, ts, "alice-token", fan.Name)
	assert.Equal(t, 403, code, body)
	assert.Contains(t, body, `User \"alice\" cannot approve a package revision`)
	code, body = approveAs(t, ts, "carol-token", fan.Name)
	assert.Equal(t, 200, code, body)
}

// The approval check reads the authors of the owning variant objects
// themselves (covering the moment between a sync's write and its record
// on the revision), and a damaged record there fails closed too.
func TestVariantAuthors(t *testing.T) {
	ts := startServer(t, "", nil)
	put := func(res, name, authors string) {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
			"metadata": map[string]any{"name": name, "namespace": "default", "annotations": map[string]any{AuthorsAnnotation: authors}}}}
		_, err := ts.store.Create(res, u)
		require.NoError(t, err)
	}
	put(resPackageVariants, "pv", `["alice"]`)
	put(resPackageVariantSets, "set", `["dave"]`)
	put(resPackageVariants, "bad", `alice`)
	md := revision.Metadata{Annotations: map[string]string{variant.OwnerAnnotation: "default/pv"}, Labels: map[string]string{variant.SetLabel: "set"}}
	names, err := ts.variantAuthors("default", md)
	require.NoError(t, err)
	assert.Equal(t, []string{"alice", "dave"}, names)
	names, err = ts.variantAuthors("default", revision.Metadata{Annotations: map[string]string{variant.OwnerAnnotation: "default/gone"}})
	require.NoError(t, err)
	assert.Empty(t, names, "an owner no longer stored adds nothing")
	_, err = ts.variantAuthors("default", revision.Metadata{Annotations: map[string]string{variant.OwnerAnnotation: "default/bad"}})
	assert.Error(t, err)
}
