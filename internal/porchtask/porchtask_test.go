package porchtask

import (
	"encoding/json"
	"testing"

	"github.com/configasdata/cad/revision"
)

// Tasks as Porch writes them in the kpt: annotation decode into Creations,
// and Creations encode into what Porch reads.
func TestCreationTask(t *testing.T) {
	for _, tc := range []struct {
		porch string
		want  *revision.Creation
	}{
		{`{"type":"init","init":{"description":"a blueprint","keywords":["ns"],"site":"https://example.com"}}`,
			&revision.Creation{Op: revision.CreatedByInit, Description: "a blueprint", Keywords: []string{"ns"}, Site: "https://example.com"}},
		{`{"type":"clone","clone":{"upstreamRef":{"upstreamRef":{"name":"blueprints.team.basens.v1"}}}}`,
			&revision.Creation{Op: revision.CreatedByClone, Source: &revision.Key{Repository: "blueprints", Package: "team/basens", Workspace: "v1"}}},
		{`{"type":"clone","clone":{"upstreamRef":{"type":"git","git":{"repo":"https://example.com/b.git","ref":"basens/v1","directory":"basens","secretRef":{"name":""}}},"strategy":"fast-forward"}}`,
			&revision.Creation{Op: revision.CreatedByClone, Git: &revision.GitUpstreamRef{Repo: "https://example.com/b.git", Ref: "basens/v1", Directory: "basens"}, Strategy: revision.FastForward}},
		{`{"type":"edit","edit":{"sourceRef":{"name":"deploy.ns.v1"}}}`,
			&revision.Creation{Op: revision.CreatedByCopy, Source: &revision.Key{Repository: "deploy", Package: "ns", Workspace: "v1"}}},
		{`{"type":"upgrade","upgrade":{"oldUpstreamRef":{"name":"b.basens.v1"},"newUpstreamRef":{"name":"b.basens.v2"},"localPackageRevisionRef":{"name":"d.ns.v1"},"strategy":"resource-merge"}}`,
			&revision.Creation{Op: revision.CreatedByUpgrade, OldUpstream: &revision.Key{Repository: "b", Package: "basens", Workspace: "v1"},
				NewUpstream: &revision.Key{Repository: "b", Package: "basens", Workspace: "v2"}, Local: &revision.Key{Repository: "d", Package: "ns", Workspace: "v1"}, Strategy: revision.ResourceMerge}},
		{`{"type":"render"}`, nil},
		{`{"type":"patch","patch":{}}`, nil},
		{`not json`, nil},
		{``, nil},
	} {
		got := Decode(json.RawMessage(tc.porch))
		if !got.Equal(tc.want) {
			t.Errorf("decode %s = %+v, want %+v", tc.porch, got, tc.want)
		}
		if tc.want == nil {
			continue
		}
		// Encoding gives JSON that decodes to the same, in Porch's shape.
		enc := Encode(tc.want)
		if back := Decode(enc); !back.Equal(tc.want) {
			t.Errorf("round trip of %+v through %s = %+v", tc.want, enc, back)
		}
		var porch, ours map[string]any
		if err := json.Unmarshal([]byte(tc.porch), &porch); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(enc, &ours); err != nil {
			t.Fatal(err)
		}
		if porch["type"] != ours["type"] || (ours[porch["type"].(string)] == nil) {
			t.Errorf("encoded %s, want the shape of %s", enc, tc.porch)
		}
	}
	if enc := string(Encode(&revision.Creation{Op: revision.CreatedByClone, Source: &revision.Key{Repository: "b", Package: "a/b", Workspace: "v1"}})); enc != `{"type":"clone","clone":{"upstreamRef":{"upstreamRef":{"name":"b.a.b.v1"}}}}` {
		t.Errorf("clone task %s", enc)
	}
}
