package variant_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/internal/yamlmemo"
	"github.com/configasdata/cad/variant"
)

// TestSyncChecksEachFileOnce: a sync that mutates its draft and saves it
// with Engine.Update parses each content for the YAML bounds once. Before,
// a file the mutation read (here one with an optional injection point
// and an anchor, so the byte scan does not pass it) was parsed by the
// variant's check and again by Update's.
func TestSyncChecksEachFileOnce(t *testing.T) {
	v := newEnv(t, backends[0])
	files := upstreamFiles()
	files["inject.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inject\n  annotations:\n    " +
		variant.InjectionAnnotation + ": optional\n  labels: &l {a: b}\ndata: *l\n"
	v.publish("blueprints", "bucket", files)
	pv := newPV("pv")
	pv.Spec.PackageContext = &variant.PackageContext{Data: map[string]string{"region": "eu"}}
	_, err := variant.Sync(v.ctx, v.e, pv, v.opts)
	require.NoError(t, err)

	pv.Spec.PackageContext.Data["zone"] = "a" // the draft drifts: mutate, then Update
	var c yamlmemo.Counter
	restore := yamlmemo.SetParseHook(c.Add)
	res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
	restore()
	require.NoError(t, err)
	assert.Equal(t, variant.ActionUpdated, res.Action)
	assert.Contains(t, v.file(res.Key, "package-context.yaml"), "zone: a")
	assert.Equal(t, 1, c.Of([]byte(v.file(res.Key, "inject.yaml"))), "parses of inject.yaml")
	assert.Equal(t, 1, c.Most(), "the most parses of one content")
}
