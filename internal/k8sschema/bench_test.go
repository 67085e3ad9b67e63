package k8sschema_test

import (
	"runtime"
	"testing"

	"github.com/configasdata/cad/internal/k8sschema"
)

// BenchmarkLoad measures the first load of the shipped Kubernetes 1.37
// schema (gunzip, JSON decode of swagger.json, the kind index), which a
// process pays once, on its first kubeconform check against it. It also
// reports the heap the loaded schema keeps (retained-MiB).
func BenchmarkLoad(b *testing.B) {
	shipped := k8sschema.Versions()[0]
	gz := k8sschema.Embedded(shipped)
	for b.Loop() {
		if err := k8sschema.New(shipped.Version, gz).Load(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := k8sschema.New(shipped.Version, gz)
	if err := s.Load(); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(s)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "retained-MiB")
}

// BenchmarkForType measures finding one kind's schema once loaded (what
// each resource of a check costs before validation proper).
func BenchmarkForType(b *testing.B) {
	s := k8sschema.Versions()[0]
	if err := s.Load(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if s.ForType("apps/v1", "Deployment") == nil {
			b.Fatal("no Deployment schema")
		}
	}
}
