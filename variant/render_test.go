package variant_test

import (
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With a rendering engine the variant's functions run on the single
// commit, and a resync of the rendered result writes nothing.
func TestSyncWithRender(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		e, err := engine.New(&engine.Options{Repositories: v.repos, Pipeline: pipeline.NewKptfile(fnruntime.NewRegistry(nil), nil)})
		require.NoError(t, err)
		v.e = e
		v.publish("blueprints", "bucket", upstreamFiles())
		pv := newPV("pv")
		pv.Spec.Pipeline = &revision.Pipeline{Mutators: []revision.Function{{
			Image: "ghcr.io/kptdev/krm-functions-catalog/set-annotations:v0.1.4", Name: "ann", ConfigMap: map[string]string{"owner": "team-a"}}}}
		res, err := variant.Sync(v.ctx, e, pv, v.opts)
		require.NoError(t, err)
		assert.Contains(t, v.file(res.Key, "bucket.yaml"), "owner: team-a", "rendered in the same commit")
		kf := v.kptfile(res.Key)
		c, ok := kf.Condition(pipeline.ConditionRendered)
		require.True(t, ok)
		assert.Equal(t, revision.ConditionTrue, c.Status)

		before := v.version()
		res, err = variant.Sync(v.ctx, e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUnchanged, res.Action)
		v.approve(res.Key)
		res, err = variant.Sync(v.ctx, e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUnchanged, res.Action)
		_ = before

		// A render failure saves nothing.
		pv.Spec.Pipeline.Mutators[0].Image = "no-such-function:v1"
		before = v.version()
		opts := *v.opts
		opts.Attempts = 1
		res, err = variant.Sync(v.ctx, e, pv, &opts)
		require.Error(t, err)
		var re *pipeline.RenderError
		assert.ErrorAs(t, err, &re)
		assert.False(t, res.Ready())
		assert.Equal(t, before, v.version())
	})
}
