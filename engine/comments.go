package engine

import (
	"bytes"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/comments"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/revision"
)

// isYtt reports whether data is a ytt template, whose comments are code and
// are never copied (as in Porch).
func isYtt(data []byte) bool {
	return bytes.Contains(data, []byte("#@")) || bytes.Contains(data, []byte("#!"))
}

// readResources parses data's resources as they are written: aliases and
// merge keys are kept, not expanded (kio.FromBytes expands them, at a cost
// that grows with the square of a mapping's size even where there are
// none).
func readResources(data []byte) ([]*yaml.RNode, error) {
	return (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
}

// resourceID identifies a resource for comment matching: apiVersion, kind,
// namespace and name.
func resourceID(n *yaml.RNode) string {
	m, err := n.GetMeta()
	if err != nil || m.Kind == "" {
		return ""
	}
	return strings.Join([]string{m.APIVersion, m.Kind, m.Namespace, m.Name}, "|")
}

// keepComments copies the comments of old's resources onto the matching
// resources of next (same apiVersion, kind, namespace and name) where next
// has none, as Porch does when a package's resources are replaced: clients
// that round-trip resources through JSON lose their comments. A file of
// next that is byte-identical to old's, fails to parse, or is a ytt
// template is kept as is; a file is re-serialized only when one of its
// resources regained a comment. Comments are not carried over onto a
// resource whose mappings or sequences are too long for that to be cheap
// (see cheapToCopy). Aliases and merge keys are kept as written.
func keepComments(old, next revision.Files) revision.Files {
	var index map[string]*yaml.RNode // built on first need
	out := next
	for _, p := range next.Paths() {
		data, _ := next.Get(p)
		if !revision.IsYAMLFile(p) || isYtt(data) {
			continue
		}
		if prev, ok := old.Get(p); ok && bytes.Equal(prev, data) {
			continue
		}
		nodes, err := readResources(data)
		if err != nil || len(nodes) == 0 {
			continue
		}
		if index == nil {
			index = indexResources(old)
		}
		changed := false
		for _, n := range nodes {
			from, ok := index[resourceID(n)]
			if !ok || !cheapToCopy(from, n) {
				continue
			}
			before := n.MustString()
			if err := comments.CopyComments(from, n); err != nil {
				continue
			}
			if n.MustString() != before {
				changed = true
			}
		}
		if !changed {
			continue
		}
		s, err := kio.StringAll(nodes)
		if err != nil {
			continue
		}
		if f, err := out.With(p, []byte(s)); err == nil {
			out = f
		}
	}
	return out
}

// maxCommentWork bounds the work of copying comments onto one resource, in
// the units of commentWork: about a second of CPU.
const maxCommentWork = 1 << 24

// cheapToCopy reports whether copying comments from one resource to the
// other is cheap enough to do. kyaml's comments.CopyComments looks every
// field and list element up by a linear scan, so its work on a mapping
// or sequence grows with the square of its length (20,000 keys took 16 s);
// comments are kept only where that work is bounded.
func cheapToCopy(from, to *yaml.RNode) bool {
	return commentWork(from.YNode(), 0) <= maxCommentWork && commentWork(to.YNode(), 0) <= maxCommentWork
}

// commentWork returns w plus the sum of the squared lengths of n's
// mappings and sequences, saturating at just over maxCommentWork.
func commentWork(n *yaml.Node, w int) int {
	if n == nil || w > maxCommentWork {
		return w
	}
	w += len(n.Content) * len(n.Content)
	for _, c := range n.Content {
		if w = commentWork(c, w); w > maxCommentWork {
			break
		}
	}
	return w
}

// indexResources returns the resources of files' KRM files by resourceID.
func indexResources(files revision.Files) map[string]*yaml.RNode {
	index := map[string]*yaml.RNode{}
	for _, p := range files.Paths() {
		data, _ := files.Get(p)
		if !revision.IsYAMLFile(p) || isYtt(data) {
			continue
		}
		nodes, err := readResources(data)
		if err != nil {
			continue
		}
		for _, n := range nodes {
			if id := resourceID(n); id != "" {
				if _, dup := index[id]; !dup {
					index[id] = n
				}
			}
		}
	}
	return index
}
