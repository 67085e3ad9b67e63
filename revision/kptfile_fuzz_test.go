package revision

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseKptfile checks that ParseKptfile never panics, that its errors
// match ErrInvalid, and that whatever it accepts encodes back to the same
// bytes unchanged and, after a change, to a Kptfile that reads back equal.
func FuzzParseKptfile(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "kptfile", "*.Kptfile"))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"",
		"apiVersion: kpt.dev/v1\nkind: Kptfile\n",
		"apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: x}\ninfo: {}\nstatus:\n  conditions: []\n",
		"apiVersion: kpt.dev/v1\nkind: Kptfile\nupstream: &a {type: git}\nupstreamLock:\n  <<: *a\n",
		"apiVersion: kpt.dev/v1\nkind: Kptfile\n---\napiVersion: v1\n",
		"apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n  - image: a\n    configMap: {k: !!str 1}\n",
		"apiVersion: kpt.dev/v1\nkind: Kptfile\nstatus:\n  renderStatus:\n    mutationSteps:\n    - exitCode: 1\n      results:\n      - field: {currentValue: [1, 2]}\n",
		"apiVersion: kpt.dev/v1alpha2\nkind: Kptfile\n",
		"apiVersion: kpt.dev/v1\r\nkind: Kptfile\r\nmetadata:\r\n  name: crlf # c\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		kf, err := ParseKptfile(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		out, err := kf.Encode()
		if err != nil {
			t.Fatalf("Encode of an unchanged Kptfile: %v", err)
		}
		if !bytes.Equal(out, data) {
			t.Fatalf("unchanged Kptfile encoded differently:\n%q\n%q", data, out)
		}
		_ = kf.Validate()
		kf.SetCondition(Condition{Type: "Fuzzed", Status: ConditionTrue})
		kf.Metadata.Name += "-x"
		if kf.Info != nil {
			kf.Info.Keywords = append(kf.Info.Keywords, "k")
		}
		if kf.Pipeline != nil && len(kf.Pipeline.Mutators) > 0 {
			kf.Pipeline.Mutators = kf.Pipeline.Mutators[1:]
		}
		out, err = kf.Encode()
		if err != nil {
			t.Fatalf("Encode after a change: %v", err)
		}
		back, err := ParseKptfile(out)
		if err != nil {
			t.Fatalf("changed Kptfile does not parse: %v\n%s", err, out)
		}
		sameData(t, back, kf)
	})
}
