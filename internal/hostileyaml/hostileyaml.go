// Package hostileyaml builds YAML files that cost a naive reader far more
// than their size, for the tests of the bounds of revision.YAMLLimits:
// alias bombs, deep nesting, many documents and huge mappings. Each is a
// small file or a KRM resource (or a stream of them), so that it reaches
// every reader of a package's resources.
package hostileyaml

import (
	"fmt"
	"strings"
)

// Laughs returns the classic "billion laughs" alias bomb: levels
// anchored flow sequences, the first of width strings, each next of width
// aliases of the one before, so that expanding it yields width^levels
// strings. Laughs(9, 9) is 342 bytes and expands to 387 million.
func Laughs(levels, width int) string {
	var b strings.Builder
	b.WriteString(`a: &a ["lol"`)
	for range width - 1 {
		b.WriteString(`,"lol"`)
	}
	b.WriteString("]\n")
	for l := 1; l < levels; l++ {
		prev, cur := level(l-1), level(l)
		fmt.Fprintf(&b, "%s: &%s [", cur, cur)
		for i := range width {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("*" + prev)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// level names level l of Laughs: a to z, then z26, z27, ...
func level(l int) string {
	if l < 26 {
		return string(rune('a' + l))
	}
	return fmt.Sprintf("z%d", l)
}

// MergeBomb returns a bomb made of merge keys, as an editor's file with
// shared defaults would be: each level is a mapping that merges the level
// before width times under distinct keys. It is 1.8 KB and expands to
// 14^6 (7.5 million) mappings.
func MergeBomb() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: defaults\ndata:\n")
	b.WriteString("  l0: &l0 {image: nginx, replicas: 3, port: 8080, cpu: 100m, memory: 128Mi}\n")
	const levels, width = 7, 14
	for l := 1; l < levels; l++ {
		fmt.Fprintf(&b, "  l%d: &l%d\n", l, l)
		for i := range width {
			fmt.Fprintf(&b, "    k%02d: {<<: *l%d}\n", i, l-1)
		}
	}
	return b.String()
}

// Deep returns a ConfigMap whose data nests depth flow sequences.
func Deep(depth int) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata:\n  x: " +
		strings.Repeat("[", depth) + strings.Repeat("]", depth) + "\n"
}

// ManyDocuments returns n small ConfigMaps, one document each.
func ManyDocuments(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\n", i)
	}
	return b.String()
}

// HugeMap returns a ConfigMap whose data has n keys.
func HugeMap(n int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n")
	for i := range n {
		fmt.Fprintf(&b, "  k%d: v\n", i)
	}
	return b.String()
}

// All returns each hostile file by name, at the sizes the issue reported:
// the 342-byte bomb, the 1.8 KB merge-key bomb, 5,000 levels of nesting,
// 85,000 documents and 100,000 keys in one mapping.
func All() map[string]string {
	return map[string]string{
		"laughs":    Laughs(9, 9),
		"mergebomb": MergeBomb(),
		"deep":      Deep(5000),
		"documents": ManyDocuments(85_000),
		"hugemap":   HugeMap(100_000),
	}
}
