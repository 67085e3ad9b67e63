package revision

import (
	"context"
	"testing"
)

// FuzzWithinByScan: whenever the byte scan says a file is within tight
// bounds, the full walk agrees, so skipping the walk never lets a file
// over a bound through.
//
//	go test -run '^$' -fuzz FuzzWithinByScan -fuzztime 30s ./revision/
func FuzzWithinByScan(f *testing.F) {
	for _, seed := range []string{
		"a: b\n", "[[[[]]]]", "{a,b,c}", "?\n?\n?\n", "- - - - a\n", "---\n---\n---\n", "a:\n  b:\n    c: [d, {e: f}]\n",
		"x: |\n  - - - :\n", "!!map {a: !!seq [b]}", "...\n---\n", "a: &x 1\n",
	} {
		f.Add([]byte(seed))
	}
	l := (&YAMLLimits{MaxDepth: 6, MaxNodes: 40, MaxMapEntries: 12, MaxDocuments: 3}).withDefaults()
	l.MaxPackageDocuments, l.MaxPackageNodes = l.MaxDocuments, l.MaxNodes
	f.Fuzz(func(t *testing.T, data []byte) {
		if !withinByScan(data, l) {
			return
		}
		c := yamlChecker{l: l}
		if err := c.check(context.Background(), "f", data); err != nil {
			t.Fatalf("the scan passed %q, the walk refuses it: %v", data, err)
		}
	})
}
