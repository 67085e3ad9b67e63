package imageref

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for in, want := range map[string]Ref{
		"nginx":                               {Name: "nginx"},
		"nginx:1.27":                          {Name: "nginx", Tag: "1.27"},
		"ghcr.io/kptdev/krm-fn/set-labels:v0": {Name: "ghcr.io/kptdev/krm-fn/set-labels", Tag: "v0"},
		"localhost:5000/app":                  {Name: "localhost:5000/app"},
		"localhost:5000/app:v2":               {Name: "localhost:5000/app", Tag: "v2"},
		"app@" + d:                            {Name: "app", Digest: d},
		"host:5000/app:v1@" + d:               {Name: "host:5000/app", Tag: "v1", Digest: d},
		"":                                    {},
	} {
		got := Split(in)
		if got != want {
			t.Errorf("Split(%q) = %+v, want %+v", in, got, want)
		}
		if got.String() != in {
			t.Errorf("Split(%q).String() = %q", in, got.String())
		}
	}
}

func TestValidate(t *testing.T) {
	for in, want := range map[string]string{
		"ghcr.io/kptdev/krm-fn/set-labels:v0.2":                "",
		"localhost:5000/app@sha256:" + strings.Repeat("a", 64): "",
		"":                                   "at least one component",
		"Nginx":                              "must be lowercase",
		"nginx:":                             "invalid reference format",
		"app@md5:" + strings.Repeat("a", 32): "unsupported digest algorithm",
		"app@sha256:abc" + strings.Repeat("0", 30): "invalid checksum digest length",
	} {
		err := Validate(in)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("Validate(%q) = %v, want %q", in, err, want)
		}
	}
}
