package apiserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/revision"
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
	assert.Equal(t, []string{"alice", `bob "the, builder"`}, authorsOf(md3))

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
	assert.Empty(t, authorsOf(revision.Metadata{Annotations: map[string]string{AuthorsAnnotation: "not json"}}))
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
