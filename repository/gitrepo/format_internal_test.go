package gitrepo

import (
	"slices"
	"testing"
)

// repositoryFormat reads the two sections as git reads them: names case
// insensitive, values as written, comments, quotes, the old
// [section.sub] form (another section), subsections and continued lines.
func TestRepositoryFormatSyntax(t *testing.T) {
	for _, tc := range []struct {
		config  string
		version string
		exts    []formatExt
	}{
		{"", "", nil},
		{"[core]\n\trepositoryformatversion = 0\n\tbare = true\n", "0", nil},
		{"[CORE]\n\tRepositoryFormatVersion=01 ; a comment\n", "1", nil},
		{"[core] repositoryformatversion = 1\n[Extensions]\n\tObjectFormat = \"sha256\" # quoted\n", "1",
			[]formatExt{{"objectformat", "sha256"}}},
		{"[extensions]\n\tnoop\n\tfrob = a\n\tfrob = b\n", "", []formatExt{{"noop", ""}, {"frob", "b"}}},
		{"[extensions.sub]\n\tx = 1\n[extensions \"sub\"]\n\ty = 2\n[other]\n\tz = 3\n", "", nil},
		{"# [extensions]\n; x = 1\n[core]\n\trepositoryformatversion = \\\n1\n", "1", nil},
		{"[core]\n\trepositoryformatversion = 2\n", "2", nil},
	} {
		version, exts := repositoryFormat([]byte(tc.config))
		if version != tc.version || !slices.Equal(exts, tc.exts) {
			t.Errorf("%q: got %q %v, want %q %v", tc.config, version, exts, tc.version, tc.exts)
		}
	}
}
