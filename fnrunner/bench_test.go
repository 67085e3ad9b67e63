package fnrunner_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/configasdata/cad/fnrunner/internal/testrunner"
)

// The cost of one evaluation on a loopback runner that echoes its input,
// for ResourceLists of 10 and 1000 ConfigMaps: the protocol's overhead
// over the function's own work.
func BenchmarkEvaluateEcho(b *testing.B) {
	srv := testrunner.Start(b, testrunner.Options{Handlers: map[string]testrunner.Handler{"echo": testrunner.Echo("")}})
	c := newClient(b, srv.URL, nil)
	fn := c.Function("echo", "")
	for _, n := range []int{10, 1000} {
		var rl strings.Builder
		rl.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
		for i := range n {
			fmt.Fprintf(&rl, "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: c%d\n  data:\n    key: value-%d\n", i, i)
		}
		in := rl.String()
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				if _, err := fn.RunStream(context.Background(), strings.NewReader(in), &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
