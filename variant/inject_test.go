package variant_test

import (
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const injectionPoints = `apiVersion: v1
kind: ConfigMap
metadata:
  name: us-east1-endpoints
  annotations:
    kpt.dev/config-injection: required
data:
  foo: bar
---
apiVersion: hr.example.com/v1
kind: Team
metadata:
  name: team
  annotations:
    kpt.dev/config-injection: optional
spec:
  size: 1
`

func ptr[T any](v T) *T { return &v }

func gates(kf *revision.Kptfile) []string {
	var out []string
	if kf.Info != nil {
		for _, g := range kf.Info.ReadinessGates {
			out = append(out, g.ConditionType)
		}
	}
	return out
}

func TestInjection(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		files := upstreamFiles()
		files["points.yaml"] = injectionPoints
		v.publish("blueprints", "bucket", files)

		// No injectors: the points get False conditions and the required
		// one is a gate.
		pv := newPV("pv")
		res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		kf := v.kptfile(res.Key)
		assert.Equal(t, []string{"config.injection.ConfigMap.us-east1-endpoints"}, gates(kf))
		c, ok := kf.Condition("config.injection.ConfigMap.us-east1-endpoints")
		require.True(t, ok)
		assert.Equal(t, revision.ConditionFalse, c.Status)
		assert.Equal(t, variant.ReasonNoResourceSelected, c.Reason)
		assert.Equal(t, "no injectors defined", c.Message)
		c, _ = kf.Condition("config.injection.Team.team")
		assert.Equal(t, revision.ConditionFalse, c.Status)
		_, err = v.e.Propose(v.ctx, "deployments", res.Key)
		require.NoError(t, err)
		_, err = v.e.Approve(v.ctx, "deployments", res.Key)
		require.Error(t, err, "a required injection point is a readiness gate")
		_, err = v.e.Reject(v.ctx, "deployments", res.Key)
		require.NoError(t, err)

		// Objects arrive; the first matching injector wins.
		v.objs.Add(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "dev"}, "data": map[string]any{"endpoint": "dev.example"}})
		v.objs.Add(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "prod"}, "data": map[string]any{"endpoint": "prod.example"}})
		v.objs.Add(map[string]any{"apiVersion": "hr.example.com/v1", "kind": "Team", "metadata": map[string]any{"name": "blue"}, "spec": map[string]any{"size": int64(5)}})
		pv.Spec.Injectors = []variant.InjectionSelector{
			{Kind: ptr("Team"), Name: "dev"}, // applies to Teams only; no Team dev
			{Group: ptr(""), Kind: ptr("ConfigMap"), Name: "prod"},
			{Name: "dev"},
			{Group: ptr("hr.example.com"), Name: "blue"},
		}
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUpdated, res.Action)
		points := v.file(res.Key, "points.yaml")
		assert.Contains(t, points, "endpoint: prod.example")
		assert.NotContains(t, points, "foo: bar", "the data is replaced")
		assert.Contains(t, points, "kpt.dev/injected-resource: 'prod'")
		assert.Contains(t, points, "size: 5")
		kf = v.kptfile(res.Key)
		c, _ = kf.Condition("config.injection.ConfigMap.us-east1-endpoints")
		assert.Equal(t, revision.Condition{Type: "config.injection.ConfigMap.us-east1-endpoints", Status: revision.ConditionTrue,
			Reason: variant.ReasonConfigInjected, Message: `injected resource "prod" from cluster`}, c)
		c, _ = kf.Condition("config.injection.Team.team")
		assert.Equal(t, revision.ConditionTrue, c.Status)
		assert.Equal(t, []string{"config.injection.ConfigMap.us-east1-endpoints"}, gates(kf))
		v.approve(res.Key)

		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUnchanged, res.Action)

		// The injected object changes: the published downstream drifts.
		v.objs.Add(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "prod"}, "data": map[string]any{"endpoint": "prod2.example"}})
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionCopied, res.Action)
		assert.Contains(t, v.file(res.Key, "points.yaml"), "prod2.example")
	})
}

func TestInjectionBadPoints(t *testing.T) {
	v := newEnv(t, backends[0])
	files := upstreamFiles()
	files["points.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    kpt.dev/config-injection: sometimes\n"
	v.publish("blueprints", "bucket", files)
	before := v.version()
	opts := *v.opts
	opts.Attempts = 1
	res, err := variant.Sync(v.ctx, v.e, newPV("pv"), &opts)
	require.ErrorIs(t, err, repository.ErrInvalidInput)
	assert.Contains(t, err.Error(), `invalid "kpt.dev/config-injection" annotation value of "sometimes"`)
	assert.False(t, res.Ready())
	assert.Equal(t, before, v.version(), "a failed mutation writes nothing")
}

// A package without a Kptfile keeps its injection conditions and gates in
// cad's package file, and they hold its approval back as in a Kptfile.
func TestInjectionWithoutKptfile(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		k := revision.Key{Package: "bucket", Workspace: "ws"}
		_, err := v.e.Init(v.ctx, "blueprints", k, engine.InitOptions{NoKptfile: true})
		require.NoError(t, err)
		files := upstreamFiles()
		files["points.yaml"] = injectionPoints
		_, err = v.e.Update(v.ctx, "blueprints", k, revision.MustFiles(files), engine.UpdateOptions{})
		require.NoError(t, err)
		_, err = v.e.Propose(v.ctx, "blueprints", k)
		require.NoError(t, err)
		_, err = v.e.Approve(v.ctx, "blueprints", k)
		require.NoError(t, err)

		res, err := variant.Sync(v.ctx, v.e, newPV("pv"), v.opts)
		require.NoError(t, err)
		pr, err := v.e.Get(v.ctx, "deployments", res.Key)
		require.NoError(t, err)
		f, err := pr.Files(v.ctx)
		require.NoError(t, err)
		assert.False(t, f.Has(revision.KptfileName))
		info, err := pr.Info(v.ctx)
		require.NoError(t, err)
		require.Len(t, info.ReadinessGates, 1)
		assert.Equal(t, "config.injection.ConfigMap.us-east1-endpoints", info.ReadinessGates[0].ConditionType)
		assert.Len(t, info.Conditions, 2)
		_, err = v.e.Propose(v.ctx, "deployments", res.Key)
		require.NoError(t, err)
		_, err = v.e.Approve(v.ctx, "deployments", res.Key)
		assert.ErrorIs(t, err, engine.ErrNotReady)

		// Idempotent: a second sync writes nothing.
		res2, err := variant.Sync(v.ctx, v.e, newPV("pv"), v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUnchanged, res2.Action)
	})
}
