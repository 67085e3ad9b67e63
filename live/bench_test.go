package live_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/configasdata/cad/live"
)

// BenchmarkCompute measures the status of a package of 100 resources (50
// ConfigMaps, 50 rolled-out Deployments) over an in-memory Reader: the cost
// of kstatus and of this package, without a cluster's round trips.
func BenchmarkCompute(b *testing.B) {
	f := newFake()
	var objs []live.Object
	for i := range 50 {
		f.put(b, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm%d, namespace: default}\n", i))
		f.put(b, strings.Replace(deployment(1, 1, 1, 1, condAvailable), "name: web,", fmt.Sprintf("name: web%d,", i), 1))
		objs = append(objs, live.Object{GVK: cmGVK, Name: fmt.Sprintf("cm%d", i)}, live.Object{GVK: deployGVK, Name: fmt.Sprintf("web%d", i)})
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ps, err := live.Compute(ctx, f, objs, nil)
		if err != nil || ps.Summary != live.Current {
			b.Fatalf("%v %+v", err, ps)
		}
	}
}
