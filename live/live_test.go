package live_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/live"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

var _ live.Revisions = (*engine.Engine)(nil)

// fakeCluster is a Reader over objects in memory, safe for concurrent use.
type fakeCluster struct {
	mu        sync.Mutex
	objs      map[string]*unstructured.Unstructured
	notServed map[schema.GroupVersionKind]bool
	fail      error // returned by every Get when set
	gets      int
}

func newFake() *fakeCluster {
	return &fakeCluster{objs: map[string]*unstructured.Unstructured{}, notServed: map[schema.GroupVersionKind]bool{}}
}

func id(gvk schema.GroupVersionKind, ns, name string) string {
	return gvk.String() + "|" + ns + "|" + name
}

func (f *fakeCluster) Get(_ context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	if f.fail != nil {
		return nil, f.fail
	}
	if f.notServed[gvk] {
		return nil, fmt.Errorf("no kind %s: %w", gvk, repository.ErrNotSupported)
	}
	u, ok := f.objs[id(gvk, ns, name)]
	if !ok {
		return nil, fmt.Errorf("%s %s/%s: %w", gvk.Kind, ns, name, repository.ErrNotFound)
	}
	return u.DeepCopy(), nil
}

// put stores the object the YAML describes.
func (f *fakeCluster) put(t testing.TB, y string) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(j)) // integers as int64, as client-go decodes them
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objs[id(u.GroupVersionKind(), u.GetNamespace(), u.GetName())] = u
}

func (f *fakeCluster) del(gvk schema.GroupVersionKind, ns, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objs, id(gvk, ns, name))
}

var (
	deployGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	cmGVK     = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

const cmLive = `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: default, generation: 1}
data: {a: b}
`

// deployment returns a live Deployment with the given generations,
// status replica counts and conditions (YAML flow sequence).
func deployment(gen, observed, replicas, available int, conditions string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, generation: %d}
spec: {replicas: 1}
status:
  observedGeneration: %d
  replicas: %d
  updatedReplicas: %d
  readyReplicas: %d
  availableReplicas: %d
  conditions: %s
`, gen, observed, replicas, replicas, available, available, conditions)
}

const (
	condAvailable   = `[{type: Available, status: "True", reason: MinimumReplicasAvailable}, {type: Progressing, status: "True", reason: NewReplicaSetAvailable}]`
	condProgressing = `[{type: Available, status: "False", reason: MinimumReplicasUnavailable}, {type: Progressing, status: "True", reason: ReplicaSetUpdated}]`
	condDeadline    = `[{type: Available, status: "False", reason: MinimumReplicasUnavailable}, {type: Progressing, status: "False", reason: ProgressDeadlineExceeded}]`
)

var pkgFiles = map[string]string{
	"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
  annotations:
    config.kubernetes.io/local-config: "true"
`,
	"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: b
`,
	"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
`,
	"fn-config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: setters
  annotations:
    config.kubernetes.io/local-config: "true"
data: {x: y}
`,
	"README.md": "not a resource\n",
}

func objects(t *testing.T, m map[string]string) []live.Object {
	t.Helper()
	objs, err := live.Objects(revision.MustFiles(m))
	require.NoError(t, err)
	return objs
}

func TestObjects(t *testing.T) {
	m := map[string]string{}
	for k, v := range pkgFiles {
		m[k] = v
	}
	m["cadpackage.yaml"] = "apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nmetadata: {name: app}\n"
	m["kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [cm.yaml]\n"
	m["sub/Kptfile"] = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: sub}\n"
	m["sub/multi.yml"] = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r, namespace: team, annotations: {config.kubernetes.io/local-config: \"false\"}}\n"
	objs := objects(t, m)
	var got []string
	for _, o := range objs {
		got = append(got, o.File+" "+o.String())
	}
	assert.Equal(t, []string{
		"cm.yaml v1, Kind=ConfigMap cfg",
		"deploy.yaml apps/v1, Kind=Deployment default/web",
		"sub/multi.yml v1, Kind=Namespace team",
		"sub/multi.yml rbac.authorization.k8s.io/v1, Kind=Role team/r",
	}, got)
}

func TestObjectsBadInput(t *testing.T) {
	for name, content := range map[string]string{
		"not yaml":     "a: [b\n",
		"no kind":      "apiVersion: v1\nmetadata: {name: x}\n",
		"no name":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
		"bad version":  "apiVersion: a/b/c\nkind: ConfigMap\nmetadata: {name: x}\n",
		"no api group": "kind: ConfigMap\nmetadata: {name: x}\n",
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := live.Objects(revision.MustFiles(map[string]string{"ok.yaml": cmLive, "bad.yaml": content}))
			require.ErrorIs(t, err, repository.ErrInvalidInput)
			assert.Contains(t, err.Error(), "bad.yaml")
			assert.Nil(t, objs)
		})
	}
}

func TestComputeDeploymentAndConfigMap(t *testing.T) {
	ctx := context.Background()
	objs := objects(t, pkgFiles)
	for _, tc := range []struct {
		name       string
		deploy     string // live Deployment, "" for none
		want       live.Status
		wantDeploy live.Status
		msg        string
	}{
		{"available", deployment(1, 1, 1, 1, condAvailable), live.Current, live.Current, "Deployment is available. Replicas: 1"},
		{"new generation not observed", deployment(2, 1, 1, 1, condAvailable), live.InProgress, live.InProgress, ""},
		{"not yet available", deployment(1, 1, 1, 0, condProgressing), live.InProgress, live.InProgress, ""},
		{"no status at all", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default, generation: 1}\nspec: {replicas: 1}\n", live.InProgress, live.InProgress, ""},
		{"progress deadline exceeded", deployment(1, 1, 1, 0, condDeadline), live.Failed, live.Failed, "Progress deadline exceeded"},
		{"missing", "", live.NotFound, live.NotFound, "not found in the cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.put(t, cmLive)
			if tc.deploy != "" {
				f.put(t, tc.deploy)
			}
			ps, err := live.Compute(ctx, f, objs, nil)
			require.NoError(t, err)
			require.Len(t, ps.Resources, 2)
			cm, dep := ps.Resources[0], ps.Resources[1]
			assert.Equal(t, live.ResourceStatus{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "cfg", File: "cm.yaml", Status: live.Current, Message: "Resource is always ready"}, cm)
			assert.Equal(t, tc.wantDeploy, dep.Status, dep.Message)
			assert.Equal(t, "apps/v1", dep.APIVersion)
			if tc.msg != "" {
				assert.Contains(t, dep.Message, tc.msg)
			}
			assert.Equal(t, tc.want, ps.Summary)
			assert.Equal(t, 1+boolInt(tc.wantDeploy == live.Current), ps.Count(live.Current))
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestComputeTerminatingAndUnserved(t *testing.T) {
	ctx := context.Background()
	f := newFake()
	f.put(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: default, deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [x]}
`)
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	f.notServed[widget] = true
	objs := []live.Object{
		{GVK: cmGVK, Name: "cfg"},
		{GVK: widget, Namespace: "team", Name: "w"},
	}
	ps, err := live.Compute(ctx, f, objs, nil)
	require.NoError(t, err)
	assert.Equal(t, live.Terminating, ps.Resources[0].Status)
	assert.Equal(t, live.Unknown, ps.Resources[1].Status)
	assert.Contains(t, ps.Resources[1].Message, "does not serve example.com/v1, Kind=Widget")
	assert.Equal(t, live.Unknown, ps.Summary)
}

func TestComputeNamespaces(t *testing.T) {
	ctx := context.Background()
	f := newFake()
	f.put(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: apps}\n")
	f.put(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n")
	f.put(t, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader}\n")
	objs := objects(t, map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n",
		// A namespace on a cluster-scoped kind is ignored, as the API server does.
		"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps, namespace: stray}\n",
		"cr.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader}\n",
	})
	ps, err := live.Compute(ctx, f, objs, &live.Options{DefaultNamespace: "apps", Concurrency: 1})
	require.NoError(t, err)
	assert.Equal(t, live.Current, ps.Summary, "%+v", ps.Resources)
	assert.Equal(t, "apps", ps.Resources[0].Namespace) // cm.yaml
	assert.Equal(t, "", ps.Resources[1].Namespace)     // cr.yaml
	assert.Equal(t, "", ps.Resources[2].Namespace)     // ns.yaml

	// With the default namespace the ConfigMap is looked for elsewhere.
	ps, err = live.Compute(ctx, f, objs, nil)
	require.NoError(t, err)
	assert.Equal(t, live.NotFound, ps.Summary)
	assert.Equal(t, "default", ps.Resources[0].Namespace)
	assert.Equal(t, live.NotFound, ps.Resources[0].Status)
}

// scopedFake says every kind is cluster-scoped.
type scopedFake struct{ *fakeCluster }

func (scopedFake) Namespaced(context.Context, schema.GroupVersionKind) (bool, error) {
	return false, nil
}

func TestComputeScoper(t *testing.T) {
	f := newFake()
	f.put(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n")
	ps, err := live.Compute(context.Background(), scopedFake{f}, []live.Object{{GVK: cmGVK, Name: "cfg", Namespace: "x"}}, nil)
	require.NoError(t, err)
	assert.Equal(t, live.Current, ps.Summary)
	assert.Equal(t, "", ps.Resources[0].Namespace)
}

func TestComputeErrors(t *testing.T) {
	ctx := context.Background()
	objs := []live.Object{{GVK: cmGVK, Name: "cfg"}}
	f := newFake()
	for name, opts := range map[string]*live.Options{
		"bad namespace":        {DefaultNamespace: "Not_A_Name"},
		"negative concurrency": {Concurrency: -1},
	} {
		t.Run(name, func(t *testing.T) {
			ps, err := live.Compute(ctx, f, objs, opts)
			require.ErrorIs(t, err, repository.ErrInvalidInput)
			assert.Nil(t, ps)
		})
	}
	_, err := live.Compute(ctx, nil, objs, nil)
	require.ErrorIs(t, err, repository.ErrInvalidInput)
	assert.Zero(t, f.gets)

	boom := errors.New("connection refused")
	f.fail = boom
	ps, err := live.Compute(ctx, f, objs, nil)
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "ConfigMap default/cfg")
	assert.Nil(t, ps)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	f.fail = cctx.Err()
	_, err = live.Compute(cctx, f, objs, nil)
	require.ErrorIs(t, err, context.Canceled)
}

func TestSummarize(t *testing.T) {
	rs := func(ss ...live.Status) []live.ResourceStatus {
		var out []live.ResourceStatus
		for _, s := range ss {
			out = append(out, live.ResourceStatus{Status: s})
		}
		return out
	}
	for _, tc := range []struct {
		in   []live.ResourceStatus
		want live.Status
	}{
		{nil, live.Current},
		{rs(live.Current, live.Current), live.Current},
		{rs(live.Current, live.InProgress), live.InProgress},
		{rs(live.InProgress, live.Terminating), live.Terminating},
		{rs(live.Terminating, live.Unknown, live.Current), live.Unknown},
		{rs(live.Unknown, live.NotFound, live.InProgress), live.NotFound},
		{rs(live.NotFound, live.Failed, live.Current), live.Failed},
		{rs(live.Current, "Bogus"), live.Unknown},
	} {
		assert.Equal(t, tc.want, live.Summarize(tc.in), "%v", tc.in)
	}
}

func publish(t *testing.T, files map[string]string) (*engine.Engine, revision.Key) {
	t.Helper()
	ctx := context.Background()
	repo := memrepo.New("deploy", nil)
	t.Cleanup(func() { repo.Close() })
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"deploy": repo}})
	require.NoError(t, err)
	key := revision.Key{Package: "app", Workspace: "v1"}
	_, err = e.Init(ctx, "deploy", key, engine.InitOptions{})
	require.NoError(t, err)
	_, err = e.Update(ctx, "deploy", key, revision.MustFiles(files), engine.UpdateOptions{})
	require.NoError(t, err)
	_, err = e.Propose(ctx, "deploy", key)
	require.NoError(t, err)
	pr, err := e.Approve(ctx, "deploy", key)
	require.NoError(t, err)
	return e, pr.Meta().Key
}

func TestRevisionStatus(t *testing.T) {
	ctx := context.Background()
	e, key := publish(t, pkgFiles)
	f := newFake()
	f.put(t, cmLive)
	ps, err := live.RevisionStatus(ctx, e, "deploy", key, f, nil)
	require.NoError(t, err)
	assert.Equal(t, key.String(), ps.Revision)
	assert.Equal(t, live.NotFound, ps.Summary)
	assert.Equal(t, 1, ps.Count(live.NotFound))
	assert.Equal(t, 1, ps.Count(live.Current))

	f.put(t, deployment(1, 1, 1, 1, condAvailable))
	ps, err = live.RevisionStatus(ctx, e, "deploy", key, f, nil)
	require.NoError(t, err)
	assert.Equal(t, live.Current, ps.Summary)

	missing := key
	missing.Revision = 7
	_, err = live.RevisionStatus(ctx, e, "deploy", missing, f, nil)
	require.ErrorIs(t, err, repository.ErrNotFound)
	_, err = live.RevisionStatus(ctx, e, "nosuchrepo", key, f, nil)
	require.ErrorIs(t, err, repository.ErrNotFound)
	_, err = live.RevisionStatus(ctx, e, "deploy", key, nil, nil)
	require.ErrorIs(t, err, repository.ErrInvalidInput)
	_, err = live.RevisionStatus(ctx, nil, "deploy", key, f, nil)
	require.ErrorIs(t, err, repository.ErrInvalidInput)
	_, err = live.RevisionStatus(ctx, e, "deploy", key, f, &live.Options{Concurrency: -2})
	require.ErrorIs(t, err, repository.ErrInvalidInput)

	// A package whose files are not resources is bad input, named.
	bad, badKey := publish(t, map[string]string{"x.yaml": "just: data\n"})
	_, err = live.RevisionStatus(ctx, bad, "deploy", badKey, f, nil)
	require.ErrorIs(t, err, repository.ErrInvalidInput)
	assert.Contains(t, err.Error(), "x.yaml")
}

// flipper completes the Deployment's rollout after a number of reads.
type flipper struct {
	*fakeCluster
	t     *testing.T
	after int
}

func (f flipper) Get(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	n := f.gets
	f.mu.Unlock()
	if n >= f.after {
		f.put(f.t, deployment(1, 1, 1, 1, condAvailable))
	}
	return f.fakeCluster.Get(ctx, gvk, ns, name)
}

func TestWatch(t *testing.T) {
	ctx := context.Background()
	objs := objects(t, pkgFiles)
	start := func() *fakeCluster {
		f := newFake()
		f.put(t, cmLive)
		f.put(t, deployment(1, 1, 1, 0, condProgressing))
		return f
	}
	opts := &live.WatchOptions{Interval: time.Millisecond}

	t.Run("until current", func(t *testing.T) {
		f := start()
		var reports []live.Status
		err := live.Watch(ctx, flipper{f, t, 6}, objs, opts, func(ps *live.PackageStatus) error {
			reports = append(reports, ps.Summary)
			return nil
		})
		require.NoError(t, err)
		// Two objects a poll: the rollout completes during the fourth poll,
		// and the unchanged polls before it are not reported.
		assert.Equal(t, []live.Status{live.InProgress, live.Current}, reports)
		assert.Equal(t, 8, f.gets)
	})

	t.Run("context done", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		reports := 0
		err := live.Watch(cctx, start(), objs, opts, func(ps *live.PackageStatus) error {
			reports++
			cancel()
			return nil
		})
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1, reports)
	})

	t.Run("report error", func(t *testing.T) {
		stop := errors.New("stop")
		err := live.Watch(ctx, start(), objs, opts, func(*live.PackageStatus) error { return stop })
		require.ErrorIs(t, err, stop)
	})

	t.Run("bad input", func(t *testing.T) {
		err := live.Watch(ctx, start(), objs, &live.WatchOptions{Interval: -time.Second}, func(*live.PackageStatus) error { return nil })
		require.ErrorIs(t, err, repository.ErrInvalidInput)
		err = live.Watch(ctx, start(), objs, nil, nil)
		require.ErrorIs(t, err, repository.ErrInvalidInput)
		err = live.Watch(ctx, start(), objs, &live.WatchOptions{Options: live.Options{Concurrency: -1}}, func(*live.PackageStatus) error { return nil })
		require.ErrorIs(t, err, repository.ErrInvalidInput)
	})
}

// TestObjectsRefusesAliasBomb: a package file holding an alias bomb (the
// 1.8 KB merge-key bomb and the 342-byte "billion laughs", each in a
// valid ConfigMap) is refused with the revision.YAMLLimitError naming it,
// not read.
func TestObjectsRefusesAliasBomb(t *testing.T) {
	for name, content := range map[string]string{
		"merge keys": hostileyaml.MergeBomb(),
		"laughs":     hostileyaml.Laughs(9, 9) + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := live.Objects(revision.MustFiles(map[string]string{"ok.yaml": cmLive, "bad.yaml": content}))
			var le *revision.YAMLLimitError
			require.ErrorIs(t, err, repository.ErrInvalidInput)
			require.True(t, errors.As(err, &le), "%v is not a *revision.YAMLLimitError", err)
			assert.Equal(t, "bad.yaml", le.File)
			assert.Nil(t, objs)
		})
	}
}
