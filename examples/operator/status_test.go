package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/revision"
)

func TestSelfRef(t *testing.T) {
	cases := []struct {
		lc   revision.Lifecycle
		ws   string
		rev  int
		want string
	}{
		{revision.LifecycleDraft, "ws1", 0, "drafts/pkgs/net/istio/ws1"},
		{revision.LifecycleProposed, "ws1", 0, "proposed/pkgs/net/istio/ws1"},
		{revision.LifecyclePublished, "ws1", 3, "pkgs/net/istio/v3"},
		{revision.LifecycleDeletionProposed, "ws1", 3, "pkgs/net/istio/v3"},
		{revision.LifecyclePublished, "trunk", revision.Placeholder, "trunk"},
		// A tag not of the form v<N>: its own name.
		{revision.LifecyclePublished, "v2.0.0", revision.Placeholder, "pkgs/net/istio/v2.0.0"},
	}
	for _, c := range cases {
		k := revision.Key{Package: "net/istio", Workspace: c.ws, Revision: c.rev}
		require.Equal(t, c.want, selfRef(revision.Meta{Key: k, Lifecycle: c.lc}, "pkgs/net/istio", "trunk"))
	}
	k := revision.Key{Package: "x", Workspace: "main", Revision: revision.Placeholder}
	require.Equal(t, "main", selfRef(revision.Meta{Key: k, Lifecycle: revision.LifecyclePublished}, "x", ""))
}

func TestGatesAndConditions(t *testing.T) {
	g := func(types ...string) []porchv1alpha2.ReadinessGate {
		var out []porchv1alpha2.ReadinessGate
		for _, t := range types {
			out = append(out, porchv1alpha2.ReadinessGate{ConditionType: t})
		}
		return out
	}
	require.True(t, sameGates(g("a", "b"), g("b", "a", "a")))
	require.True(t, sameGates(nil, g()))
	require.False(t, sameGates(g("a"), g("a", "b")))

	have := []revision.Condition{{Type: "A", Status: revision.ConditionTrue}, {Type: "B", Status: revision.ConditionFalse}}
	got := changedConditions([]porchv1alpha2.PackageCondition{
		{Type: "A", Status: porchv1alpha2.ConditionTrue},                   // unchanged
		{Type: "B", Status: porchv1alpha2.ConditionTrue, Reason: "Passed"}, // changed
		{Type: "C", Status: porchv1alpha2.ConditionUnknown},                // new
	}, have)
	require.Equal(t, []revision.Condition{
		{Type: "B", Status: revision.ConditionTrue, Reason: "Passed"},
		{Type: "C", Status: revision.ConditionUnknown},
	}, got)
	require.Empty(t, changedConditions(nil, have), "a condition left out is not removed")
}
