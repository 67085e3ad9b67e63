package upstreamid_test

import (
	"maps"
	"testing"

	"github.com/configasdata/cad/internal/upstreamid"
	"github.com/configasdata/cad/revision"
)

func TestStamp(t *testing.T) {
	in := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  namespace: prod
spec:
  replicas: 1 # kept
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  a: b
`
	want := `apiVersion: apps/v1
kind: Deployment
metadata: # kpt-merge: prod/app
  name: app
  namespace: prod
  annotations:
    internal.kpt.dev/upstream-identifier: 'apps|Deployment|prod|app'
spec:
  replicas: 1 # kept
---
apiVersion: v1
kind: ConfigMap
metadata: # kpt-merge: /cfg
  name: cfg
  annotations:
    config.kubernetes.io/local-config: "true"
    internal.kpt.dev/upstream-identifier: '|ConfigMap|default|cfg'
data:
  a: b
`
	out, changed, err := upstreamid.Stamp([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !changed || string(out) != want {
		t.Fatalf("changed %v, got:\n%s\nwant:\n%s", changed, out, want)
	}
	again, changed, err := upstreamid.Stamp(out)
	if err != nil || changed || string(again) != string(out) {
		t.Fatalf("second stamp changed %v err %v:\n%s", changed, err, again)
	}
}

func TestStampKeepsExistingAndSkipsKptfile(t *testing.T) {
	in := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n"
	out, changed, err := upstreamid.Stamp([]byte(in))
	if err != nil || changed || string(out) != in {
		t.Fatalf("Kptfile stamped: %v %v\n%s", changed, err, out)
	}
	in = "apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /old\n  name: new\n  annotations:\n    internal.kpt.dev/upstream-identifier: '|ConfigMap|default|old'\n"
	out, changed, err = upstreamid.Stamp([]byte(in))
	if err != nil || changed || string(out) != in {
		t.Fatalf("existing identity changed: %v %v\n%s", changed, err, out)
	}
	if _, _, err := upstreamid.Stamp([]byte("a: [")); err == nil {
		t.Fatal("bad YAML: no error")
	}
}

func TestIsResourceFile(t *testing.T) {
	for p, want := range map[string]bool{"a.yaml": true, "x/b.yml": true, "Kptfile": false, "sub/Kptfile": false, "README.md": false} {
		if got := upstreamid.IsResourceFile(p); got != want {
			t.Errorf("IsResourceFile(%q) = %v", p, got)
		}
	}
}

// TestStampFiles covers a package as clone and upgrade (and the update
// package's diff) stamp it: resource files get identities, everything else
// is kept byte for byte.
func TestStampFiles(t *testing.T) {
	in := map[string]string{
		"Kptfile":      "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n",
		"README.md":    "kind: ConfigMap\nmetadata:\n  name: doc\n",
		"bad.yaml":     "a: [",
		"notkrm.yml":   "just: values\n",
		"sub/svc.yml":  "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n  namespace: ns\n",
		"stamped.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /old\n  name: new\n  annotations:\n    internal.kpt.dev/upstream-identifier: '|ConfigMap|default|old'\n",
	}
	files, err := revision.NewFiles(toBytes(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := upstreamid.StampFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	want := maps.Clone(in)
	want["sub/svc.yml"] = "apiVersion: v1\nkind: Service\nmetadata: # kpt-merge: ns/svc\n  name: svc\n  namespace: ns\n" +
		"  annotations:\n    internal.kpt.dev/upstream-identifier: '|Service|ns|svc'\n"
	if got := out.Strings(); !maps.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if got := files.Strings(); !maps.Equal(got, in) {
		t.Fatalf("input modified: %q", got)
	}
	again, err := upstreamid.StampFiles(out)
	if err != nil || !maps.Equal(again.Strings(), want) {
		t.Fatalf("second stamp (%v): %q", err, again.Strings())
	}
}

func toBytes(m map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}

// TestStampFilesRepeated checks that stamping the same content again (a
// fan-out cloning one upstream into many packages, served from the memo)
// gives the same result, and that a caller changing the bytes of one
// result does not change the next.
func TestStampFilesRepeated(t *testing.T) {
	in := map[string]string{
		"cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: repeated\n",
		"same.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /kept\n  name: kept\n  annotations:\n    internal.kpt.dev/upstream-identifier: '|ConfigMap|default|kept'\n",
	}
	want := maps.Clone(in)
	want["cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /repeated\n  name: repeated\n" +
		"  annotations:\n    internal.kpt.dev/upstream-identifier: '|ConfigMap|default|repeated'\n"
	for i := range 3 {
		files, err := revision.NewFiles(toBytes(in))
		if err != nil {
			t.Fatal(err)
		}
		out, err := upstreamid.StampFiles(files)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Strings(); !maps.Equal(got, want) {
			t.Fatalf("stamp %d: got %q\nwant %q", i, got, want)
		}
		for _, p := range out.Paths() {
			b, _ := out.Get(p)
			for j := range b {
				b[j] = 'X'
			}
		}
	}
}

// A cloned Kptfile gets the identity of its new name, as Porch's clone
// writes it (test/e2e/cli/testdata/rpkg-clone:
// "kpt.dev|Kptfile|default|basens-clone"), replacing the upstream's.
func TestStampKptfile(t *testing.T) {
	in := `apiVersion: kpt.dev/v1
kind: Kptfile
metadata: # kpt-merge: /basens
  name: basens-clone
  annotations:
    config.kubernetes.io/local-config: "true"
    internal.kpt.dev/upstream-identifier: kpt.dev|Kptfile|default|basens
info:
  description: sample description # kept
pipeline:
  mutators:
  - image: set-labels:v0.2.0
`
	want := `apiVersion: kpt.dev/v1
kind: Kptfile
metadata: # kpt-merge: /basens-clone
  name: basens-clone
  annotations:
    config.kubernetes.io/local-config: "true"
    internal.kpt.dev/upstream-identifier: kpt.dev|Kptfile|default|basens-clone
info:
  description: sample description # kept
pipeline:
  mutators:
  - image: set-labels:v0.2.0
`
	got, err := upstreamid.StampKptfile([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := upstreamid.StampKptfile([]byte("apiVersion: kpt.dev/v1\nkind: Kptfile\n")); err == nil {
		t.Error("a Kptfile without a name was stamped")
	}
	if _, err := upstreamid.StampKptfile([]byte("a: [")); err == nil {
		t.Error("YAML that does not parse was stamped")
	}
}
