package update

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/kustomize/kyaml/yaml/walk"

	"github.com/configasdata/cad/internal/upstreamid"
)

// bookkeeping are the annotations that kyaml and this package add while
// merging; they are ignored when resources are compared.
var bookkeeping = []string{
	kioutil.PathAnnotation,
	kioutil.IndexAnnotation,
	kioutil.LegacyPathAnnotation,  //nolint:staticcheck // set by kyaml readers
	kioutil.LegacyIndexAnnotation, //nolint:staticcheck // set by kyaml readers
	kioutil.IdAnnotation,
	kioutil.LegacyIdAnnotation, //nolint:staticcheck // set by kyaml readers
	kioutil.SeqIndentAnnotation,
	kioutil.InternalAnnotationsMigrationResourceIDAnnotation,
}

// readResources parses data as KRM resources of file p. ok is false when
// data does not read as a stream of KRM resources, in which case the file
// is merged as a non-KRM file.
func readResources(p string, data []byte) (nodes []*yaml.RNode, ok bool) {
	nodes, err := (&kio.ByteReader{
		Reader:            bytes.NewReader(data),
		PreserveSeqIndent: true,
		SetAnnotations:    map[string]string{kioutil.PathAnnotation: p},
	}).Read()
	if err != nil {
		return nil, false
	}
	for _, n := range nodes {
		if n.GetKind() == "" || n.GetApiVersion() == "" {
			return nil, false
		}
	}
	return nodes, true
}

// writeResources encodes nodes (all of one file) in their index order.
func writeResources(nodes []*yaml.RNode) ([]byte, error) {
	sort.SliceStable(nodes, func(i, j int) bool {
		return index(nodes[i]) < index(nodes[j])
	})
	var buf bytes.Buffer
	if err := (kio.ByteWriter{Writer: &buf, ClearAnnotations: []string{
		kioutil.PathAnnotation, kioutil.LegacyPathAnnotation, //nolint:staticcheck // set by kyaml readers
	}}).Write(nodes); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func index(n *yaml.RNode) int {
	i, _ := strconv.Atoi(n.GetAnnotations()[kioutil.IndexAnnotation])
	return i
}

// identity is the key resources are matched by across the three trees:
// group (without version), kind, upstream namespace and name, and file.
func identity(n *yaml.RNode) string {
	group, _, _ := strings.Cut(n.GetApiVersion(), "/")
	if !strings.Contains(n.GetApiVersion(), "/") {
		group = ""
	}
	kind, ns, name := n.GetKind(), n.GetNamespace(), n.GetName()
	if id, ok := n.GetAnnotations()[upstreamid.Annotation]; ok {
		if parts := strings.Split(id, "|"); len(parts) == 4 {
			group, kind, ns, name = parts[0], parts[1], parts[2], parts[3]
		}
	} else if cns, cname, ok := mergeComment(n); ok {
		ns, name = cns, cname
	}
	if ns == "" {
		ns = "default"
	}
	return strings.Join([]string{group, kind, ns, name, n.GetAnnotations()[kioutil.PathAnnotation]}, "|")
}

// mergeComment returns the namespace and name recorded in the
// "# kpt-merge: ns/name" comment of n's metadata key, if any.
func mergeComment(n *yaml.RNode) (ns, name string, ok bool) {
	f := n.Field("metadata")
	if f == nil || f.Key == nil {
		return "", "", false
	}
	c := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(f.Key.YNode().LineComment), "#"))
	rest, found := strings.CutPrefix(c, upstreamid.CommentPrefix)
	if !found {
		return "", "", false
	}
	rest = strings.TrimSpace(rest)
	if ns, name, found = strings.Cut(rest, "/"); !found {
		return "", rest, rest != ""
	}
	return ns, name, name != ""
}

// tuple is one resource as it is in the original, updated and local trees.
type tuple struct {
	original, updated, local *yaml.RNode
}

// tuples groups resources by identity, keeping first-seen order.
type tuples struct {
	list []*tuple
	byID map[string]*tuple
}

func (ts *tuples) get(n *yaml.RNode) *tuple {
	id := identity(n)
	if t, ok := ts.byID[id]; ok {
		return t
	}
	if ts.byID == nil {
		ts.byID = map[string]*tuple{}
	}
	t := &tuple{}
	ts.byID[id] = t
	ts.list = append(ts.list, t)
	return t
}

func (ts *tuples) add(source string, nodes []*yaml.RNode) error {
	for _, n := range nodes {
		t := ts.get(n)
		var slot **yaml.RNode
		switch source {
		case "original":
			slot = &t.original
		case "updated":
			slot = &t.updated
		default:
			slot = &t.local
		}
		if *slot != nil {
			return fmt.Errorf("found duplicate %q resources in file %q", source, n.GetAnnotations()[kioutil.PathAnnotation])
		}
		*slot = n
	}
	return nil
}

// mergeResources three-way merges the resources of the three trees (the
// maps hold each tree's KRM files, parsed) and returns the merged
// resources grouped by file path.
func mergeResources(original, updated, local map[string][]*yaml.RNode, schemas schemaSet) (map[string][]*yaml.RNode, error) {
	var ts tuples
	for _, src := range []struct {
		name  string
		files map[string][]*yaml.RNode
	}{{"original", original}, {"updated", updated}, {"dest", local}} {
		for _, p := range sortedKeys(src.files) {
			if err := ts.add(src.name, src.files[p]); err != nil {
				return nil, err
			}
		}
	}
	out := map[string][]*yaml.RNode{}
	for _, t := range ts.list {
		n, err := t.resolve(schemas)
		if err != nil {
			return nil, err
		}
		if n != nil {
			p := n.GetAnnotations()[kioutil.PathAnnotation]
			out[p] = append(out[p], n)
		}
	}
	return out, nil
}

// resolve applies kpt's per-resource decision table and merges the
// resource present in all three trees field by field.
func (t *tuple) resolve(schemas schemaSet) (*yaml.RNode, error) {
	o, u, l := t.original, t.updated, t.local
	switch {
	case o == nil && u == nil && l != nil: // added locally
		return l, nil
	case o == nil && u != nil && l == nil: // added upstream
		return u, nil
	case u == nil && l == nil: // deleted in both
		return nil, nil
	case o != nil && u == nil: // deleted upstream: drop unless changed locally
		if equalResources(o, l) {
			return nil, nil
		}
		return l, nil
	case o != nil && l == nil: // deleted locally
		return nil, nil
	}
	w := walk.Walker{
		Visitor:               visitor{},
		VisitKeysAsScalars:    true,
		InferAssociativeLists: false,
		Sources:               []*yaml.RNode{l, o, u},
		Schema:                schemas.lookup(u),
	}
	return w.Walk()
}

// equalResources compares two resources ignoring bookkeeping annotations.
func equalResources(a, b *yaml.RNode) bool {
	a, b = a.Copy(), b.Copy()
	stripBookkeeping(a)
	stripBookkeeping(b)
	as, err1 := a.String()
	bs, err2 := b.String()
	return err1 == nil && err2 == nil && as == bs
}

func stripBookkeeping(n *yaml.RNode) {
	for _, a := range bookkeeping {
		_ = n.PipeE(yaml.ClearAnnotation(a))
	}
}

// schemaSet holds the OpenAPI schemas of CustomResourceDefinitions found in
// the packages, by "group/version/kind". It is used instead of adding the
// schemas to kyaml's global registry.
type schemaSet map[string]*openapi.ResourceSchema

func (s schemaSet) lookup(n *yaml.RNode) *openapi.ResourceSchema {
	if n == nil || len(s) == 0 {
		return nil
	}
	return s[n.GetApiVersion()+"/"+n.GetKind()]
}

// addCRDs adds the schemas of the CRDs among nodes.
func (s schemaSet) addCRDs(nodes []*yaml.RNode) {
	for _, n := range nodes {
		if n.GetKind() != "CustomResourceDefinition" || !strings.HasPrefix(n.GetApiVersion(), "apiextensions.k8s.io/") {
			continue
		}
		group, _ := n.GetString("spec.group")
		kind, _ := n.GetString("spec.names.kind")
		versions, err := n.Pipe(yaml.Lookup("spec", "versions"))
		if err != nil || versions == nil || group == "" || kind == "" {
			continue
		}
		elems, _ := versions.Elements()
		for _, v := range elems {
			name, _ := v.GetString("name")
			sn, err := v.Pipe(yaml.Lookup("schema", "openAPIV3Schema"))
			if err != nil || sn == nil || name == "" {
				continue
			}
			js, err := sn.MarshalJSON()
			if err != nil {
				continue
			}
			var sch spec.Schema
			if err := json.Unmarshal(js, &sch); err != nil {
				continue
			}
			s[group+"/"+name+"/"+kind] = &openapi.ResourceSchema{Schema: &sch}
		}
	}
}

// visitor is kyaml's merge3 visitor with kpt's change: an explicit YAML
// null in local or updated where origin had a value deletes the field.
type visitor struct{}

var _ walk.Visitor = visitor{}

// cleared reports whether a field present in left was explicitly set to
// null in right.
func cleared(left, right *yaml.RNode) bool {
	return !left.IsTaggedNull() && right.IsTaggedNull()
}

func (visitor) VisitMap(nodes walk.Sources, _ *openapi.ResourceSchema) (*yaml.RNode, error) {
	if cleared(nodes.Origin(), nodes.Updated()) || cleared(nodes.Origin(), nodes.Dest()) {
		return walk.ClearNode, nil
	}
	if nodes.Dest() == nil && nodes.Updated() == nil {
		return walk.ClearNode, nil
	}
	if nodes.Dest() == nil {
		return yaml.NewRNode(&yaml.Node{Kind: yaml.MappingNode}), nil
	}
	return nodes.Dest(), nil
}

func (v visitor) VisitScalar(nodes walk.Sources, _ *openapi.ResourceSchema) (*yaml.RNode, error) {
	if cleared(nodes.Origin(), nodes.Updated()) || cleared(nodes.Origin(), nodes.Dest()) {
		return nil, nil
	}
	if yaml.IsMissingOrNull(nodes.Updated()) != yaml.IsMissingOrNull(nodes.Origin()) {
		return nodes.Updated(), nil // added or removed upstream
	}
	if yaml.IsMissingOrNull(nodes.Updated()) && yaml.IsMissingOrNull(nodes.Origin()) {
		return nodes.Dest(), nil
	}
	if nodes.Updated().YNode().Value != nodes.Origin().YNode().Value {
		return nodes.Updated(), nil // changed upstream: upstream wins
	}
	return nodes.Dest(), nil
}

func (v visitor) VisitList(nodes walk.Sources, _ *openapi.ResourceSchema, kind walk.ListKind) (*yaml.RNode, error) {
	if kind == walk.AssociativeList {
		if yaml.IsMissingOrNull(nodes.Updated()) && !yaml.IsMissingOrNull(nodes.Origin()) {
			return walk.ClearNode, nil
		}
		if yaml.IsMissingOrNull(nodes.Dest()) {
			return yaml.NewRNode(&yaml.Node{Kind: yaml.SequenceNode}), nil
		}
		return nodes.Dest(), nil
	}
	if cleared(nodes.Origin(), nodes.Updated()) || cleared(nodes.Origin(), nodes.Dest()) {
		return walk.ClearNode, nil
	}
	if yaml.IsMissingOrNull(nodes.Updated()) != yaml.IsMissingOrNull(nodes.Origin()) {
		return nodes.Updated(), nil
	}
	if yaml.IsMissingOrNull(nodes.Updated()) && yaml.IsMissingOrNull(nodes.Origin()) {
		return nodes.Dest(), nil
	}
	us, err := flowString(nodes.Updated())
	if err != nil {
		return nil, err
	}
	os, err := flowString(nodes.Origin())
	if err != nil {
		return nil, err
	}
	if us != os {
		return nodes.Updated(), nil // changed upstream: replace wholesale
	}
	return nodes.Dest(), nil
}

// flowString renders n in flow style for comparison, without changing n.
func flowString(n *yaml.RNode) (string, error) {
	c := n.Copy()
	c.YNode().Style = yaml.FlowStyle | yaml.SingleQuotedStyle
	return c.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
