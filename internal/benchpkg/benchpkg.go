// Package benchpkg makes the ordinary package the module's benchmarks
// measure YAML work on, so that the engine's, the pipeline's and the
// reference server's figures are for the same content.
package benchpkg

import "fmt"

// Resources returns n files named appNN.yaml of three commented resources
// each (a Deployment with a shared-labels anchor, a Service and a
// ConfigMap, about 1.2 KB a file). version varies a value in every file,
// so that consecutive updates differ. The caller adds a Kptfile.
func Resources(n, version int) map[string]string {
	files := make(map[string]string, n)
	for i := range n {
		files[fmt.Sprintf("app%02d.yaml", i)] = fmt.Sprintf(`# app %[1]d
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app%[1]d
  labels: &labels
    app: app%[1]d # the app
    tier: web
spec:
  replicas: %[2]d
  selector:
    matchLabels: *labels
  template:
    metadata:
      labels: *labels
    spec:
      containers:
      - name: app
        image: registry.example.com/app:v1.%[2]d
        ports:
        - containerPort: 8080
        env:
        - {name: MODE, value: production}
        - {name: LOG, value: info}
        resources:
          limits: {cpu: 500m, memory: 256Mi}
---
apiVersion: v1
kind: Service
metadata:
  name: app%[1]d
spec:
  selector:
    app: app%[1]d
  ports:
  - port: 80 # http
    targetPort: 8080
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: app%[1]d-config
data:
  color: blue
  size: "%[2]d"
  greeting: hello
`, i, version)
	}
	return files
}
