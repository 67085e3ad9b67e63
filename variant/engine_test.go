package variant_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
)

// guarded is a variant.Engine that wraps an *engine.Engine, counts the
// clones and can refuse them, as an authorizing wrapper would.
type guarded struct {
	*engine.Engine
	mu     sync.Mutex
	clones int
	refuse bool
}

func (g *guarded) Clone(ctx context.Context, repo string, key revision.Key, src engine.CloneSource, opts engine.CloneOptions) (revision.PackageRevision, error) {
	g.mu.Lock()
	g.clones++
	refuse := g.refuse
	g.mu.Unlock()
	if refuse {
		return nil, &repository.Error{Op: "clone", Key: key, Err: repository.ErrInvalidInput}
	}
	return g.Engine.Clone(ctx, repo, key, src, opts)
}

// TestSyncOverWrappedEngine: Sync runs over any variant.Engine, not only
// the concrete engine: a wrapper sees the sync's calls, and its refusal
// fails the sync and writes nothing.
func TestSyncOverWrappedEngine(t *testing.T) {
	v := newEnv(t, backends[0])
	v.publish("blueprints", "bucket", upstreamFiles())

	g := &guarded{Engine: v.e, refuse: true}
	before := v.version()
	_, err := variant.Sync(v.ctx, g, newPV("pv"), v.opts)
	require.Error(t, err)
	assert.True(t, errors.Is(err, repository.ErrInvalidInput), "%v", err)
	assert.Equal(t, before, v.version(), "a refused clone writes nothing")

	g.refuse = false
	res, err := variant.Sync(v.ctx, g, newPV("pv"), v.opts)
	require.NoError(t, err)
	assert.Equal(t, variant.ActionCreated, res.Action)
	assert.Equal(t, 2, g.clones, "the sync cloned through the wrapper")
}
