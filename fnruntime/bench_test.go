package fnruntime_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/kio"
)

// benchResources returns n resources (Deployments, Services, ConfigMaps
// in turn) split over files of 100.
func benchResources(n int) map[string]string {
	files := map[string]string{}
	var b strings.Builder
	flush := func(i int) {
		if b.Len() > 0 {
			files[fmt.Sprintf("res-%03d.yaml", i/100)] = b.String()
			b.Reset()
		}
	}
	for i := 0; i < n; i++ {
		if i%100 == 0 {
			flush(i - 1)
		}
		if b.Len() > 0 {
			b.WriteString("---\n")
		}
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%d # the app
  labels:
    app: app-%d
spec:
  replicas: 2
  selector:
    matchLabels:
      app: app-%d
  template:
    metadata:
      labels:
        app: app-%d
    spec:
      containers:
      - name: main
        image: nginx:1.14
        ports:
        - containerPort: 80
`, i, i, i, i)
		case 1:
			fmt.Fprintf(&b, `apiVersion: v1
kind: Service
metadata:
  name: svc-%d
spec:
  selector:
    app: app-%d
  ports:
  - port: 80
    targetPort: 80
`, i, i-1)
		default:
			fmt.Fprintf(&b, `apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-%d
data:
  key: value-%d
`, i, i)
		}
	}
	flush(n)
	return files
}

func benchRenderer() pipeline.Pipeline {
	steps := pipeline.Steps{Mutators: []pipeline.Step{
		{Image: "set-namespace", ConfigMap: map[string]string{"namespace": "prod"}},
		{Image: "set-labels", ConfigMap: map[string]string{"tier": "web"}},
		{Image: "set-image", ConfigMap: map[string]string{"name": "nginx", "newTag": "1.25"}},
	}}
	return pipeline.New(fnruntime.NewRegistry(nil), steps, &pipeline.Options{NoRenderStatus: true})
}

// BenchmarkRender1000 renders 1,000 resources through set-namespace,
// set-labels and set-image in-process.
func BenchmarkRender1000(b *testing.B) {
	files := revision.MustFiles(benchResources(1000))
	p := benchRenderer()
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Render(ctx, files); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseSerialise1000 is the floor: kyaml reads and writes the
// same bytes once.
func BenchmarkParseSerialise1000(b *testing.B) {
	files := benchResources(1000)
	for b.Loop() {
		for _, data := range files {
			nodes, err := (&kio.ByteReader{Reader: strings.NewReader(data), PreserveSeqIndent: true}).Read()
			if err != nil {
				b.Fatal(err)
			}
			var out bytes.Buffer
			if err := (kio.ByteWriter{Writer: &out}).Write(nodes); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkKustomize1000 runs `kubectl kustomize` with namespace, labels
// and images over the same resources (the process is part of the cost).
func BenchmarkKustomize1000(b *testing.B) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		b.Skip("kubectl not on PATH")
	}
	dir := b.TempDir()
	var names []string
	for name, data := range benchResources(1000) {
		names = append(names, name)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	k := "namespace: prod\nlabels:\n- pairs:\n    tier: web\n  includeSelectors: true\n  includeTemplates: true\nimages:\n- name: nginx\n  newTag: \"1.25\"\nresources:\n"
	for _, n := range names {
		k += "- " + n + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
}

// BenchmarkKubeconformSchemaLoad measures parsing the embedded Kubernetes
// 1.37 OpenAPI document, which the kubeconform builtin does once per
// process on first use.
func BenchmarkKubeconformSchemaLoad(b *testing.B) {
	for b.Loop() {
		fnruntime.LoadKubeSchemaForBenchmark()
	}
}
