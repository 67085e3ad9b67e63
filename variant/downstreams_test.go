package variant_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/variant"
)

// TestSyncSetDownstreams: with Options.Downstreams, SyncSet writes only
// the variants of the repositories it accepts, and neither writes nor
// removes the others; two passes that split the repositories between
// them make what one pass over all makes, and a target dropped from the
// set is removed by the pass that owns its repository only.
func TestSyncSetDownstreams(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b, "blueprints", "deployments", "other")
		v.publish("blueprints", "bucket", upstreamFiles())
		pvs := newSet("set", variant.Target{Repositories: []variant.RepositoryTarget{
			{Name: "deployments", PackageNames: []string{"a", "b"}}, {Name: "other"}}})
		only := func(repo string) *variant.Options {
			o := *v.opts
			o.Downstreams = func(r string) bool { return r == repo }
			return &o
		}

		res, err := variant.SyncSet(v.ctx, v.e, pvs, only("other"))
		require.NoError(t, err)
		require.True(t, res.Ready())
		require.Len(t, res.Variants, 1)
		assert.Equal(t, "set-other-bucket", res.Variants[0].Name)
		assert.Len(t, v.revisions("other", "bucket"), 1)
		assert.Empty(t, v.revisions("deployments", "a"), "a repository the pass does not own is not written")

		res, err = variant.SyncSet(v.ctx, v.e, pvs, only("deployments"))
		require.NoError(t, err)
		require.Len(t, res.Variants, 2)
		assert.Len(t, v.revisions("deployments", "a"), 1)
		assert.Len(t, v.revisions("deployments", "b"), 1)
		assert.Empty(t, res.Removed, "the other pass's variant is not stale to this one")
		assert.Len(t, v.revisions("other", "bucket"), 1)

		// Both passes together are one pass over everything: nothing left.
		res, err = variant.SyncSet(v.ctx, v.e, pvs, v.opts)
		require.NoError(t, err)
		for _, r := range res.Results {
			assert.Equal(t, variant.ActionUnchanged, r.Action, r.Variant)
		}

		// "other" dropped: the pass over deployments leaves its draft;
		// the pass over other removes it.
		pvs.Spec.Targets[0].Repositories = pvs.Spec.Targets[0].Repositories[:1]
		res, err = variant.SyncSet(v.ctx, v.e, pvs, only("deployments"))
		require.NoError(t, err)
		assert.Empty(t, res.Removed)
		assert.Len(t, v.revisions("other", "bucket"), 1)
		res, err = variant.SyncSet(v.ctx, v.e, pvs, only("other"))
		require.NoError(t, err)
		assert.Empty(t, res.Variants)
		assert.Len(t, res.Removed, 1)
		assert.Empty(t, v.revisions("other", "bucket"))

		// RemoveSet with a filter releases only what lies in its
		// repositories.
		_, err = variant.RemoveSet(v.ctx, v.e, pvs, only("other"))
		require.NoError(t, err)
		assert.Len(t, v.revisions("deployments", "a"), 1)
		_, err = variant.RemoveSet(v.ctx, v.e, pvs, only("deployments"))
		require.NoError(t, err)
		assert.Empty(t, v.revisions("deployments", "a"))
		assert.Empty(t, v.revisions("deployments", "b"))
	})
}
