package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
	"github.com/configasdata/cad/examples/internal/variantfail"
)

// costlyExpr is a template over variant's CEL cost limit (one million):
// six nested maps over ten elements.
var costlyExpr = "string(size(" + strings.Repeat("[0,1,2,3,4,5,6,7,8,9].map(a, ", 6) + "a" + strings.Repeat(")", 6) + "))"

// syncCounter counts the syncs of each object of namespace ns.
type syncCounter struct {
	mu sync.Mutex
	ns string
	n  map[string]int
}

func (c *syncCounter) hook(req ctrl.Request) {
	if req.Namespace != c.ns {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[req.Name]++
}

func (c *syncCounter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

func (c *syncCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = map[string]int{}
}

// TestPackageVariantSetHeld: a PackageVariantSet whose template the CEL
// cost limit refuses is synced once and held (Stalled True, Ready False,
// reason LimitExceeded, at its generation); resyncs and published
// upstreams do not sync it again, nor does a new operator (a restart),
// while another set keeps being synced; an edit of its spec ends the hold.
func TestPackageVariantSetHeld(t *testing.T) {
	e := newEnv(t)
	deployDir := e.addRepository("deploy")
	publish(t, e.gitDir, "blueprints", "base", nil)
	ctx := context.Background()
	counter := &syncCounter{ns: e.ns, n: map[string]int{}}
	syncHook = counter.hook
	t.Cleanup(func() { syncHook = nil }) // after the operators stop (cleanups run last first)
	stop := e.run(Options{})

	set := func(name, tmpl string) *configv1alpha2.PackageVariantSet {
		return &configv1alpha2.PackageVariantSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
			Spec: spec[configv1alpha2.PackageVariantSetSpec](t, `{"upstream":{"repo":"blueprints","package":"base"},
				"targets":[{"repositories":[{"name":"deploy","packageNames":["`+name+`-a"]}]`+tmpl+`}]}`),
		}
	}
	bad := set("bad", `,"template":{"downstream":{"packageExpr":"`+costlyExpr+`"}}`)
	require.NoError(t, e.c.Create(ctx, bad))
	require.NoError(t, e.c.Create(ctx, set("good", "")))

	var got configv1alpha2.PackageVariantSet
	getSet := func(name string) *configv1alpha2.PackageVariantSet {
		require.NoError(t, e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &got))
		return &got
	}
	require.Eventually(t, func() bool {
		c := meta.FindStatusCondition(getSet("bad").Status.Conditions, "Stalled")
		return c != nil && c.Reason == variantfail.ReasonLimitExceeded
	}, 60*time.Second, 100*time.Millisecond, "the set was never held")
	stalled := meta.FindStatusCondition(got.Status.Conditions, "Stalled")
	require.Equal(t, metav1.ConditionTrue, stalled.Status)
	require.Equal(t, got.Generation, stalled.ObservedGeneration)
	require.LessOrEqual(t, len(stalled.Message), variantfail.MaxMessageBytes)
	require.Contains(t, stalled.Message, "cost limit")
	ready := meta.FindStatusCondition(got.Status.Conditions, "Ready")
	require.NotNil(t, ready)
	require.Equal(t, metav1.ConditionFalse, ready.Status)
	require.Equal(t, variantfail.ReasonLimitExceeded, ready.Reason)

	// The good set is synced and resynced (every Poll, 500 ms); the held
	// one is not, not even when an upstream is published.
	require.Eventually(t, func() bool {
		return meta.IsStatusConditionTrue(getSet("good").Status.Conditions, "Ready")
	}, 60*time.Second, 100*time.Millisecond, "the good set never became Ready")
	publish(t, e.gitDir, "blueprints", "other", nil)
	held := counter.get("bad")
	require.Eventually(t, func() bool { return counter.get("good") >= 4 }, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, held, counter.get("bad"), "the held set was synced again")
	// The first failed sync holds the set; when the write of its status
	// conflicted (a loaded machine), the retry's sync records it.
	require.GreaterOrEqual(t, held, 1, "syncs of the bad set before the hold")
	require.LessOrEqual(t, held, 2, "syncs of the bad set before the hold")

	// A new operator (a restart) keeps the hold.
	stop()
	counter.reset()
	e.run(Options{})
	require.Eventually(t, func() bool { return counter.get("good") >= 2 }, 30*time.Second, 50*time.Millisecond)
	require.Zero(t, counter.get("bad"), "the held set was synced after the restart")
	require.Equal(t, variantfail.ReasonLimitExceeded, variantfail.Held(getSet("bad").Status.Conditions, got.Generation))

	// An edit of the spec ends the hold.
	b := getSet("bad")
	b.Spec.Targets[0].Template = nil
	require.NoError(t, e.c.Update(ctx, b))
	require.Eventually(t, func() bool {
		return meta.IsStatusConditionTrue(getSet("bad").Status.Conditions, "Ready")
	}, 60*time.Second, 100*time.Millisecond, "the edited set never became Ready")
	require.False(t, meta.IsStatusConditionTrue(got.Status.Conditions, "Stalled"))
	require.NotEmpty(t, downstreams(t, deployDir, "deploy")["bad-a"])
}
