package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	"github.com/configasdata/cad/deps"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

func packageFile(name, spec string) string {
	return "apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

// depsState reads, from git, whether the deployment repository has a
// draft of package mq, and the dependency condition of the app draft
// ("" when there is no draft or no condition yet), and whether the draft
// carries the dependency gate.
func depsState(t *testing.T, dir string) (provider bool, cond revision.ConditionStatus, gated bool) {
	t.Helper()
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, repository.Spec{Name: "deploy", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: dir}}, nil)
	if err != nil {
		return false, "", false // no branch yet
	}
	defer r.Close()
	revs, err := r.List(ctx, repository.ListOptions{})
	require.NoError(t, err)
	for _, pr := range revs {
		m := pr.Meta()
		switch {
		case m.Key.Package == "mq" && m.Lifecycle == revision.LifecycleDraft:
			provider = true
		case m.Key.Package == "app" && !m.Lifecycle.IsPublished():
			info, err := engine.Readiness(ctx, pr)
			require.NoError(t, err)
			for _, g := range info.ReadinessGates {
				gated = gated || g.ConditionType == deps.ConditionType
			}
			for _, c := range info.Conditions {
				if c.Type == deps.ConditionType {
					cond = c.Status
				}
			}
		}
	}
	return provider, cond, gated
}

// TestPackageVariantDependencies: a PackageVariant with spec.dependencies,
// on the real API server, clones the provider its upstream needs from the
// catalog into the deployment repository, gates the downstream draft on
// the requirement, and lifts the gate on a resync once the provider is
// published.
func TestPackageVariantDependencies(t *testing.T) {
	e := newEnv(t)
	deployDir := e.addRepository("deploy")
	catalogDir := e.addRepository("catalog")
	publish(t, e.gitDir, "blueprints", "app", map[string]string{
		revision.PackageFileName: packageFile("app", "  requires:\n  - capability: queue\n")})
	publish(t, catalogDir, "catalog", "mq", map[string]string{
		revision.PackageFileName: packageFile("mq", "  provides:\n  - capability: queue\n")})
	e.run(Options{})

	ctx := context.Background()
	pv := &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: e.ns},
		Spec: spec[configv1alpha1.PackageVariantSpec](t, `{"upstream":{"repo":"blueprints","package":"app"},
			"downstream":{"repo":"deploy","package":"app"},
			"dependencies":{"providerRepos":["catalog"],"gate":true}}`),
	}
	require.NoError(t, e.c.Create(ctx, pv))
	require.Eventually(t, func() bool {
		provider, cond, gated := depsState(t, deployDir)
		return provider && gated && cond == revision.ConditionFalse
	}, 60*time.Second, 200*time.Millisecond, "no provider draft, gate or False condition")

	// The provider is published by someone; the next resync lifts the gate.
	r, err := gitrepo.Open(ctx, repository.Spec{Name: "deploy", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: deployDir}}, nil)
	require.NoError(t, err)
	eng, err := engine.New(&engine.Options{Repositories: engine.Repos{"deploy": r}})
	require.NoError(t, err)
	mq := revision.Key{Repository: "deploy", Package: "mq", Workspace: "deps"}
	_, err = eng.Propose(ctx, "deploy", mq)
	require.NoError(t, err)
	_, err = eng.Approve(ctx, "deploy", mq)
	require.NoError(t, err)
	r.Close()
	require.Eventually(t, func() bool {
		_, cond, _ := depsState(t, deployDir)
		return cond == revision.ConditionTrue
	}, 60*time.Second, 200*time.Millisecond, "the condition never became True")
}
