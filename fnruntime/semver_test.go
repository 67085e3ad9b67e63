package fnruntime

import (
	"errors"
	"testing"

	"github.com/configasdata/cad/revision"
)

func TestConstraintCheck(t *testing.T) {
	for _, tc := range []struct {
		constraint, version string
		want                bool
	}{
		{"v0.4.1", "v0.4.1", true},
		{"0.4.1", "v0.4.1", true},
		{"v0.4.2", "v0.4.1", false},
		{"v0.4", "v0.4.1", true}, // a partial version is an x-range
		{"v0", "v0.4.1", true},
		{"v1", "v0.4.1", false},
		{"0.4.x", "v0.4.9", true},
		{"0.x", "v0.9.0", true},
		{"*", "v3.0.0", true},
		{"=0.4.1", "v0.4.1", true},
		{"!=0.4.1", "v0.4.1", false},
		{"!=0.4", "v0.4.1", false},
		{"!=0.3", "v0.4.1", true},
		{">0.4.0", "v0.4.1", true},
		{">0.4.1", "v0.4.1", false},
		{">0.4", "v0.4.9", false}, // past the 0.4.x range
		{">0.4", "v0.5.0", true},
		{">=0.4.1", "v0.4.1", true},
		{">= 0.4.2", "v0.4.1", false},
		{"<0.4.1", "v0.4.1", false},
		{"<0.5", "v0.4.9", true},
		{"<=0.4.1", "v0.4.1", true},
		{"<=0.4", "v0.4.9", true},
		{"<=0.3", "v0.4.0", false},
		{"~1.2", "v1.2.9", true},
		{"~1.2", "v1.3.0", false},
		{"~1.2.3", "v1.2.2", false},
		{"~1.2.3", "v1.2.3", true},
		{"~1", "v1.9.0", true},
		{"~>1.2", "v1.2.5", true},
		{"^0.4.1", "v0.4.7", true},
		{"^0.4.1", "v0.5.0", false},
		{"^0.4.1", "v0.4.0", false},
		{"^1.2", "v1.9.0", true},
		{"^1.2", "v2.0.0", false},
		{"^0.0.3", "v0.0.3", true},
		{"^0.0.3", "v0.0.4", false},
		{"^0", "v0.9.0", true},
		{"^0", "v1.0.0", false},
		{">=1.0, <2", "v1.5.0", true},
		{">=1.0, <2", "v2.0.0", false},
		{">=1.0 <2", "v1.5.0", true},
		{">=0.1, <0.4 || ^0.4.1", "v0.4.1", true},
		{">=0.1, <0.4 || >=1", "v0.4.1", false},
		{"~0.4", "v0.4.2-rc.1", false}, // a prerelease needs a prerelease constraint
		{">=0.4.2-rc.0", "v0.4.2-rc.1", true},
		{">=0.4.2-rc.2", "v0.4.2-rc.1", false},
		{"0.4.2-rc.1", "v0.4.2-rc.1", true},
		{"<0.4.2", "v0.4.2-rc.1", false},
		{"v0.4.1+build.7", "v0.4.1", true},
		// Hyphen ranges, as kpt's tag constraints take them.
		{"0.4.1 - 0.4.3", "v0.4.2", true},
		{"0.4.1 - 0.4.3", "v0.4.1", true},
		{"0.4.1 - 0.4.3", "v0.4.3", true},
		{"0.4.1 - 0.4.3", "v0.4.4", false},
		{"0.4 - 0.5", "v0.5.9", true},
		{"v0.3.4 - v0.4.0", "v0.4.1", false},
	} {
		c, err := parseConstraint(tc.constraint)
		if err != nil {
			t.Errorf("%q: %v", tc.constraint, err)
			continue
		}
		v, err := parseVersion(tc.version)
		if err != nil {
			t.Fatalf("%q: %v", tc.version, err)
		}
		if got := c.check(v); got != tc.want {
			t.Errorf("%q satisfied by %s = %v, want %v", tc.constraint, tc.version, got, tc.want)
		}
	}
}

func TestConstraintMalformed(t *testing.T) {
	// What the semver library kpt uses refuses ("1.x.3", "01.2" and
	// "1.2-rc" it takes, so they are kpt constraints).
	for _, s := range []string{"", ">=", "1.2.3.4", "v1beta", "~", ">=1 ||", "1.2.3-", "=>>1", "0.4.1 -", "- 0.4.1"} {
		_, err := parseConstraint(s)
		var ce *ConstraintError
		if !errors.Is(err, revision.ErrInvalid) || !errors.As(err, &ce) {
			t.Errorf("%q: got %v, want a *ConstraintError matching revision.ErrInvalid", s, err)
		}
	}
}

func TestIsVersionTag(t *testing.T) {
	for tag, want := range map[string]bool{
		"": false, "latest": false, "unstable": false, "main": false, "dev-1": false,
		"v0.4.1": true, "0.4": true, "v1": true, "~1.2": true, "^0.4.1": true, ">=1.0, <2": true, "*": true, "1.x": true,
	} {
		if got := isVersionTag(tag); got != want {
			t.Errorf("isVersionTag(%q) = %v, want %v", tag, got, want)
		}
	}
}
