package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
)

// TestPackageVariantSetSharded: with two sharded replicas, a
// PackageVariantSet over twelve repositories is written by the replica
// holding each downstream repository. Replica b is stopped keeping its
// Leases (as a killed one would): while they stand, a writes the
// downstreams of its own repositories and none of b's; once a takes b's
// shards over, it writes the rest, one draft each, and the set is Ready.
func TestPackageVariantSetSharded(t *testing.T) {
	e := newEnv(t)
	publish(t, e.gitDir, "blueprints", "base", nil)
	const shards, group, lease = 8, "cad-pvs-shards", 30 * time.Second
	dirs := map[string]string{}
	var names []string
	for i := range 12 {
		name := fmt.Sprintf("site-%02d", i)
		names = append(names, name)
		dirs[name] = e.addRepository(name)
	}
	opts := func(id string, keep bool) Options {
		return Options{Shards: shards, LeaderElectionID: group, LeaseDuration: lease, RenewDeadline: 10 * time.Second,
			RetryPeriod: time.Second, identity: id, keepLeaseOnStop: keep}
	}
	e.run(opts("a", false))
	stopB := e.run(opts("b", true))
	var holders []string
	require.Eventually(t, func() bool {
		holders = e.shardHolders(group, shards)
		var a, b int
		for _, h := range holders {
			switch h {
			case "a":
				a++
			case "b":
				b++
			}
		}
		return a > 0 && b > 0 && a+b == shards
	}, 90*time.Second, 200*time.Millisecond, "the shards were never shared")
	holderOfRepo := func(name string) string { return holders[shardOf(repoKey(e.ns, name), shards)] }
	var aRepos, bRepos []string
	for _, n := range names {
		if holderOfRepo(n) == "a" {
			aRepos = append(aRepos, n)
		} else {
			bRepos = append(bRepos, n)
		}
	}
	require.NotEmpty(t, aRepos, "holders %v", holders)
	require.NotEmpty(t, bRepos, "holders %v", holders)
	// The set's own shard is a's, so that its status is written while b
	// is gone.
	set := ""
	for i := 0; set == ""; i++ {
		if n := fmt.Sprintf("fleet-%d", i); holderOfRepo(n) == "a" {
			set = n
		}
	}

	stopB()
	stopped := time.Now()
	ctx := context.Background()
	var targets []string
	for _, n := range names {
		targets = append(targets, fmt.Sprintf(`{"name":%q}`, n))
	}
	require.NoError(t, e.c.Create(ctx, &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: e.ns},
		Spec: spec[configv1alpha2.PackageVariantSetSpec](t, `{"upstream":{"repo":"blueprints","package":"base"},
			"targets":[{"repositories":[`+strings.Join(targets, ",")+`]}]}`),
	}))
	written := func(repos []string) bool {
		for _, n := range repos {
			if len(downstreams(t, dirs[n], n)["base"]) == 0 {
				return false
			}
		}
		return true
	}
	// a's writes have more than a Lease: on a loaded machine they may
	// take longer, and then b's Leases lapse and b's repositories are
	// not checked below (the check needs b's Leases standing).
	require.Eventually(t, func() bool { return written(aRepos) }, 3*lease, 100*time.Millisecond, "a's downstreams %v", aRepos)
	if since := time.Since(stopped); since < lease-2*time.Second {
		for _, n := range bRepos {
			require.Empty(t, downstreams(t, dirs[n], n), "%s, b's, written while b's Lease stood (%s after b stopped)", n, since)
		}
	} else {
		t.Logf("a's writes took %s: b's Leases may have lapsed, its repositories not checked", since)
	}

	require.Eventually(t, func() bool { return written(names) }, 3*lease, 200*time.Millisecond, "every downstream once b's shards moved")
	for _, n := range names {
		require.Len(t, downstreams(t, dirs[n], n)["base"], 1, n)
	}
	require.Eventually(t, func() bool {
		var got configv1alpha2.PackageVariantSet
		return e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: set}, &got) == nil &&
			condition(got.Status.Conditions, "Ready") == "True"
	}, 30*time.Second, 200*time.Millisecond, "the set never became Ready")
}

// TestEnterHeldEndsOnHandover: a set's sync enters every shard of its
// namespace that the replica holds; when one of them is to go to a
// joining replica, the sync's context ends (within a retry period), so
// that the shard is handed over without waiting for the whole sync.
func TestEnterHeldEndsOnHandover(t *testing.T) {
	m := newSim(t, 8)
	a := m.add("a")
	m.settle(time.Minute)
	var stay, move string
	for i := 0; stay == "" || move == ""; i++ {
		name := fmt.Sprintf("r%d", i)
		if choose(shardOf(repoKey("ns", name), 8), []string{"a", "b"}) == "b" {
			move = name
		} else {
			stay = name
		}
	}
	ctx, owned, done := a.s.enterHeld(context.Background(), "ns", []string{repoKey("ns", stay), repoKey("ns", move)})
	require.True(t, owned(stay))
	require.True(t, owned(move))
	require.NoError(t, ctx.Err())

	b := m.add("b")
	for range 100 {
		m.step(100 * time.Millisecond)
	}
	require.False(t, a.s.owns(repoKey("ns", move)), "a gives up the shard")
	select {
	case <-ctx.Done():
	case <-time.After(3 * simRetry):
		t.Fatal("the sync's context did not end when a shard it entered was to be handed over")
	}
	done()
	m.settle(time.Minute)
	require.Contains(t, b.s.held(), shardOf(repoKey("ns", move), 8))

	// Without sharding everything is owned and nothing ends.
	var none *sharder
	ctx, owned, done = none.enterHeld(context.Background(), "ns", nil)
	defer done()
	require.True(t, owned("anything"))
	require.NoError(t, ctx.Err())
}
