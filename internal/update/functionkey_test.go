package update

import (
	"testing"

	"github.com/configasdata/cad/revision"
)

// A function is the same in the merge whether its image is pinned by tag
// or by digest, and a registry port is part of its name.
func TestFunctionKeyIgnoresTagAndDigest(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	same := []string{"ghcr.io/fn/set-labels:v0.1", "ghcr.io/fn/set-labels:v0.2", "ghcr.io/fn/set-labels@" + d, "ghcr.io/fn/set-labels:v0.2@" + d}
	want := functionKey(revision.Function{Image: same[0]})
	for _, img := range same[1:] {
		if got := functionKey(revision.Function{Image: img}); got != want {
			t.Errorf("%s: key %q, want %q", img, got, want)
		}
	}
	if a, b := functionKey(revision.Function{Image: "host:5000/fn:v1"}), functionKey(revision.Function{Image: "host:5001/fn:v1"}); a == b {
		t.Errorf("registries on different ports share the key %q", a)
	}
}
