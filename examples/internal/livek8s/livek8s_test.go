package livek8s_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/kubetest"
	"github.com/configasdata/cad/examples/internal/livek8s"
	"github.com/configasdata/cad/live"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

var appFiles = map[string]string{
	"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n",
	"config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  finalizers: [example.com/hold]
data:
  greeting: hello
`,
	"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 1
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
      - name: app
        image: registry.example/app:1
`,
	"setters.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: setters
  annotations:
    config.kubernetes.io/local-config: "true"
data: {replicas: "1"}
`,
}

func publish(t *testing.T, e *engine.Engine, pkg string, files map[string]string) revision.Key {
	t.Helper()
	ctx := context.Background()
	key := revision.Key{Package: pkg, Workspace: "v1"}
	_, err := e.Init(ctx, "deploy", key, engine.InitOptions{})
	require.NoError(t, err)
	_, err = e.Update(ctx, "deploy", key, revision.MustFiles(files), engine.UpdateOptions{})
	require.NoError(t, err)
	_, err = e.Propose(ctx, "deploy", key)
	require.NoError(t, err)
	pr, err := e.Approve(ctx, "deploy", key)
	require.NoError(t, err)
	return pr.Meta().Key
}

// apply creates the package's applied resources in the cluster, in the
// default namespace, as kubectl apply would.
func apply(t *testing.T, dyn dynamic.Interface, mapper meta.RESTMapper, files map[string]string) {
	t.Helper()
	objs, err := live.Objects(revision.MustFiles(files))
	require.NoError(t, err)
	for _, o := range objs {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(files[o.File])), 4096)
		for {
			u := &unstructured.Unstructured{}
			err := dec.Decode(&u.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			if u.GetName() != o.Name || u.GetKind() != o.GVK.Kind {
				continue
			}
			m, err := mapper.RESTMapping(o.GVK.GroupKind(), o.GVK.Version)
			require.NoError(t, err)
			_, err = dyn.Resource(m.Resource).Namespace("default").Create(context.Background(), u, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
}

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
var configmaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// rollOut sets the Deployment's status as its controller would once its
// pod is available: no controller manager runs in the test cluster.
func rollOut(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	ctx := context.Background()
	d, err := dyn.Resource(deployments).Namespace("default").Get(ctx, "app", metav1.GetOptions{})
	require.NoError(t, err)
	now := time.Now().UTC().Format(time.RFC3339)
	d.Object["status"] = map[string]any{
		"observedGeneration": d.GetGeneration(),
		"replicas":           int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1),
		"conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastTransitionTime": now, "lastUpdateTime": now},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastTransitionTime": now, "lastUpdateTime": now},
		},
	}
	_, err = dyn.Resource(deployments).Namespace("default").UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func statuses(ps *live.PackageStatus) map[string]live.Status {
	out := map[string]live.Status{}
	for _, r := range ps.Resources {
		out[r.Kind+"/"+r.Name] = r.Status
	}
	return out
}

// TestLiveStatus deploys a published package to a real kube-apiserver and
// follows its status: not applied, applied (the Deployment in progress),
// rolled out, a resource being deleted and deleted.
func TestLiveStatus(t *testing.T) {
	c := kubetest.Start(t)
	ctx := context.Background()
	repo := memrepo.New("deploy", nil)
	t.Cleanup(func() { repo.Close() })
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"deploy": repo}})
	require.NoError(t, err)
	key := publish(t, e, "app", appFiles)

	r, err := livek8s.New(c.Config)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.Config)
	require.NoError(t, err)
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))

	// Nothing applied yet.
	ps, err := live.RevisionStatus(ctx, e, "deploy", key, r, nil)
	require.NoError(t, err)
	assert.Equal(t, live.NotFound, ps.Summary)
	assert.Equal(t, map[string]live.Status{"ConfigMap/app-config": live.NotFound, "Deployment/app": live.NotFound}, statuses(ps))
	assert.Equal(t, "default", ps.Resources[0].Namespace)

	// Applied: the ConfigMap is Current at once, the Deployment waits for
	// a controller.
	apply(t, dyn, mapper, appFiles)
	ps, err = live.RevisionStatus(ctx, e, "deploy", key, r, nil)
	require.NoError(t, err)
	assert.Equal(t, live.InProgress, ps.Summary)
	assert.Equal(t, map[string]live.Status{"ConfigMap/app-config": live.Current, "Deployment/app": live.InProgress}, statuses(ps))

	// Watch while the rollout completes.
	objs, err := live.RevisionObjects(ctx, e, "deploy", key)
	require.NoError(t, err)
	var reports []live.Status
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = live.Watch(wctx, r, objs, &live.WatchOptions{Interval: 50 * time.Millisecond}, func(ps *live.PackageStatus) error {
		reports = append(reports, ps.Summary)
		if ps.Summary == live.InProgress {
			rollOut(t, dyn)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []live.Status{live.InProgress, live.Current}, reports)

	// The ConfigMap is deleted but held by its finalizer: Terminating.
	require.NoError(t, dyn.Resource(configmaps).Namespace("default").Delete(ctx, "app-config", metav1.DeleteOptions{}))
	ps, err = live.RevisionStatus(ctx, e, "deploy", key, r, nil)
	require.NoError(t, err)
	assert.Equal(t, live.Terminating, ps.Summary)
	assert.Equal(t, live.Terminating, statuses(ps)["ConfigMap/app-config"])

	// The finalizer released, it is gone: NotFound.
	cm, err := dyn.Resource(configmaps).Namespace("default").Get(ctx, "app-config", metav1.GetOptions{})
	require.NoError(t, err)
	cm.SetFinalizers(nil)
	_, err = dyn.Resource(configmaps).Namespace("default").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	ps, err = live.RevisionStatus(ctx, e, "deploy", key, r, nil)
	require.NoError(t, err)
	assert.Equal(t, live.NotFound, ps.Summary)
	assert.Equal(t, map[string]live.Status{"ConfigMap/app-config": live.NotFound, "Deployment/app": live.Current}, statuses(ps))

	// An unknown revision.
	missing := key
	missing.Revision = 9
	_, err = live.RevisionStatus(ctx, e, "deploy", missing, r, nil)
	require.ErrorIs(t, err, repository.ErrNotFound)

	// A kind the cluster does not serve is reported, not fatal; a
	// cluster-scoped kind is looked up without a namespace.
	other := publish(t, e, "widgets", map[string]string{
		"widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
		"ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: default\n",
	})
	ps, err = live.RevisionStatus(ctx, e, "deploy", other, r, nil)
	require.NoError(t, err)
	require.Len(t, ps.Resources, 2)
	assert.Equal(t, live.Current, ps.Resources[0].Status, ps.Resources[0].Message)
	assert.Equal(t, "", ps.Resources[0].Namespace)
	assert.Equal(t, live.Unknown, ps.Resources[1].Status)
	assert.Contains(t, ps.Resources[1].Message, "does not serve example.com/v1, Kind=Widget")
	assert.Equal(t, live.Unknown, ps.Summary)

	t.Run("reader errors", func(t *testing.T) { readerErrors(t, c) })
}

// readerErrors checks the Reader's error mapping on its own.
func readerErrors(t *testing.T, c *kubetest.Cluster) {
	ctx := context.Background()
	r, err := livek8s.FromKubeconfig(c.Kubeconfig)
	require.NoError(t, err)
	_, err = r.Get(ctx, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "default", "nope")
	require.ErrorIs(t, err, repository.ErrNotFound)
	_, err = r.Get(ctx, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, "default", "w")
	require.ErrorIs(t, err, repository.ErrNotSupported)
	ns, err := r.Namespaced(ctx, schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"})
	require.NoError(t, err)
	assert.False(t, ns)
	_, err = livek8s.FromKubeconfig(c.Dir + "/no-such-kubeconfig")
	require.Error(t, err)
}
