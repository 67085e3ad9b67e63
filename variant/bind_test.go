package variant_test

import (
	"strings"
	"testing"

	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const bindingPoints = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  annotations:
    config.kpt.dev/binding: settings
data:
  replicas: "1"
  logLevel: info
---
apiVersion: net.example.com/v1
kind: Attachment
metadata:
  name: attachment
  annotations:
    config.kpt.dev/binding: networks
    config.kpt.dev/binding-required: "true"
spec:
  mtu: 1500
`

func TestBindings(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		v := newEnv(t, b)
		files := upstreamFiles()
		files["bind.yaml"] = bindingPoints
		v.publish("blueprints", "bucket", files)
		v.publish("blueprints", "shared", map[string]string{"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  replicas: \"3\"\n"})

		pv := newPV("pv")
		res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		kf := v.kptfile(res.Key)
		c, _ := kf.Condition("config.binding.settings")
		assert.Equal(t, variant.ReasonDefault, c.Reason)
		assert.Equal(t, revision.ConditionTrue, c.Status)
		c, _ = kf.Condition("config.binding.networks")
		assert.Equal(t, variant.ReasonNotBound, c.Reason)
		assert.Equal(t, []string{"config.binding.networks"}, gates(kf))

		// Several objects of one kind fill the networks point; the default's
		// mtu survives where a source does not set it.
		for _, n := range []string{"net-a", "net-b"} {
			spec := map[string]any{"vlan": int64(len(n))}
			if n == "net-b" {
				spec["mtu"] = int64(9000)
			}
			v.objs.Add(map[string]any{"apiVersion": "net.example.com/v1", "kind": "Attachment",
				"metadata": map[string]any{"name": n, "labels": map[string]any{"site": "edge"}}, "spec": spec})
		}
		pv.Spec.Bindings = []variant.Binding{
			{Name: "networks", Object: &variant.ObjectBinding{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"site": "edge"}}}},
			{Name: "settings", PackageRevision: &variant.PackageRevisionBinding{Upstream: variant.Upstream{Repo: "blueprints", Package: "shared"}}},
			{Name: "missing", Resources: []map[string]any{{"kind": "ConfigMap"}}},
		}
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Contains(t, res.Warnings, `binding "missing" names no binding point of the package`)
		out := v.file(res.Key, "bind.yaml")
		assert.Equal(t, 3, strings.Count(out, "kind:"), out)
		assert.Contains(t, out, "name: net-a")
		assert.Contains(t, out, "name: net-b")
		assert.Contains(t, out, "mtu: 1500", "the default survives")
		assert.Contains(t, out, "mtu: 9000")
		assert.Contains(t, out, `replicas: "3"`)
		assert.Contains(t, out, "logLevel: info", "the default survives")
		assert.NotContains(t, out, "name: attachment")
		kf = v.kptfile(res.Key)
		c, _ = kf.Condition("config.binding.networks")
		assert.Equal(t, variant.ReasonBound, c.Reason)
		c, _ = kf.Condition("config.binding.settings")
		assert.Equal(t, variant.ReasonBound, c.Reason)

		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUnchanged, res.Action, "%v", res.Changes)
		v.approve(res.Key)

		// An upgrade keeps the bindings and takes new defaults.
		files["bind.yaml"] = strings.Replace(bindingPoints, "logLevel: info", "logLevel: debug", 1)
		v.publish("blueprints", "bucket", files)
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		assert.Equal(t, variant.ActionUpgraded, res.Action)
		out = v.file(res.Key, "bind.yaml")
		assert.Contains(t, out, "logLevel: debug")
		assert.Contains(t, out, `replicas: "3"`)
		assert.Contains(t, out, "name: net-b")

		// Inline resources; removing a binding restores the default.
		pv.Spec.Bindings = []variant.Binding{{Name: "networks", Resources: []map[string]any{
			{"apiVersion": "net.example.com/v1", "kind": "Attachment", "metadata": map[string]any{"name": "only"}, "spec": map[string]any{"vlan": 7}},
		}}}
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		out = v.file(res.Key, "bind.yaml")
		assert.Contains(t, out, "name: attachment", "one source keeps the point's name")
		assert.Contains(t, out, "vlan: 7")
		assert.NotContains(t, out, "net-b")
		assert.Contains(t, out, `replicas: "1"`, "the unbound point is back to its default")
		assert.NotContains(t, out, "bound-from: package")

		// A source of another kind is an error condition, not a write.
		pv.Spec.Bindings = []variant.Binding{{Name: "networks", Resources: []map[string]any{{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}}}}}
		res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
		require.NoError(t, err)
		c, _ = v.kptfile(res.Key).Condition("config.binding.networks")
		assert.Equal(t, revision.ConditionFalse, c.Status)
		assert.Contains(t, c.Message, "the binding point is")
	})
}
