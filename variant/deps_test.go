package variant_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/deps"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
)

func depsPackage(name, spec string) string {
	return "apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

// condition returns the dependency condition of revision k, or nil.
func (v *env) depsCondition(k revision.Key) *revision.Condition {
	v.t.Helper()
	pr, err := v.e.Get(v.ctx, k.Repository, k)
	require.NoError(v.t, err)
	info, err := engine.Readiness(v.ctx, pr)
	require.NoError(v.t, err)
	for _, c := range info.Conditions {
		if c.Type == deps.ConditionType {
			return &c
		}
	}
	return nil
}

// TestSyncDependencies: a variant whose upstream requires a capability
// brings the provider into the deployment repository once, gates its
// downstream draft on the requirement, and lifts the gate on the sync
// after the provider is published.
func TestSyncDependencies(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b, "blueprints", "deployments", "catalog")
		files := upstreamFiles()
		files[revision.PackageFileName] = depsPackage("bucket", "  requires:\n  - capability: encryption\n")
		v.publish("blueprints", "bucket", files)
		v.publish("catalog", "kms", map[string]string{revision.PackageFileName: depsPackage("kms", "  provides:\n  - capability: encryption\n")})
		pv := newPV("pv")
		pv.Spec.Dependencies = &variant.Dependencies{ProviderRepos: []string{"catalog"}, Gate: true}

		res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionCreated, res.Action)
		provider := revision.Key{Repository: "deployments", Package: "kms", Workspace: "deps"}
		assert.Contains(t, res.Changes, variant.Change{Action: variant.ActionProviderCloned, Key: provider})
		c := v.depsCondition(res.Key)
		require.NotNil(t, c)
		assert.Equal(t, revision.ConditionFalse, c.Status)
		assert.Contains(t, c.Message, "encryption")

		// The gate holds the downstream back.
		_, err = v.e.Propose(v.ctx, "deployments", res.Key)
		require.NoError(t, err)
		_, err = v.e.Approve(v.ctx, "deployments", res.Key)
		var gates *engine.GatesError
		require.True(t, errors.As(err, &gates), "approve: %v", err)

		// A second sync clones nothing more and writes nothing.
		before := v.version()
		res2, err := variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUnchanged, res2.Action, "%v", res2.Changes)
		assert.Equal(t, before, v.version())
		assert.Len(t, v.revisions("deployments", "kms"), 1)

		// Once the provider is published, the next sync satisfies the gate.
		v.approve(provider)
		_, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		c = v.depsCondition(res.Key)
		require.NotNil(t, c)
		assert.Equal(t, revision.ConditionTrue, c.Status, c.Message)
		pr, err := v.e.Approve(v.ctx, "deployments", res.Key)
		require.NoError(t, err)
		assert.Equal(t, 1, pr.Meta().Key.Revision)

		// Deleting the variant leaves the provider: it is not the variant's.
		_, err = variant.Remove(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		_, err = v.e.Latest(v.ctx, "deployments", "kms")
		require.NoError(t, err)
	})
}

// TestSyncDependenciesBadInput: provider repositories are checked before
// anything is written, and one that does not exist fails the sync with
// nothing cloned.
func TestSyncDependenciesBadInput(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		files := upstreamFiles()
		files[revision.PackageFileName] = depsPackage("bucket", "  requires:\n  - capability: encryption\n")
		v.publish("blueprints", "bucket", files)
		for _, repos := range [][]string{{""}, {"blueprints", "blueprints"}} {
			pv := newPV("pv")
			pv.Spec.Dependencies = &variant.Dependencies{ProviderRepos: repos}
			before := v.version()
			_, err := variant.Sync(v.ctx, v.e, pv, v.opts)
			var verr *variant.ValidationError
			require.True(t, errors.As(err, &verr), "%v: %v", repos, err)
			assert.Equal(t, before, v.version())
		}
		pv := newPV("pv")
		pv.Spec.Dependencies = &variant.Dependencies{ProviderRepos: []string{"nowhere"}}
		_, err := variant.Sync(v.ctx, v.e, pv, v.opts)
		require.ErrorIs(t, err, repository.ErrNotFound)
		assert.Empty(t, v.revisions("deployments", "my-bucket"), "a draft was written before the sync failed")
	})
}

// TestSyncSetSharedProvider: the variants of a set, synced concurrently,
// all need the same provider; it is cloned into the deployment repository
// exactly once and every variant ends Ready.
func TestSyncSetSharedProvider(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b, "blueprints", "deployments", "catalog")
		files := upstreamFiles()
		files[revision.PackageFileName] = depsPackage("bucket", "  requires:\n  - capability: encryption\n")
		v.publish("blueprints", "bucket", files)
		v.publish("catalog", "kms", map[string]string{revision.PackageFileName: depsPackage("kms", "  provides:\n  - capability: encryption\n")})
		names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
		pvs := newSet("set", variant.Target{
			Repositories: []variant.RepositoryTarget{{Name: "deployments", PackageNames: names}},
			Template:     &variant.PackageVariantTemplate{Dependencies: &variant.Dependencies{ProviderRepos: []string{"catalog"}, Gate: true}},
		})
		opts := *v.opts
		opts.Concurrency = len(names)
		res, err := variant.SyncSet(v.ctx, v.e, pvs, &opts)
		require.NoError(t, err)
		require.True(t, res.Ready(), "%v", res.Results)
		require.Len(t, res.Results, len(names))
		assert.Len(t, v.revisions("deployments", "kms"), 1, "the shared provider was cloned more than once")
		for _, r := range res.Results {
			c := v.depsCondition(r.Key)
			require.NotNil(t, c, "%s has no dependency condition", r.Key)
			assert.Equal(t, revision.ConditionFalse, c.Status)
		}
	})
}
