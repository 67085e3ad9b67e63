package variant_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newSet(name string, targets ...variant.Target) *variant.PackageVariantSet {
	return &variant.PackageVariantSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: variant.PackageVariantSetAPIVersion, Kind: variant.PackageVariantSetKind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       variant.PackageVariantSetSpec{Upstream: &variant.Upstream{Repo: "blueprints", Package: "bucket"}, Targets: targets},
	}
}

func TestSyncSetRepositories(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b, "blueprints", "deployments", "other")
		v.publish("blueprints", "bucket", upstreamFiles())
		tmpl := &variant.PackageVariantTemplate{
			Downstream:  &variant.DownstreamTemplate{PackageExpr: ptr("packageDefault + '-' + repoDefault")},
			LabelExprs:  []variant.MapExpr{{Key: ptr("pkg"), ValueExpr: ptr("target.package")}},
			Annotations: map[string]string{"static": "yes"},
			PackageContext: &variant.PackageContextTemplate{
				DataExprs: []variant.MapExpr{{KeyExpr: ptr("'repo'"), ValueExpr: ptr("repository.name")}, {Key: ptr("up"), ValueExpr: ptr("upstream.name")}},
			},
			Pipeline: &variant.PipelineTemplate{Mutators: []variant.FunctionTemplate{{
				Function:       revision.Function{Image: "set-labels:v0.1", Name: "labels", ConfigMap: map[string]string{"a": "b"}},
				ConfigMapExprs: []variant.MapExpr{{Key: ptr("site"), ValueExpr: ptr("target.repo.upperAscii()")}},
			}}},
			Injectors:    []variant.InjectionSelectorTemplate{{NameExpr: ptr("repoDefault")}},
			Dependencies: &variant.Dependencies{Gate: true},
		}
		pvs := newSet("set", variant.Target{
			Repositories: []variant.RepositoryTarget{{Name: "deployments", PackageNames: []string{"a", "b"}}, {Name: "other"}},
			Template:     tmpl,
		})
		res, err := variant.SyncSet(v.ctx, v.e, pvs, v.opts)
		require.NoError(t, err)
		require.True(t, res.Ready())
		var names []string
		for _, pv := range res.Variants {
			names = append(names, pv.Name)
		}
		assert.Equal(t, []string{"set-deployments-a-deployments", "set-deployments-b-deployments", "set-other-bucket-other"}, names)
		for _, r := range res.Results {
			assert.Equal(t, variant.ActionCreated, r.Action)
		}
		pv := res.Variants[0]
		assert.Equal(t, 1, pv.Spec.Upstream.Revision, "the upstream is pinned")
		assert.Equal(t, map[string]string{"pkg": "a"}, pv.Spec.Labels)
		assert.Equal(t, map[string]string{"repo": "deployments", "up": "blueprints.bucket.ws1"}, pv.Spec.PackageContext.Data)
		assert.Equal(t, map[string]string{"a": "b", "site": "DEPLOYMENTS"}, pv.Spec.Pipeline.Mutators[0].ConfigMap)
		assert.Equal(t, "deployments", pv.Spec.Injectors[0].Name)
		assert.Equal(t, &variant.Dependencies{Gate: true}, pv.Spec.Dependencies)
		assert.Equal(t, "set", pv.Labels[variant.SetLabel])

		key := res.Results[0].Key
		assert.Equal(t, "a-deployments", key.Package)
		pr, err := v.e.Get(v.ctx, "deployments", key)
		require.NoError(t, err)
		assert.Equal(t, "set", pr.Meta().Metadata.Labels[variant.SetLabel])
		assert.Equal(t, "set-deployments-a-deployments", pr.Meta().Metadata.Annotations[variant.OwnerAnnotation])
		assert.Contains(t, v.file(key, "Kptfile"), "PackageVariant.set-deployments-a-deployments.labels.0")

		before := v.version()
		res, err = variant.SyncSet(v.ctx, v.e, pvs, v.opts)
		require.NoError(t, err)
		for _, r := range res.Results {
			assert.Equal(t, variant.ActionUnchanged, r.Action)
		}
		assert.Empty(t, res.Removed)
		assert.Equal(t, before, v.version())

		// b is dropped and orphaned by policy; the other repository's is
		// deleted.
		v.approve(res.Results[1].Key)
		pvs.Spec.Targets[0].Repositories = []variant.RepositoryTarget{{Name: "deployments", PackageNames: []string{"a"}}}
		res, err = variant.SyncSet(v.ctx, v.e, pvs, v.opts)
		require.NoError(t, err)
		require.Len(t, res.Removed, 2)
		assert.Equal(t, "set-deployments-b-deployments", res.Removed[0].Variant)
		assert.Equal(t, variant.ActionDeleted, res.Removed[0].Action)
		assert.Empty(t, v.revisions("other", "bucket-other"))
		b1 := v.revisions("deployments", "b-deployments")
		require.Len(t, b1, 1)
		assert.Equal(t, revision.LifecycleDeletionProposed, b1[0].Meta().Lifecycle)

		rm, err := variant.RemoveSet(v.ctx, v.e, pvs, v.opts)
		require.NoError(t, err)
		require.Len(t, rm.Removed, 1)
		assert.Empty(t, v.revisions("deployments", "a-deployments"))
	})
}

func TestSyncSetSelectors(t *testing.T) {
	v := newEnv(t, backends[0], "blueprints", "edge-1", "edge-2", "core")
	v.publish("blueprints", "bucket", upstreamFiles())
	v.opts.RepositorySpecs = []repository.Spec{
		{Name: "blueprints"},
		{Name: "edge-1", Labels: map[string]string{"tier": "edge", "region": "eu"}},
		{Name: "edge-2", Labels: map[string]string{"tier": "edge", "region": "us"}},
		{Name: "core", Labels: map[string]string{"tier": "core"}},
	}
	pvs := newSet("by-repo", variant.Target{
		RepositorySelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "edge"}},
		Template: &variant.PackageVariantTemplate{
			LabelExprs: []variant.MapExpr{{Key: ptr("region"), ValueExpr: ptr("repository.labels.region")}},
		},
	})
	res, err := variant.SyncSet(v.ctx, v.e, pvs, v.opts)
	require.NoError(t, err)
	require.Len(t, res.Variants, 2)
	assert.Equal(t, "by-repo-edge-1-bucket", res.Variants[0].Name)
	assert.Equal(t, "eu", res.Variants[0].Spec.Labels["region"])
	assert.Equal(t, "us", res.Variants[1].Spec.Labels["region"])

	v.objs.Add(map[string]any{"apiVersion": "infra.example.com/v1", "kind": "Cluster",
		"metadata": map[string]any{"name": "core", "labels": map[string]any{"env": "prod"}, "annotations": map[string]any{"pkg": "web"}}})
	v.objs.Add(map[string]any{"apiVersion": "infra.example.com/v1", "kind": "Cluster",
		"metadata": map[string]any{"name": "edge-2", "labels": map[string]any{"env": "dev"}}})
	byObj := newSet("by-obj", variant.Target{
		ObjectSelector: &variant.ObjectSelector{APIVersion: "infra.example.com/v1", Kind: "Cluster",
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
		Template: &variant.PackageVariantTemplate{
			Downstream: &variant.DownstreamTemplate{PackageExpr: ptr("target.annotations.pkg")},
		},
	})
	res, err = variant.SyncSet(v.ctx, v.e, byObj, v.opts)
	require.NoError(t, err)
	require.Len(t, res.Variants, 1)
	assert.Equal(t, variant.Downstream{Repo: "core", Package: "web"}, *res.Variants[0].Spec.Downstream)
	assert.Equal(t, variant.ActionCreated, res.Results[0].Action)
}

func TestSyncSetBadSpecs(t *testing.T) {
	v := newEnv(t, backends[0])
	v.publish("blueprints", "bucket", upstreamFiles())
	repos := []variant.RepositoryTarget{{Name: "deployments"}}
	for name, tc := range map[string]struct {
		pvs  *variant.PackageVariantSet
		want string
	}{
		"no targets":  {newSet("s"), "must specify at least one item in spec.targets"},
		"two kinds":   {newSet("s", variant.Target{Repositories: repos, RepositorySelector: &metav1.LabelSelector{}}), "must specify one of"},
		"bad expr":    {newSet("s", variant.Target{Repositories: repos, Template: &variant.PackageVariantTemplate{Downstream: &variant.DownstreamTemplate{PackageExpr: ptr("repoDefault +")}}}), "packageExpr"},
		"int expr":    {newSet("s", variant.Target{Repositories: repos, Template: &variant.PackageVariantTemplate{Downstream: &variant.DownstreamTemplate{PackageExpr: ptr("1 + 2")}}}), "want string"},
		"both fields": {newSet("s", variant.Target{Repositories: repos, Template: &variant.PackageVariantTemplate{Downstream: &variant.DownstreamTemplate{Package: ptr("a"), PackageExpr: ptr("'b'")}}}), "only one of"},
		"injector":    {newSet("s", variant.Target{Repositories: repos, Template: &variant.PackageVariantTemplate{Injectors: []variant.InjectionSelectorTemplate{{}}}}), "exactly one of `name` and `nameExpr`"},
		"object sel":  {newSet("s", variant.Target{ObjectSelector: &variant.ObjectSelector{}}), "objectSelector.apiVersion cannot be empty"},
	} {
		t.Run(name, func(t *testing.T) {
			before := v.version()
			res, err := variant.SyncSet(v.ctx, v.e, tc.pvs, v.opts)
			require.ErrorIs(t, err, repository.ErrInvalidInput)
			assert.Contains(t, err.Error(), tc.want)
			assert.False(t, res.Ready())
			assert.Equal(t, before, v.version())
		})
	}
	t.Run("runtime error", func(t *testing.T) {
		pvs := newSet("s", variant.Target{Repositories: repos, Template: &variant.PackageVariantTemplate{
			Downstream: &variant.DownstreamTemplate{PackageExpr: ptr("target.nope")}}})
		before := v.version()
		_, err := variant.SyncSet(v.ctx, v.e, pvs, v.opts)
		var xe *variant.ExprError
		require.ErrorAs(t, err, &xe)
		require.ErrorIs(t, err, repository.ErrInvalidInput)
		assert.Equal(t, before, v.version())
	})
	t.Run("cost limit", func(t *testing.T) {
		pvs := newSet("s", variant.Target{Repositories: repos, Template: &variant.PackageVariantTemplate{
			Downstream: &variant.DownstreamTemplate{PackageExpr: ptr("[1,2,3,4,5,6,7,8].map(a, [1,2,3,4,5,6,7,8].map(b, [1,2,3,4,5,6,7,8].map(c, a*b*c))).size() > 0 ? 'x' : 'y'")}}})
		opts := *v.opts
		opts.CostLimit = 100
		_, err := variant.SyncSet(v.ctx, v.e, pvs, &opts)
		require.ErrorIs(t, err, variant.ErrCostLimit)
	})
	t.Run("duplicate downstream", func(t *testing.T) {
		pvs := newSet("s", variant.Target{Repositories: repos}, variant.Target{Repositories: repos})
		_, err := variant.SyncSet(v.ctx, v.e, pvs, v.opts)
		require.ErrorIs(t, err, repository.ErrInvalidInput)
		assert.True(t, strings.Contains(err.Error(), "both yield"), err)
	})
	t.Run("unknown repository", func(t *testing.T) {
		pvs := newSet("s", variant.Target{Repositories: []variant.RepositoryTarget{{Name: "nowhere"}}})
		_, err := variant.SyncSet(v.ctx, v.e, pvs, v.opts)
		require.True(t, errors.Is(err, repository.ErrNotFound), err)
	})
}
