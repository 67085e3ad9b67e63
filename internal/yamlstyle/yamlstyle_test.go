package yamlstyle

import (
	"reflect"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

type item struct {
	Image  string `yaml:"image"`
	Stderr string `yaml:"stderr,omitempty"`
}

type doc struct {
	Status struct {
		Message string `yaml:"message,omitempty"`
		Steps   []item `yaml:"steps,omitempty"`
	} `yaml:"status"`
}

// roundTrip fails t when s does not read back as written, in a plain
// mapping and in a wide-style sequence (kpt's), with either indentation.
func roundTrip(t *testing.T, s string) {
	t.Helper()
	var d doc
	d.Status.Message = s
	d.Status.Steps = []item{{Image: "fn", Stderr: s}, {Image: "fn2", Stderr: s + "\n" + s}}
	for _, seq := range []yaml.SequenceIndentStyle{yaml.WideSequenceStyle, yaml.CompactSequenceStyle} {
		out, err := Marshal(&d, seq)
		if err != nil {
			t.Fatalf("Marshal(%q): %v", s, err)
		}
		var back doc
		if err := yaml.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q (%s) does not read back: %v\n%s", s, seq, err, out)
		}
		if !reflect.DeepEqual(back, d) {
			t.Fatalf("%q (%s) reads back as %#v\n%s", s, seq, back, out)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, s := range []string{
		" x\ny\n", " x\ny", "  a\n b\n", "\tx\ny\n", "x\n\ty\n", " x\n", "x\n y\n",
		" \n", "\n x\n", "\n\n", "a\n\n b", "- a\n- b\n", "key: v\n  more\n", "#x\n y",
		"\u00a0x\ny", "x\r\n y", "plain", "", " lead", "trail ", "\t",
	} {
		roundTrip(t, s)
	}
}

func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{" x\ny\n", "\tx\ny", "a\n b\n", "[\n]", "'\n\"", "---\n..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // YAML holds text; a function's stderr is read as text
		}
		roundTrip(t, s)
	})
}
