package deps_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/deps"
	"github.com/configasdata/cad/revision"
)

func key(repo, pkg string, rev int) revision.Key {
	return revision.Key{Repository: repo, Package: pkg, Workspace: "ws", Revision: rev}
}

func capDep(c string) revision.Dependency { return revision.Dependency{Capability: c} }

func pkgReq(name string) revision.Dependency {
	return revision.Dependency{Package: &revision.PackageRef{Name: name}}
}

var certAPI = revision.APIRef{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

func TestResolveImplicitExplicitMissing(t *testing.T) {
	universe := []deps.Package{
		{Key: key("deploy", "cert-manager", 2), Dependencies: revision.Dependencies{Provides: []revision.Dependency{{API: &certAPI}}}},
		{Key: key("deploy", "external-dns", 1), Dependencies: revision.Dependencies{Provides: []revision.Dependency{capDep("dns")}}},
		{Key: key("deploy", "base", 3)},
	}
	web := deps.Package{Key: key("deploy", "web", 0), Dependencies: revision.Dependencies{Requires: []revision.Dependency{
		{API: &revision.APIRef{Group: "cert-manager.io", Kind: "Certificate"}}, // any version
		{Capability: "dns", Package: &revision.PackageRef{Name: "external-dns"}},
		{Package: &revision.PackageRef{Name: "base", Revision: ">=2"}},
		{Package: &revision.PackageRef{Name: "base", Revision: "<3"}},
		capDep("ingress"),
		{Capability: "dns", Package: &revision.PackageRef{Name: "base"}},
		{Package: &revision.PackageRef{Repository: "other", Name: "base"}},
	}}}
	res := deps.Resolve(web, universe)
	require.Len(t, res.Bindings, 7)
	b := res.Bindings
	assert.Equal(t, deps.Satisfied, b[0].Status)
	assert.False(t, b[0].Explicit)
	assert.Equal(t, key("deploy", "cert-manager", 2), b[0].Provider)
	assert.Equal(t, deps.Satisfied, b[1].Status)
	assert.True(t, b[1].Explicit)
	assert.Equal(t, "external-dns", b[1].Provider.Package)
	assert.Equal(t, deps.Satisfied, b[2].Status)
	assert.Equal(t, 3, b[2].Provider.Revision)
	assert.Equal(t, deps.Missing, b[3].Status)
	assert.Contains(t, b[3].Reason, "does not satisfy revision <3")
	assert.Equal(t, deps.Missing, b[4].Status)
	assert.Equal(t, "nothing provides it", b[4].Reason)
	assert.Equal(t, deps.Missing, b[5].Status, "pinned to a package that does not provide it")
	assert.Contains(t, b[5].Reason, "does not provide")
	assert.Equal(t, deps.Missing, b[6].Status)
	assert.Contains(t, b[6].Reason, "other:base")
	assert.Empty(t, res.Cycles)
	assert.False(t, res.Satisfied())
	assert.Len(t, res.Missing(), 4)

	c := res.Condition()
	assert.Equal(t, deps.ConditionType, c.Type)
	assert.Equal(t, revision.ConditionFalse, c.Status)
	assert.Equal(t, "Missing", c.Reason)
	assert.Contains(t, c.Message, "missing capability ingress: nothing provides it")

	s := res.String()
	assert.Contains(t, s, "Satisfied api cert-manager.io/*, Kind=Certificate (implicit): deploy:cert-manager@ws/v2")
	assert.Contains(t, s, "Missing   capability ingress (implicit): nothing provides it")
	assert.Contains(t, s, "not satisfied: 4 missing, 0 cycle(s)")
}

func TestResolveAmbiguousIsDeterministic(t *testing.T) {
	prov := revision.Dependencies{Provides: []revision.Dependency{capDep("ingress")}}
	universe := []deps.Package{
		{Key: key("shared", "a-ingress", 1), Dependencies: prov},
		{Key: key("deploy", "nginx", 1), Dependencies: prov},
		{Key: key("deploy", "contour", 4), Dependencies: prov},
		{Key: key("deploy", "broken", 1), Dependencies: prov, Err: assert.AnError},
	}
	app := deps.Package{Key: key("deploy", "app", 0), Dependencies: revision.Dependencies{Requires: []revision.Dependency{capDep("ingress")}}}
	for range 3 {
		res := deps.Resolve(app, universe)
		b := res.Bindings[0]
		assert.Equal(t, deps.Ambiguous, b.Status)
		assert.Equal(t, []revision.Key{key("deploy", "contour", 4), key("deploy", "nginx", 1), key("shared", "a-ingress", 1)}, b.Candidates,
			"own repository first, then by repository and package; a package that does not read provides nothing")
		assert.Equal(t, key("deploy", "contour", 4), b.Provider)
		assert.True(t, res.Satisfied(), "ambiguous counts as satisfied")
		assert.Len(t, res.Ambiguous(), 1)
		assert.Contains(t, res.String(), "chosen of")
		universe[0], universe[2] = universe[2], universe[0]
	}
}

func TestResolveSelfProvidesIsNoCycle(t *testing.T) {
	p := deps.Package{Key: key("d", "certs", 0), Dependencies: revision.Dependencies{
		Requires: []revision.Dependency{{API: &certAPI}},
		Provides: []revision.Dependency{{API: &certAPI}},
	}}
	other := deps.Package{Key: key("d", "other", 1), Dependencies: revision.Dependencies{Provides: []revision.Dependency{{API: &certAPI}}}}
	res := deps.Resolve(p, []deps.Package{other})
	assert.Equal(t, deps.Satisfied, res.Bindings[0].Status)
	assert.Equal(t, p.Key, res.Bindings[0].Provider)
	assert.Empty(t, res.Cycles)
	assert.True(t, res.Satisfied())
	assert.Equal(t, revision.ConditionTrue, res.Condition().Status)
}

func TestResolveSelfDependencyIsCycle(t *testing.T) {
	p := deps.Package{Key: key("d", "loop", 0), Dependencies: revision.Dependencies{Requires: []revision.Dependency{pkgReq("loop")}}}
	// An older published revision of the same package is replaced by p.
	res := deps.Resolve(p, []deps.Package{{Key: key("d", "loop", 1)}})
	require.Len(t, res.Cycles, 1)
	assert.Equal(t, []revision.Key{p.Key}, res.Cycles[0])
	assert.False(t, res.Satisfied())
	assert.Equal(t, "Cycle", res.Condition().Reason)
	assert.Contains(t, res.String(), "Cycle     d:loop -> d:loop")
}

func TestResolveCycles(t *testing.T) {
	// a -> b -> a (by package), and a -> c -> d -> e -> c (c by capability).
	universe := []deps.Package{
		{Key: key("d", "b", 1), Dependencies: revision.Dependencies{Requires: []revision.Dependency{pkgReq("a")}}},
		{Key: key("d", "c", 1), Dependencies: revision.Dependencies{Requires: []revision.Dependency{pkgReq("d")}, Provides: []revision.Dependency{capDep("cc")}}},
		{Key: key("d", "d", 1), Dependencies: revision.Dependencies{Requires: []revision.Dependency{capDep("ee")}}},
		{Key: key("d", "e", 1), Dependencies: revision.Dependencies{Requires: []revision.Dependency{pkgReq("c")}, Provides: []revision.Dependency{capDep("ee")}}},
		{Key: key("d", "x", 1), Dependencies: revision.Dependencies{Requires: []revision.Dependency{pkgReq("y")}}}, // not reachable
		{Key: key("d", "y", 1), Dependencies: revision.Dependencies{Requires: []revision.Dependency{pkgReq("x")}}},
	}
	a := deps.Package{Key: key("d", "a", 0), Dependencies: revision.Dependencies{Requires: []revision.Dependency{pkgReq("b"), capDep("cc")}}}
	res := deps.Resolve(a, universe)
	require.Len(t, res.Cycles, 2)
	assert.Equal(t, []revision.Key{key("d", "a", 0), key("d", "b", 1)}, res.Cycles[0])
	assert.Equal(t, []revision.Key{key("d", "c", 1), key("d", "d", 1), key("d", "e", 1)}, res.Cycles[1])
	assert.Contains(t, res.String(), "d:c -> d:d -> d:e -> d:c")
	assert.False(t, res.Satisfied())
	assert.Empty(t, res.Missing())

	// Without the back edge there is no cycle.
	universe[0].Dependencies.Requires = nil
	universe[3].Dependencies.Requires = nil
	res = deps.Resolve(a, universe)
	assert.Empty(t, res.Cycles)
	assert.True(t, res.Satisfied())
}

func TestResolveNothingRequired(t *testing.T) {
	res := deps.Resolve(deps.Package{Key: key("d", "p", 1)}, nil)
	assert.True(t, res.Satisfied())
	assert.Contains(t, res.String(), "requires nothing")
}
