package gitrepo

import (
	"slices"
	"testing"

	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
)

func TestMaintainSelectPacks(t *testing.T) {
	packs := func(counts ...uint32) []gitobj.PackInfo {
		var out []gitobj.PackInfo
		for i, n := range counts {
			out = append(out, gitobj.PackInfo{Base: string(rune('a' + i)), Objects: n, V2: true})
		}
		return out
	}
	for _, c := range []struct {
		name   string
		packs  []gitobj.PackInfo
		loose  int
		full   bool
		merged string
	}{
		{"a progression stays", packs(10, 30, 100), 0, false, ""},
		{"loose objects roll up the small packs", packs(10, 30, 100), 20, false, "abc"},
		{"few loose objects make a pack of their own", packs(10, 30, 100), 4, false, ""},
		{"small packs under a large one", packs(100, 1, 1, 1), 0, false, "bcd"},
		{"two alike", packs(50, 50, 1000), 0, false, "ab"},
		{"one pack alone", packs(7), 0, false, ""},
		{"kept and old packs stay", append(packs(1, 1), gitobj.PackInfo{Base: "k", Objects: 1, V2: true, Keep: true}, gitobj.PackInfo{Base: "o", Objects: 1}), 0, false, "ab"},
		{"full", packs(10, 30, 100), 0, true, "abc"},
		{"full, one pack", packs(10), 0, true, ""},
	} {
		var got []string
		for _, p := range selectPacks(c.packs, c.loose, MaintainOptions{Full: c.full}) {
			got = append(got, p.Base)
		}
		slices.Sort(got)
		if s := join(got); s != c.merged {
			t.Errorf("%s: merged %q, want %q", c.name, s, c.merged)
		}
	}
}

func join(s []string) string {
	out := ""
	for _, x := range s {
		out += x
	}
	return out
}
