package live_test

import (
	"context"
	"fmt"
	"log"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/live"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// cluster is a Reader over a map; a real one wraps a Kubernetes client
// (see examples/internal/livek8s).
type cluster map[string]*unstructured.Unstructured

func (c cluster) Get(_ context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	if u, ok := c[gvk.Kind+"/"+ns+"/"+name]; ok {
		return u, nil
	}
	return nil, fmt.Errorf("%s %s/%s: %w", gvk.Kind, ns, name, repository.ErrNotFound)
}

// The live status of a published package: its ConfigMap exists and is
// Current, its Deployment is rolled out, its Service was never applied.
func ExampleRevisionStatus() {
	ctx := context.Background()
	repo := memrepo.New("deployments", nil)
	defer repo.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"deployments": repo}})
	if err != nil {
		log.Fatal(err)
	}
	key := revision.Key{Package: "web", Workspace: "v1"}
	if _, err := e.Init(ctx, "deployments", key, engine.InitOptions{}); err != nil {
		log.Fatal(err)
	}
	files := revision.MustFiles(map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\n",
		"app.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
---
apiVersion: v1
kind: Service
metadata:
  name: web
`,
	})
	if _, err := e.Update(ctx, "deployments", key, files, engine.UpdateOptions{}); err != nil {
		log.Fatal(err)
	}
	if _, err := e.Propose(ctx, "deployments", key); err != nil {
		log.Fatal(err)
	}
	pr, err := e.Approve(ctx, "deployments", key)
	if err != nil {
		log.Fatal(err)
	}

	c := cluster{
		"ConfigMap/default/web-config": {Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "web-config", "namespace": "default"},
		}},
		"Deployment/default/web": {Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "default", "generation": int64(1)},
			"spec":     map[string]any{"replicas": int64(1)},
			"status": map[string]any{
				"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1),
				"readyReplicas": int64(1), "availableReplicas": int64(1),
				"conditions": []any{
					map[string]any{"type": "Available", "status": "True"},
				},
			},
		}},
	}
	ps, err := live.RevisionStatus(ctx, e, "deployments", pr.Meta().Key, c, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range ps.Resources {
		fmt.Printf("%s %s/%s: %s\n", r.Kind, r.Namespace, r.Name, r.Status)
	}
	fmt.Println("package:", ps.Summary)
	// Output:
	// ConfigMap default/web-config: Current
	// Deployment default/web: Current
	// Service default/web: NotFound
	// package: NotFound
}
