package fnruntime_test

import (
	"context"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
)

const benchDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: prod
  labels:
    app: web
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 80
        resources:
          limits:
            cpu: 500m
            memory: 128Mi
`

// BenchmarkKubeconformOneResource measures the kubeconform builtin
// checking one Deployment, strict, once the schema is loaded (the load,
// paid once per process, is BenchmarkLoad in internal/k8sschema), against
// the shipped Kubernetes 1.37 schema (the default) and kyaml's 1.21.
func BenchmarkKubeconformOneResource(b *testing.B) {
	fn := fnruntime.Builtins()["kubeconform"]
	item := yaml.MustParse(benchDeployment)
	for _, version := range []string{"1.37", "1.21"} {
		b.Run("kubernetes="+version, func(b *testing.B) {
			cfg := yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  strict: \"true\"\n  kubernetes_version: \"" + version + "\"\n")
			run := func() {
				rl := &pipeline.ResourceList{Items: []*yaml.RNode{item}, FunctionConfig: cfg}
				if err := fn.Run(context.Background(), rl); err != nil || len(rl.Results) != 0 {
					b.Fatalf("check failed: %v %v", err, rl.Results)
				}
			}
			run() // the first check loads the schema
			for b.Loop() {
				run()
			}
		})
	}
}
