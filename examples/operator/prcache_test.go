package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
)

// TestShardedCaches: objects discovered by an operator without sharding
// (as an older version left them, with no shard label) are labelled by
// two sharded replicas, after which each replica caches exactly the
// PackageRevisions of the shards it holds: together every object once,
// none in the unlabelled cache. A label naming the wrong shard is put
// right, and a replica stopping hands its objects to the other.
func TestShardedCaches(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const shards, group = 8, "cad-cache-shards"
	var names []string
	for i := range 10 {
		name := fmt.Sprintf("site-%02d", i)
		names = append(names, name)
		publish(t, e.addRepository(name), name, "app", nil)
	}
	all := func() []porchv1alpha2.PackageRevision {
		var l porchv1alpha2.PackageRevisionList
		require.NoError(t, e.c.List(ctx, &l, client.InNamespace(e.ns)))
		return l.Items
	}
	// Each site's published revision and its placeholder.
	want := 2 * len(names)

	stop := e.run(Options{})
	require.Eventually(t, func() bool { return len(all()) == want }, 60*time.Second, 100*time.Millisecond)
	stop()
	key := shardLabel(shards)
	for _, pr := range all() {
		require.NotContains(t, pr.Labels, key, "an unsharded operator labelled %s", pr.Name)
	}

	opts := func(id string) Options {
		return Options{Shards: shards, LeaderElectionID: group, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
			RetryPeriod: time.Second, identity: id}
	}
	a, _ := e.runOperator(e.cfg, opts("a"))
	b, stopB := e.runOperator(e.cfg, opts("b"))
	labelled := func() bool {
		for _, pr := range all() {
			if pr.Labels[key] != strconv.Itoa(shardOf(repoKey(e.ns, pr.Spec.RepositoryName), shards)) {
				return false
			}
		}
		return true
	}
	require.Eventually(t, labelled, 60*time.Second, 100*time.Millisecond, "the objects were never labelled with their shard")

	// cached returns the objects in op's shard caches, and checks that
	// each is of a shard op holds and that the manager's cache has none.
	cached := func(op *operator) ([]string, bool) {
		var names []string
		held := op.shards.held()
		for _, c := range op.shards.caches.caches() {
			var l porchv1alpha2.PackageRevisionList
			require.NoError(t, c.List(ctx, &l))
			for _, pr := range l.Items {
				if !slices.Contains(held, shardOf(repoKey(pr.Namespace, pr.Spec.RepositoryName), shards)) {
					return nil, false
				}
				names = append(names, pr.Name)
			}
		}
		var un porchv1alpha2.PackageRevisionList
		require.NoError(t, op.mgr.GetCache().List(ctx, &un, client.InNamespace(e.ns)))
		return names, len(un.Items) == 0
	}
	shared := func(ops ...*operator) bool {
		var got []string
		for _, op := range ops {
			n, ok := cached(op)
			if !ok {
				return false
			}
			got = append(got, n...)
		}
		slices.Sort(got)
		var exp []string
		for _, pr := range all() {
			exp = append(exp, pr.Name)
		}
		slices.Sort(exp)
		return slices.Equal(got, exp)
	}
	require.Eventually(t, func() bool {
		ha, hb := a.shards.held(), b.shards.held()
		return len(ha) > 0 && len(hb) > 0 && len(ha)+len(hb) == shards && shared(a, b)
	}, 60*time.Second, 100*time.Millisecond, "the replicas' caches never split the objects by shard")

	// A wrong shard label, as a hand edit would leave it, naming a shard
	// of the other replica: the holder of the right shard does not see
	// the object, which the other puts right.
	pr := all()[0]
	right := pr.Labels[key]
	holder := func(i int) *operator {
		if slices.Contains(a.shards.held(), i) {
			return a
		}
		return b
	}
	r := shardOf(repoKey(e.ns, pr.Spec.RepositoryName), shards)
	w := (r + 1) % shards
	for holder(w) == holder(r) {
		w = (w + 1) % shards
	}
	wrong := strconv.Itoa(w)
	p := client.MergeFrom(pr.DeepCopy())
	pr.Labels[key] = wrong
	require.NoError(t, e.c.Patch(ctx, &pr, p))
	require.Eventually(t, labelled, 30*time.Second, 100*time.Millisecond, "the label of %s stayed %s (want %s)", pr.Name, wrong, right)

	// b stops (releasing its shards): a caches every object.
	stopB()
	require.Eventually(t, func() bool { return len(a.shards.held()) == shards && shared(a) }, 60*time.Second, 100*time.Millisecond,
		"a never cached b's objects")
}
