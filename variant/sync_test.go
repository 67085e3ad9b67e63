package variant_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const bucket = `apiVersion: storage.cnrm.cloud.google.com/v1beta1
kind: StorageBucket
metadata:
  name: bucket # the bucket
spec:
  storageClass: standard
`

const pkgContext = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kptfile.kpt.dev
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  name: example
`

func upstreamFiles() map[string]string {
	return map[string]string{"bucket.yaml": bucket, "package-context.yaml": pkgContext}
}

func newPV(name string) *variant.PackageVariant {
	return &variant.PackageVariant{
		TypeMeta:   metav1.TypeMeta{APIVersion: variant.PackageVariantAPIVersion, Kind: variant.PackageVariantKind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: variant.PackageVariantSpec{
			Upstream:   &variant.Upstream{Repo: "blueprints", Package: "bucket"},
			Downstream: &variant.Downstream{Repo: "deployments", Package: "my-bucket"},
		},
	}
}

func TestSyncCreatesAndIsIdempotent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		v.publish("blueprints", "bucket", upstreamFiles())
		pv := newPV("pv")
		pv.Spec.Labels = map[string]string{"env": "prod"}
		pv.Spec.Annotations = map[string]string{"team": "storage"}
		pv.Spec.PackageContext = &variant.PackageContext{Data: map[string]string{"region": "eu"}}
		pv.Spec.Pipeline = &revision.Pipeline{Mutators: []revision.Function{{Image: "set-labels:v0.1", Name: "labels", ConfigMap: map[string]string{"env": "prod"}}}}

		res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionCreated, res.Action)
		assert.True(t, res.Ready())
		want := revision.Key{Repository: "deployments", Package: "my-bucket", Workspace: "packagevariant-1"}
		assert.Equal(t, want, res.Key)

		kf := v.kptfile(res.Key)
		require.NotNil(t, kf.Pipeline)
		assert.Equal(t, "PackageVariant.pv.labels.0", kf.Pipeline.Mutators[0].Name)
		assert.Equal(t, "bucket/v1", kf.UpstreamLock.Git.Ref)
		assert.Contains(t, v.file(res.Key, "package-context.yaml"), "region: eu")

		pr, err := v.e.Get(v.ctx, "deployments", res.Key)
		require.NoError(t, err)
		md := pr.Meta().Metadata
		assert.Equal(t, "prod", md.Labels["env"])
		assert.Equal(t, "storage", md.Annotations["team"])
		assert.Equal(t, "pv", md.Annotations[variant.OwnerAnnotation])

		before := v.version()
		for range 2 {
			res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
			require.NoError(t, err)
			assert.Equal(t, variant.ActionUnchanged, res.Action)
			assert.Empty(t, res.Changes)
			assert.Equal(t, want, res.Key)
		}
		assert.Equal(t, before, v.version(), "an unchanged sync writes nothing")

		// Once published it stays unchanged too.
		pub := v.approve(res.Key)
		before = v.version()
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUnchanged, res.Action, "%v", res.Changes)
		assert.Equal(t, pub, res.Key)
		assert.Equal(t, before, v.version())
	})
}

// Nil Options mean the defaults, with the Engine's repositories.
func TestSyncNilOptions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		v.publish("blueprints", "bucket", upstreamFiles())
		res, err := variant.Sync(v.ctx, v.e, newPV("pv"), nil)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionCreated, res.Action)
		again, err := variant.Sync(v.ctx, v.e, newPV("pv"), nil)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUnchanged, again.Action)
	})
}

func TestSyncUpgradesWhenUpstreamMoves(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		v.publish("blueprints", "bucket", upstreamFiles())
		pv := newPV("pv")
		pv.Spec.PackageContext = &variant.PackageContext{Data: map[string]string{"region": "eu"}}
		res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		v.approve(res.Key)

		pinned := newPV("pinned")
		pinned.Spec.Downstream.Package = "pinned"
		pinned.Spec.Upstream.Revision = 1
		res, err = variant.Sync(v.ctx, v.e, pinned, v.opts)
		require.NoError(t, err)
		v.approve(res.Key)

		files := upstreamFiles()
		files["quota.yaml"] = "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: quota\n"
		v.publish("blueprints", "bucket", files)

		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUpgraded, res.Action)
		assert.Equal(t, "packagevariant-2", res.Key.Workspace)
		assert.Equal(t, "bucket/v2", v.kptfile(res.Key).UpstreamLock.Git.Ref)
		assert.Contains(t, v.file(res.Key, "quota.yaml"), "ResourceQuota")
		assert.Contains(t, v.file(res.Key, "package-context.yaml"), "region: eu", "mutations are applied to the upgrade")
		pr, err := v.e.Get(v.ctx, "deployments", res.Key)
		require.NoError(t, err)
		assert.Equal(t, "pv", pr.Meta().Metadata.Annotations[variant.OwnerAnnotation])

		// The upgrade draft is kept, not upgraded again.
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUnchanged, res.Action)

		// A pinned upstream does not move.
		res, err = variant.Sync(v.ctx, v.e, pinned, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUnchanged, res.Action)
		pinned.Spec.Upstream.Revision = 2
		res, err = variant.Sync(v.ctx, v.e, pinned, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUpgraded, res.Action)
	})
}

// A draft whose upstream moved is upgraded in place: the edits made to it
// survive, as with Porch's controller.
func TestSyncStaleDraftIsUpgradedInPlace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		v.publish("blueprints", "bucket", upstreamFiles())
		pv := newPV("pv")
		res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		first := res.Key
		// Someone edits the draft.
		pr, err := v.e.Get(v.ctx, "deployments", first)
		require.NoError(t, err)
		files, err := pr.Files(v.ctx)
		require.NoError(t, err)
		files, err = files.With("notes.txt", []byte("hand edit\n"))
		require.NoError(t, err)
		_, err = v.e.Update(v.ctx, "deployments", first, files, engine.UpdateOptions{})
		require.NoError(t, err)

		v.publish("blueprints", "bucket", upstreamFiles())
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUpgraded, res.Action)
		assert.Equal(t, first, res.Key)
		assert.Equal(t, "bucket/v2", v.kptfile(res.Key).UpstreamLock.Git.Ref)
		assert.Equal(t, "hand edit\n", v.file(res.Key, "notes.txt"))
		revs := v.revisions("deployments", "my-bucket")
		require.Len(t, revs, 1)
		// And it is in sync now.
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUnchanged, res.Action)
	})
}

func TestSyncCopiesWhenPublishedDrifts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		v.publish("blueprints", "bucket", upstreamFiles())
		pv := newPV("pv")
		pv.Spec.PackageContext = &variant.PackageContext{Data: map[string]string{"region": "eu"}}
		res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		// A draft drifts in place.
		pv.Spec.PackageContext.Data["zone"] = "a"
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUpdated, res.Action)
		assert.Equal(t, "packagevariant-1", res.Key.Workspace)
		assert.Contains(t, v.file(res.Key, "package-context.yaml"), "zone: a")
		v.approve(res.Key)

		// A published downstream gets a copy.
		pv.Spec.PackageContext = &variant.PackageContext{Data: map[string]string{"region": "us"}, RemoveKeys: []string{"zone"}}
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionCopied, res.Action)
		assert.Equal(t, "packagevariant-2", res.Key.Workspace)
		ctx := v.file(res.Key, "package-context.yaml")
		assert.Contains(t, ctx, "region: us")
		assert.NotContains(t, ctx, "zone")

		// Labels alone are metadata, written in place.
		pv.Spec.Labels = map[string]string{"tier": "gold"}
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUpdated, res.Action)
		pr, err := v.e.Get(v.ctx, "deployments", res.Key)
		require.NoError(t, err)
		assert.Equal(t, "gold", pr.Meta().Metadata.Labels["tier"])
	})
}

func TestSyncAdoption(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		v.publish("blueprints", "bucket", upstreamFiles())
		// Someone cloned the package by hand and published it.
		other := newPV("someone")
		_, err := variant.Sync(v.ctx, v.e, other, v.opts)
		require.NoError(t, err)
		revs := v.revisions("deployments", "my-bucket")
		require.Len(t, revs, 1)
		_, err = v.e.SetMetadata(v.ctx, "deployments", revs[0].Meta().Key, revision.Metadata{}, "")
		require.NoError(t, err)
		v.approve(revs[0].Meta().Key)

		pv := newPV("pv")
		pv.Spec.AdoptionPolicy = variant.AdoptNone
		before := v.version()
		opts := *v.opts
		opts.Attempts = 1
		res, err := variant.Sync(v.ctx, v.e, pv, &opts)
		require.ErrorIs(t, err, repository.ErrAlreadyExists, "adoptNone does not take over an existing package")
		assert.False(t, res.Ready())
		assert.Equal(t, before, v.version())

		pv.Spec.AdoptionPolicy = variant.AdoptExisting
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionAdopted, res.Action)
		assert.Equal(t, 1, res.Key.Revision)
		pr, err := v.e.Get(v.ctx, "deployments", res.Key)
		require.NoError(t, err)
		assert.Equal(t, "pv", pr.Meta().Metadata.Annotations[variant.OwnerAnnotation])

		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUnchanged, res.Action)
	})
}

func TestRemoveDeletionPolicies(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, policy := range []variant.DeletionPolicy{variant.DeletionPolicyDelete, variant.DeletionPolicyOrphan} {
			t.Run(string(policy), func(t *testing.T) {
				v := newEnv(t, b)
				v.publish("blueprints", "bucket", upstreamFiles())
				pv := newPV("pv")
				pv.Spec.DeletionPolicy = policy
				pv.Spec.PackageContext = &variant.PackageContext{Data: map[string]string{"a": "1"}}
				res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
				require.NoError(t, err)
				pub := v.approve(res.Key)
				pv.Spec.PackageContext.Data["a"] = "2"
				res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
				require.NoError(t, err)
				draft := res.Key

				now := metav1.Now()
				pv.DeletionTimestamp = &now
				res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
				require.NoError(t, err)
				revs := v.revisions("deployments", "my-bucket")
				switch policy {
				case variant.DeletionPolicyDelete:
					assert.Equal(t, variant.ActionDeleted, res.Action)
					require.Len(t, revs, 1, "the draft is deleted")
					assert.Equal(t, pub, revs[0].Meta().Key)
					assert.Equal(t, revision.LifecycleDeletionProposed, revs[0].Meta().Lifecycle)
				case variant.DeletionPolicyOrphan:
					assert.Equal(t, variant.ActionOrphaned, res.Action)
					require.Len(t, revs, 2)
					_ = draft
				}
				for _, pr := range revs {
					assert.Empty(t, pr.Meta().Metadata.Annotations[variant.OwnerAnnotation], "%s is released", pr.Meta().Key)
				}
				res, err = variant.Remove(v.ctx, v.e, pv, v.opts)
				require.NoError(t, err)
				assert.Equal(t, variant.ActionUnchanged, res.Action)
			})
		}
	})
}

func TestSyncDownstreamChangeCleansUp(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		v.publish("blueprints", "bucket", upstreamFiles())
		pv := newPV("pv")
		res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		pv.Status = res.Status()
		pv.Spec.Downstream.Package = "renamed"
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionCreated, res.Action)
		assert.Equal(t, []variant.Change{
			{Action: variant.ActionDeleted, Key: revision.Key{Repository: "deployments", Package: "my-bucket", Workspace: "packagevariant-1"}},
			{Action: variant.ActionCreated, Key: revision.Key{Repository: "deployments", Package: "renamed", Workspace: "packagevariant-1"}},
		}, res.Changes)
		assert.Empty(t, v.revisions("deployments", "my-bucket"))
		assert.Equal(t, "deployments.renamed.packagevariant-1", res.Status().DownstreamTargets[0].Name)
	})
}

func TestSyncFunctionOwnership(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		files := upstreamFiles()
		files["Kptfile"] = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: bucket
pipeline:
  mutators:
  - image: set-namespace:v0.4
    name: user
    configMap:
      namespace: ns
  - image: set-annotations:v0.1
    name: PackageVariant.other.fn.0
  validators:
  - image: kubeval:v0.3
`
		v.publish("blueprints", "bucket", files)
		pv := newPV("pv")
		pv.Spec.Pipeline = &revision.Pipeline{
			Mutators:   []revision.Function{{Image: "a:v1", Name: "a"}, {Image: "b:v1", Name: "b"}},
			Validators: []revision.Function{{Image: "c:v1", Name: "c"}},
		}
		res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		names := func(fs []revision.Function) []string {
			var out []string
			for _, f := range fs {
				out = append(out, f.Name)
			}
			return out
		}
		kf := v.kptfile(res.Key)
		assert.Equal(t, []string{"PackageVariant.pv.a.0", "PackageVariant.pv.b.1", "user", "PackageVariant.other.fn.0"}, names(kf.Pipeline.Mutators))
		assert.Equal(t, []string{"PackageVariant.pv.c.0", ""}, names(kf.Pipeline.Validators))

		pv.Spec.Pipeline = &revision.Pipeline{Mutators: []revision.Function{{Image: "b:v2", Name: "b"}}}
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUpdated, res.Action)
		kf = v.kptfile(res.Key)
		assert.Equal(t, []string{"PackageVariant.pv.b.0", "user", "PackageVariant.other.fn.0"}, names(kf.Pipeline.Mutators))
		assert.Equal(t, "b:v2", kf.Pipeline.Mutators[0].Image)
		assert.Equal(t, []string{""}, names(kf.Pipeline.Validators))
		assert.Contains(t, v.file(res.Key, "Kptfile"), "namespace: ns")

		pv.Spec.Pipeline = nil
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		kf = v.kptfile(res.Key)
		assert.Equal(t, []string{"user", "PackageVariant.other.fn.0"}, names(kf.Pipeline.Mutators))
	})
}

func TestSyncBadSpecWritesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		v.publish("blueprints", "bucket", upstreamFiles())
		for name, mod := range map[string]func(*variant.PackageVariant){
			"no upstream":       func(pv *variant.PackageVariant) { pv.Spec.Upstream = nil },
			"no downstream pkg": func(pv *variant.PackageVariant) { pv.Spec.Downstream.Package = "" },
			"placeholder":       func(pv *variant.PackageVariant) { pv.Spec.Upstream.Revision = -1 },
			"bad policy":        func(pv *variant.PackageVariant) { pv.Spec.AdoptionPolicy = "sometimes" },
			"reserved context key": func(pv *variant.PackageVariant) {
				pv.Spec.PackageContext = &variant.PackageContext{Data: map[string]string{"name": "x"}}
			},
			"reserved remove key": func(pv *variant.PackageVariant) {
				pv.Spec.PackageContext = &variant.PackageContext{RemoveKeys: []string{"package-path"}}
			},
			"empty injector": func(pv *variant.PackageVariant) { pv.Spec.Injectors = []variant.InjectionSelector{{}} },
			"dotted function": func(pv *variant.PackageVariant) {
				pv.Spec.Pipeline = &revision.Pipeline{Mutators: []revision.Function{{Image: "x", Name: "a.b"}}}
			},
			"bad label":      func(pv *variant.PackageVariant) { pv.Spec.Labels = map[string]string{"bad key!": "v"} },
			"binding source": func(pv *variant.PackageVariant) { pv.Spec.Bindings = []variant.Binding{{Name: "b"}} },
		} {
			t.Run(name, func(t *testing.T) {
				pv := newPV("pv")
				mod(pv)
				before := v.version()
				res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
				require.ErrorIs(t, err, repository.ErrInvalidInput)
				var ve *variant.ValidationError
				require.ErrorAs(t, err, &ve)
				assert.Equal(t, before, v.version())
				assert.False(t, res.Ready())
				c := findCondition(res.Conditions, variant.ConditionStalled)
				require.NotNil(t, c)
				assert.Equal(t, variant.ReasonValidationError, c.Reason)
			})
		}
		t.Run("missing upstream", func(t *testing.T) {
			pv := newPV("pv")
			pv.Spec.Upstream.Package = "nope"
			before := v.version()
			res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
			require.ErrorIs(t, err, repository.ErrNotFound)
			assert.Equal(t, variant.ReasonUpstreamNotFound, findCondition(res.Conditions, variant.ConditionStalled).Reason)
			assert.Equal(t, before, v.version())
		})
		t.Run("no engine", func(t *testing.T) {
			_, err := variant.Sync(v.ctx, nil, newPV("pv"), nil)
			require.ErrorIs(t, err, repository.ErrInvalidInput)
		})

	})
}

func findCondition(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

func TestSyncConcurrentConverges(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		v.publish("blueprints", "bucket", upstreamFiles())
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				pv := newPV("pv")
				pv.Spec.PackageContext = &variant.PackageContext{Data: map[string]string{"region": "eu"}}
				opts := *v.opts
				opts.Attempts = 20
				_, errs[i] = variant.Sync(v.ctx, v.e, pv, &opts)
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		revs := v.revisions("deployments", "my-bucket")
		require.Len(t, revs, 1, "exactly one downstream draft")
		pv := newPV("pv")
		pv.Spec.PackageContext = &variant.PackageContext{Data: map[string]string{"region": "eu"}}
		res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUnchanged, res.Action)
		assert.Contains(t, v.file(res.Key, "package-context.yaml"), "region: eu")
	})
}

func TestDecodePorchObjects(t *testing.T) {
	objs, err := variant.Decode([]byte(`apiVersion: config.porch.kpt.dev/v1alpha1
kind: PackageVariant
metadata:
  name: my-pv
  namespace: default
spec:
  upstream:
    repo: blueprints
    package: foo
    revision: v1
  downstream:
    repo: deployments
    package: bar
  adoptionPolicy: adoptExisting
  packageContext:
    data:
      foo: bar
  pipeline:
    mutators:
    - image: set-namespace:v0.4
      configMap:
        namespace: x
  injectors:
  - group: porch.kpt.dev
    kind: Repository
    name: foo
---
apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata:
  name: set
spec:
  upstream:
    repo: blueprints
    package: foo
    revision: 2
  targets:
  - repositories:
    - name: deployments
      packageNames: [a, b]
    template:
      downstream:
        packageExpr: "target.package + '-x'"
      pipeline:
        mutators:
        - image: set-labels:v0.1
          configMapExprs:
          - key: pkg
            valueExpr: packageDefault
`))
	require.NoError(t, err)
	require.Len(t, objs, 2)
	pv := objs[0].(*variant.PackageVariant)
	assert.Equal(t, 1, pv.Spec.Upstream.Revision)
	assert.Equal(t, "foo", pv.Spec.Injectors[0].Name)
	assert.Equal(t, "porch.kpt.dev", *pv.Spec.Injectors[0].Group)
	assert.Equal(t, "x", pv.Spec.Pipeline.Mutators[0].ConfigMap["namespace"])
	require.NoError(t, variant.Validate(pv))
	pvs := objs[1].(*variant.PackageVariantSet)
	assert.Equal(t, 2, pvs.Spec.Upstream.Revision)
	assert.Equal(t, "set-labels:v0.1", pvs.Spec.Targets[0].Template.Pipeline.Mutators[0].Image)
	require.NoError(t, variant.ValidateSet(pvs))

	_, err = variant.Decode([]byte("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata: {name: x}\nspec: {upstreem: {}}\n"))
	require.ErrorIs(t, err, repository.ErrInvalidInput)
	_, err = variant.Decode([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	require.ErrorIs(t, err, repository.ErrInvalidInput)
}

func TestVariantName(t *testing.T) {
	assert.Equal(t, "set-repo-a.b", variant.VariantName("set", "repo", "a/b"))
	long := variant.VariantName("a-very-long-package-variant-set-name", "a-long-repository", "and-a-long-package-name")
	assert.Len(t, long, variant.MaxNameLength)
	assert.True(t, strings.HasPrefix(long, "a-very-long-package-variant-set-name-a-long-repository-"), long)
	assert.NotEqual(t, long, variant.VariantName("a-very-long-package-variant-set-name", "a-long-repository", "and-a-long-package-name2"))
}

var _ = errors.New
var _ = fmt.Sprintf

func TestSyncSeveralDraftsAndRestore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		v.publish("blueprints", "bucket", upstreamFiles())
		pv := newPV("pv")
		res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		pub := v.approve(res.Key)

		// Two owned drafts: both are kept up to date, as Porch does.
		md := revision.Metadata{Annotations: map[string]string{variant.OwnerAnnotation: "pv"}}
		for _, ws := range []string{"mine-1", "mine-2"} {
			_, err := v.e.Copy(v.ctx, "deployments", pub, ws, engine.CopyOptions{Metadata: md})
			require.NoError(t, err)
		}
		pv.Spec.PackageContext = &variant.PackageContext{Data: map[string]string{"k": "v"}}
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Len(t, res.Targets, 2)
		for _, k := range res.Targets {
			assert.Contains(t, v.file(k, "package-context.yaml"), "k: v")
		}
		for _, k := range res.Targets {
			require.NoError(t, v.e.Delete(v.ctx, "deployments", k))
		}

		// A downstream proposed for deletion and targeted again is kept.
		pv.Spec.PackageContext = nil
		_, err = v.e.ProposeDelete(v.ctx, "deployments", pub)
		require.NoError(t, err)
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUpdated, res.Action)
		pr, err := v.e.Get(v.ctx, "deployments", pub)
		require.NoError(t, err)
		assert.Equal(t, revision.LifecyclePublished, pr.Meta().Lifecycle)
	})
}
