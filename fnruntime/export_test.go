package fnruntime

import (
	"context"
	"time"

	"github.com/configasdata/cad/internal/k8sschema"
)

// LoadKubeSchemaForBenchmark parses the newest shipped Kubernetes schema
// afresh (tests only).
func LoadKubeSchemaForBenchmark() {
	v := k8sschema.Versions()[0]
	if err := k8sschema.New(v.Version, k8sschema.Embedded(v)).Load(); err != nil {
		panic(err)
	}
}

// ExecTimeout is the deadline an exec function sets itself under ctx
// (tests only).
func ExecTimeout(e *ExecFunction, ctx context.Context) time.Duration { return e.timeout(ctx) }
