package engine_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/deps"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

const certCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: certificates.cert-manager.io
spec:
  group: cert-manager.io
  names: {kind: Certificate, plural: certificates}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
`

func depsPackageFile(name, spec string) string {
	return "apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

// depsEnv is a deployment repository "deploy" and the other repositories
// named, each in a bare git repository on disk, and an engine over them.
func depsEnv(t *testing.T, others ...string) *engine.Engine {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	repos := engine.Repos{}
	dir := t.TempDir()
	for _, name := range append([]string{"deploy"}, others...) {
		bare := filepath.Join(dir, name+".git")
		if out, err := exec.Command("git", "init", "--quiet", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		r, err := gitrepo.Open(context.Background(), repository.Spec{Name: name, Type: repository.TypeGit, Deployment: name == "deploy",
			Git: &repository.GitSpec{Repo: bare, CreateBranch: true}}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { r.Close() })
		repos[name] = r
	}
	e, err := engine.New(&engine.Options{Repositories: repos})
	require.NoError(t, err)
	return e
}

// depsDraft creates package pkg's draft ws in deploy with extra files.
func depsDraft(t *testing.T, e *engine.Engine, pkg, ws string, extra map[string]string) (revision.PackageRevision, error) {
	t.Helper()
	return depsDraftIn(t, e, "deploy", pkg, ws, extra)
}

func depsDraftIn(t *testing.T, e *engine.Engine, repo, pkg, ws string, extra map[string]string) (revision.PackageRevision, error) {
	t.Helper()
	return e.Init(context.Background(), repo, revision.Key{Package: pkg, Workspace: ws}, engine.InitOptions{
		Mutate: func(_ context.Context, f revision.Files) (revision.Files, error) {
			for p, c := range extra {
				var err error
				if f, err = f.With(p, []byte(c)); err != nil {
					return f, err
				}
			}
			return f, nil
		}})
}

func depsPublish(t *testing.T, e *engine.Engine, pkg string, extra map[string]string) revision.PackageRevision {
	t.Helper()
	return depsPublishIn(t, e, "deploy", pkg, "v1", extra)
}

func depsPublishIn(t *testing.T, e *engine.Engine, repo, pkg, ws string, extra map[string]string) revision.PackageRevision {
	t.Helper()
	ctx := context.Background()
	_, err := depsDraftIn(t, e, repo, pkg, ws, extra)
	require.NoError(t, err)
	key := revision.Key{Package: pkg, Workspace: ws}
	_, err = e.Propose(ctx, repo, key)
	require.NoError(t, err)
	pub, err := e.Approve(ctx, repo, key)
	require.NoError(t, err)
	return pub
}

func TestDependenciesGitE2E(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := depsEnv(t)

	web := revision.Key{Package: "web", Workspace: "v1"}
	_, err := depsDraft(t, e, "web", "v1", map[string]string{revision.PackageFileName: depsPackageFile("web",
		"  requires:\n  - api: {group: cert-manager.io, kind: Certificate}\n  - package: {name: base, revision: \">=1\"}\n  provides:\n  - capability: web\n")})
	require.NoError(t, err)

	res, err := e.Dependencies(ctx, "deploy", web, nil)
	require.NoError(t, err)
	require.Len(t, res.Bindings, 2)
	assert.Len(t, res.Missing(), 2)

	// Enforcement on: the condition is False and the gate is added.
	res, checked, err := e.CheckDependencies(ctx, "deploy", web, &engine.DependenciesOptions{Gate: true})
	require.NoError(t, err)
	assert.False(t, res.Satisfied())
	ready, err := engine.Readiness(ctx, checked)
	require.NoError(t, err)
	assert.Contains(t, ready.ReadinessGates, revision.ReadinessGate{ConditionType: deps.ConditionType})
	assert.Contains(t, ready.Unsatisfied(), deps.ConditionType)
	_, err = e.Propose(ctx, "deploy", web)
	require.NoError(t, err)
	_, err = e.Approve(ctx, "deploy", web)
	var gates *engine.GatesError
	require.ErrorAs(t, err, &gates)
	assert.Equal(t, []string{deps.ConditionType}, gates.Gates)

	// The providers get published: a CRD provides the API, base is a
	// package. Only one of them: still blocked.
	depsPublish(t, e, "cert-manager", map[string]string{"crd.yaml": certCRD})
	res, _, err = e.CheckDependencies(ctx, "deploy", web, nil)
	require.NoError(t, err)
	require.Len(t, res.Missing(), 1)
	assert.Equal(t, "cert-manager", res.Bindings[0].Provider.Package)
	_, err = e.Approve(ctx, "deploy", web)
	require.ErrorIs(t, err, engine.ErrNotReady)

	depsPublish(t, e, "base", nil)
	res, proposed, err := e.CheckDependencies(ctx, "deploy", web, nil)
	require.NoError(t, err)
	require.True(t, res.Satisfied(), res.String())
	assert.Equal(t, 1, res.Bindings[1].Provider.Revision)
	again, _, err := e.CheckDependencies(ctx, "deploy", web, nil)
	require.NoError(t, err)
	assert.True(t, again.Satisfied())
	pub, err := e.Approve(ctx, "deploy", web)
	require.NoError(t, err, "approved once the providers are published")
	ready, err = engine.Readiness(ctx, pub)
	require.NoError(t, err)
	assert.Empty(t, ready.Unsatisfied())
	assert.NotEqual(t, proposed.Meta().Version, "")

	// A published revision's readiness is frozen.
	_, _, err = e.CheckDependencies(ctx, "deploy", revision.Key{Package: "web", Revision: 1}, nil)
	assert.ErrorIs(t, err, repository.ErrImmutable)

	// A draft requiring a published package, which requires a
	// capability only the draft provides: a cycle.
	depsPublish(t, e, "loop", map[string]string{revision.PackageFileName: depsPackageFile("loop",
		"  requires:\n  - capability: shopping\n")})
	_, err = depsDraft(t, e, "shop", "v1", map[string]string{revision.PackageFileName: depsPackageFile("shop",
		"  requires:\n  - package: {name: loop}\n  provides:\n  - capability: shopping\n")})
	require.NoError(t, err)
	res, err = e.Dependencies(ctx, "deploy", revision.Key{Package: "shop", Workspace: "v1"}, nil)
	require.NoError(t, err)
	require.Len(t, res.Cycles, 1, res.String())
	assert.Contains(t, res.String(), "deploy:shop -> deploy:loop -> deploy:shop")
	assert.Equal(t, "Cycle", res.Condition().Reason)
}

func TestDependenciesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := depsEnv(t)
	_, err := e.Dependencies(ctx, "deploy", revision.Key{Package: "nope", Workspace: "x"}, nil)
	assert.ErrorIs(t, err, repository.ErrNotFound)
	_, err = e.Dependencies(ctx, "nowhere", revision.Key{Package: "p", Workspace: "x"}, nil)
	assert.ErrorIs(t, err, repository.ErrNotFound)

	_, err = depsDraft(t, e, "app", "v1", map[string]string{revision.PackageFileName: depsPackageFile("app", "  requires:\n  - package: {}\n")})
	if err == nil {
		// The engine took the file: resolution refuses it, writing nothing.
		key := revision.Key{Package: "app", Workspace: "v1"}
		before, gerr := e.Get(ctx, "deploy", key)
		require.NoError(t, gerr)
		_, err = e.Dependencies(ctx, "deploy", key, nil)
		assert.ErrorIs(t, err, repository.ErrInvalidInput)
		var de *revision.DependencyError
		assert.ErrorAs(t, err, &de)
		_, _, err = e.CheckDependencies(ctx, "deploy", key, &engine.DependenciesOptions{Gate: true})
		assert.ErrorIs(t, err, repository.ErrInvalidInput)
		after, gerr := e.Get(ctx, "deploy", key)
		require.NoError(t, gerr)
		assert.Equal(t, before.Meta().Version, after.Meta().Version, "nothing written")
	} else {
		assert.ErrorIs(t, err, repository.ErrInvalidInput)
	}

	// A named repository that does not exist.
	_, err = depsDraft(t, e, "app2", "v1", map[string]string{revision.PackageFileName: depsPackageFile("app2",
		"  requires:\n  - package: {repository: elsewhere, name: base}\n")})
	require.NoError(t, err)
	_, err = e.Dependencies(ctx, "deploy", revision.Key{Package: "app2", Workspace: "v1"}, nil)
	assert.ErrorIs(t, err, repository.ErrNotFound)
	// Searching only the deployment repository reports it missing instead.
	res, err := e.Dependencies(ctx, "deploy", revision.Key{Package: "app2", Workspace: "v1"}, &engine.DependenciesOptions{Repositories: []string{"deploy"}})
	require.NoError(t, err)
	assert.Len(t, res.Missing(), 1)
}

func TestCloneProvidersGitE2E(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := depsEnv(t, "blueprints", "catalog")

	// The catalog has an older cert-manager and an ingress; blueprints a
	// newer cert-manager and base.
	depsPublishIn(t, e, "catalog", "cert-manager", "v1", map[string]string{"crd.yaml": certCRD})
	depsPublishIn(t, e, "catalog", "ingress", "v1", map[string]string{revision.PackageFileName: depsPackageFile("ingress", "  provides:\n  - capability: ingress\n")})
	depsPublishIn(t, e, "blueprints", "cert-manager", "v1", map[string]string{"crd.yaml": certCRD})
	depsPublishIn(t, e, "blueprints", "base", "v1", nil)
	depsPublish(t, e, "present", map[string]string{revision.PackageFileName: depsPackageFile("present", "  provides:\n  - capability: present\n")})

	web := revision.Key{Package: "web", Workspace: "v1"}
	_, err := depsDraft(t, e, "web", "v1", map[string]string{revision.PackageFileName: depsPackageFile("web",
		"  requires:\n  - api: {group: cert-manager.io, version: v1, kind: Certificate}\n  - package: {name: base}\n"+
			"  - capability: present\n  - capability: nowhere\n  - package: {name: base, revision: \">=1\"}\n")})
	require.NoError(t, err)

	_, _, err = e.CloneProviders(ctx, "deploy", web, nil)
	assert.ErrorIs(t, err, repository.ErrInvalidInput)
	_, _, err = e.CloneProviders(ctx, "deploy", web, &engine.CloneProvidersOptions{Sources: []string{"nowhere"}})
	assert.ErrorIs(t, err, repository.ErrNotFound)

	drafts, res, err := e.CloneProviders(ctx, "deploy", web, &engine.CloneProvidersOptions{Sources: []string{"blueprints", "catalog"}})
	require.NoError(t, err)
	assert.Len(t, res.Missing(), 4)
	require.Len(t, drafts, 2, "base once, though two requirements name it")
	assert.Equal(t, revision.Key{Repository: "deploy", Package: "cert-manager", Workspace: "deps"}, drafts[0].Meta().Key)
	assert.Equal(t, "base", drafts[1].Meta().Key.Package)
	info, err := drafts[0].Info(ctx)
	require.NoError(t, err)
	require.NotNil(t, info.UpstreamLock)
	assert.True(t, strings.HasSuffix(info.UpstreamLock.Git.Repo, "/blueprints.git"), "cloned from the first source, recorded by its URL: %s", info.UpstreamLock.Git.Repo)

	// The drafts count once published.
	for _, d := range drafts {
		_, err := e.Propose(ctx, "deploy", d.Meta().Key)
		require.NoError(t, err)
		_, err = e.Approve(ctx, "deploy", d.Meta().Key)
		require.NoError(t, err)
	}
	res, err = e.Dependencies(ctx, "deploy", web, nil)
	require.NoError(t, err)
	require.Len(t, res.Missing(), 1, res.String())
	assert.Equal(t, "capability nowhere", res.Missing()[0].Requirement.String())

	// Nothing more to bring in: the rest exists or nothing provides it.
	drafts, _, err = e.CloneProviders(ctx, "deploy", web, &engine.CloneProvidersOptions{Sources: []string{"blueprints", "catalog"}})
	require.NoError(t, err)
	assert.Empty(t, drafts)
}

// TestApproveRechecksDependencies: Approve resolves the requirements of a
// revision carrying the dependency gate again, so a stale False does not
// block a revision whose providers were published since, and a stale True
// does not let through one whose provider was deleted since.
func TestApproveRechecksDependencies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := depsEnv(t)
	requires := depsPackageFile("app", "  requires:\n  - capability: queue\n")
	provider := map[string]string{revision.PackageFileName: depsPackageFile("mq", "  provides:\n  - capability: queue\n")}

	// Gated while nothing provides the queue: False is recorded.
	stale := revision.Key{Package: "app", Workspace: "v1"}
	_, err := depsDraft(t, e, "app", "v1", map[string]string{revision.PackageFileName: requires})
	require.NoError(t, err)
	res, _, err := e.CheckDependencies(ctx, "deploy", stale, &engine.DependenciesOptions{Gate: true})
	require.NoError(t, err)
	require.False(t, res.Satisfied())
	_, err = e.Propose(ctx, "deploy", stale)
	require.NoError(t, err)
	_, err = e.Approve(ctx, "deploy", stale)
	require.ErrorIs(t, err, engine.ErrNotReady, "nothing provides the queue yet")

	// The provider is published; nobody checks again; Approve does.
	mq := depsPublish(t, e, "mq", provider)
	pub, err := e.Approve(ctx, "deploy", stale)
	require.NoError(t, err, "the provider is published, so the gate is satisfied")
	ready, err := engine.Readiness(ctx, pub)
	require.NoError(t, err)
	assert.Empty(t, ready.Unsatisfied())

	// A second package checked True while mq existed, then mq is deleted:
	// the stale True does not let it through.
	next := revision.Key{Package: "app2", Workspace: "v1"}
	_, err = depsDraft(t, e, "app2", "v1", map[string]string{revision.PackageFileName: depsPackageFile("app2", "  requires:\n  - capability: queue\n")})
	require.NoError(t, err)
	res, _, err = e.CheckDependencies(ctx, "deploy", next, &engine.DependenciesOptions{Gate: true})
	require.NoError(t, err)
	require.True(t, res.Satisfied())
	_, err = e.Propose(ctx, "deploy", next)
	require.NoError(t, err)
	_, err = e.ProposeDelete(ctx, "deploy", mq.Meta().Key)
	require.NoError(t, err)
	require.NoError(t, e.Delete(ctx, "deploy", mq.Meta().Key))
	_, err = e.Approve(ctx, "deploy", next)
	var gates *engine.GatesError
	require.ErrorAs(t, err, &gates, "the provider is gone")
	assert.Equal(t, []string{deps.ConditionType}, gates.Gates)
	pr, err := e.Get(ctx, "deploy", next)
	require.NoError(t, err)
	ready, err = engine.Readiness(ctx, pr)
	require.NoError(t, err)
	assert.Contains(t, ready.Unsatisfied(), deps.ConditionType, "the fresh False is recorded on the proposal")
}
