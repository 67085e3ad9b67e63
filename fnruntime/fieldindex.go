package fnruntime

import (
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// fieldIndex finds and sets the fields of one mapping in constant time,
// where kyaml's Lookup and SetField scan the mapping each time: setting n
// labels one SetField at a time is quadratic in n. A field is set as
// SetField sets it (the value node replaced in place, keeping the old
// style; a new field appended after the others).
type fieldIndex struct {
	m   *yaml.Node
	idx map[string]int // key → index of its key node in m.Content; the first of duplicates
}

func newFieldIndex(m *yaml.Node) *fieldIndex {
	fi := &fieldIndex{m: m, idx: make(map[string]int, len(m.Content)/2)}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if _, dup := fi.idx[m.Content[i].Value]; !dup {
			fi.idx[m.Content[i].Value] = i
		}
	}
	return fi
}

// get returns the value node of key, or nil.
func (fi *fieldIndex) get(key string) *yaml.Node {
	if i, ok := fi.idx[key]; ok {
		return fi.m.Content[i+1]
	}
	return nil
}

// set sets key to value, as yaml.SetField(key, value) on the mapping
// would, without scanning it.
func (fi *fieldIndex) set(key string, value *yaml.RNode) error {
	// SetField on a mapping of just this one field (or none) does what it
	// does on the whole mapping, but finds the field at once.
	tmp := &yaml.Node{Kind: yaml.MappingNode, Style: fi.m.Style, Tag: fi.m.Tag}
	i, exists := fi.idx[key]
	if exists {
		tmp.Content = []*yaml.Node{fi.m.Content[i], fi.m.Content[i+1]}
	}
	if err := yaml.NewRNode(tmp).PipeE(yaml.SetField(key, value)); err != nil {
		return err
	}
	switch {
	case exists && len(tmp.Content) == 2:
		fi.m.Content[i], fi.m.Content[i+1] = tmp.Content[0], tmp.Content[1]
	case !exists && len(tmp.Content) == 2:
		fi.idx[key] = len(fi.m.Content)
		fi.m.Content = append(fi.m.Content, tmp.Content...)
	}
	return nil
}

// quoteCache remembers, by value, whether SetField would double-quote a
// new string field of that value (a YAML 1.1 non-string such as "yes"),
// which kyaml finds out by parsing the value: once per value, not once
// per field set.
type quoteCache map[string]bool

func (q quoteCache) quote(v string) bool {
	quote, ok := q[v]
	if !ok {
		n := &yaml.Node{Kind: yaml.ScalarNode}
		n.SetString(v)
		quote = n.Style == 0 && yaml.IsYaml1_1NonString(n)
		q[v] = quote
	}
	return quote
}

// setString sets key to the string value as
// set(key, yaml.NewStringRNode(value)) would: an existing field takes
// the value and keeps its style; a new one is appended, double-quoted when
// YAML 1.1 would read the value as another type.
func (fi *fieldIndex) setString(key, value string, q quoteCache) {
	v := &yaml.Node{Kind: yaml.ScalarNode}
	v.SetString(value)
	if i, ok := fi.idx[key]; ok {
		old := fi.m.Content[i+1]
		v.Style = old.Style
		*old = *v
		return
	}
	if v.Style == 0 && q.quote(value) {
		v.Style = yaml.DoubleQuotedStyle
	}
	fi.idx[key] = len(fi.m.Content)
	fi.m.Content = append(fi.m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
}
