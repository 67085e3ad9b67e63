// Package upstreamid stamps kpt's merge identity on KRM resources, as kpt
// pkg get and Porch's clone do: the annotation
// internal.kpt.dev/upstream-identifier "<group>|<kind>|<namespace or
// default>|<name>" and the line comment "metadata: # kpt-merge:
// <namespace>/<name>". Three-way merges (kpt pkg update, Porch upgrade) use
// them to match a local resource to its upstream after a rename.
//
// Its functions are pure and safe for concurrent use.
package upstreamid

import (
	"bytes"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/internal/lru"
	"github.com/configasdata/cad/revision"
)

// Annotation is the annotation that carries a resource's upstream identity.
const Annotation = "internal.kpt.dev/upstream-identifier"

// CommentPrefix starts the line comment kpt puts on a resource's metadata
// key.
const CommentPrefix = "kpt-merge:"

// Identifier returns the upstream identifier of a resource:
// "<group>|<kind>|<namespace>|<name>", with "default" for an empty
// namespace and "" as the group of a core (v1) resource.
func Identifier(apiVersion, kind, namespace, name string) string {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group = ""
	}
	if namespace == "" {
		namespace = "default"
	}
	return group + "|" + kind + "|" + namespace + "|" + name
}

// IsResourceFile reports whether a package file at path holds KRM
// resources that Stamp applies to: a .yaml or .yml file other than a
// Kptfile or the root package file (revision.PackageFileName), as kpt
// reads a package.
func IsResourceFile(path string) bool {
	base := path[strings.LastIndex(path, "/")+1:]
	if base == "Kptfile" || (base == revision.PackageFileName && base == path) {
		return false
	}
	return strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml")
}

// Stamp adds the upstream-identifier annotation and the kpt-merge comment
// to every resource of the YAML stream data that has a kind and a name and
// lacks them; Kptfiles are left alone, existing identities are kept (they
// name the resource's original upstream). It reports whether anything
// changed; when nothing did it returns data itself. A stream that does
// not parse is an error, and the caller decides whether that matters (for
// kpt and Porch it is best effort).
func Stamp(data []byte) ([]byte, bool, error) {
	var out bytes.Buffer
	rw := &kio.ByteReadWriter{Reader: bytes.NewReader(data), Writer: &out, PreserveSeqIndent: true, WrapBareSeqNode: true}
	nodes, err := rw.Read()
	if err != nil {
		return nil, false, fmt.Errorf("upstreamid: %w", err)
	}
	changed := false
	for _, n := range nodes {
		c, err := stampNode(n)
		if err != nil {
			return nil, false, fmt.Errorf("upstreamid: %w", err)
		}
		changed = changed || c
	}
	if !changed {
		return data, false, nil
	}
	if err := rw.Write(nodes); err != nil {
		return nil, false, fmt.Errorf("upstreamid: %w", err)
	}
	return out.Bytes(), true, nil
}

// StampFiles returns files with Stamp applied to every resource file (see
// IsResourceFile), as kpt does after pkg get and pkg update and Porch does
// after clone and upgrade. It is best effort: a file that does not parse
// is left as it is.
func StampFiles(files revision.Files) (revision.Files, error) {
	out := files.Map()
	for p, data := range out {
		if !IsResourceFile(p) {
			continue
		}
		if stamped, changed, err := stampMemoized(data); err == nil && changed {
			out[p] = stamped
		}
	}
	return revision.NewFiles(out)
}

// StampKptfile gives the Kptfile data the merge identity Porch gives a
// cloned package's Kptfile, from its current name and namespace: the
// annotation (Identifier "kpt.dev|Kptfile|<namespace or default>|<name>")
// and the comment "metadata: # kpt-merge: <namespace>/<name>", replacing
// those it had (which named the upstream's Kptfile). Other comments and
// the formatting are kept. A Kptfile that does not parse, or has no name,
// is an error.
func StampKptfile(data []byte) ([]byte, error) {
	var out bytes.Buffer
	rw := &kio.ByteReadWriter{Reader: bytes.NewReader(data), Writer: &out, PreserveSeqIndent: true, WrapBareSeqNode: true}
	nodes, err := rw.Read()
	if err != nil {
		return nil, fmt.Errorf("upstreamid: Kptfile: %w", err)
	}
	if len(nodes) != 1 {
		return nil, fmt.Errorf("upstreamid: Kptfile: %d documents, want 1", len(nodes))
	}
	n := nodes[0]
	meta, err := n.GetMeta()
	if err != nil || meta.Name == "" {
		return nil, fmt.Errorf("upstreamid: Kptfile has no metadata.name")
	}
	if err := n.PipeE(yaml.SetAnnotation(Annotation, Identifier(meta.APIVersion, meta.Kind, meta.Namespace, meta.Name))); err != nil {
		return nil, fmt.Errorf("upstreamid: Kptfile: %w", err)
	}
	if mf := n.Field(yaml.MetadataField); mf != nil && mf.Key != nil {
		mf.Key.YNode().LineComment = fmt.Sprintf("# %s %s/%s", CommentPrefix, meta.Namespace, meta.Name)
	}
	if err := rw.Write(nodes); err != nil {
		return nil, fmt.Errorf("upstreamid: Kptfile: %w", err)
	}
	return out.Bytes(), nil
}

func stampNode(n *yaml.RNode) (bool, error) {
	if n.YNode().Kind != yaml.MappingNode {
		return false, nil
	}
	meta, err := n.GetMeta()
	if err != nil || meta.Kind == "" || meta.Name == "" {
		return false, nil // not a resource with an identity: best effort
	}
	if meta.Kind == "Kptfile" && strings.HasPrefix(meta.APIVersion, "kpt.dev/") {
		return false, nil
	}
	if meta.Kind == revision.PackageFileKind && meta.APIVersion == revision.PackageFileAPIVersion {
		return false, nil // cad's package file, like a Kptfile
	}
	changed := false
	if _, ok := meta.Annotations[Annotation]; !ok {
		id := Identifier(meta.APIVersion, meta.Kind, meta.Namespace, meta.Name)
		if err := n.PipeE(yaml.SetAnnotation(Annotation, id)); err != nil {
			return false, err
		}
		changed = true
	}
	if mf := n.Field(yaml.MetadataField); mf != nil && mf.Key != nil {
		key := mf.Key.YNode()
		if !strings.Contains(key.LineComment, CommentPrefix) {
			key.LineComment = fmt.Sprintf("# %s %s/%s", CommentPrefix, meta.Namespace, meta.Name)
			changed = true
		}
	}
	return changed, nil
}

// memo keeps the results of Stamp by input for StampFiles: a fan-out
// clones one upstream into many packages, and each clone would parse and
// re-encode the same files again (most of a clone's CPU for a package of
// a few dozen resources). Stamp is a function of its input alone, so a
// result can be reused as long as it is kept. The memo holds at most
// memoBytes of inputs and outputs, least recently used first out; a file
// larger than memoBytes/16 is not kept.
var memo = lru.New[string, memoResult](memoBytes, memoBytes/16)

type memoResult struct {
	out     []byte // nil when unchanged
	changed bool
}

const memoBytes = 8 << 20

// stampMemoized is Stamp through memo. A changed result is a copy the
// caller owns.
func stampMemoized(data []byte) ([]byte, bool, error) {
	r, ok := memo.Get(string(data))
	if ok {
		if !r.changed {
			return data, false, nil
		}
		return bytes.Clone(r.out), true, nil
	}
	out, changed, err := Stamp(data)
	if err != nil {
		return nil, false, err
	}
	size := len(data)
	r = memoResult{changed: changed}
	if changed {
		size += len(out)
		r.out = bytes.Clone(out)
	}
	memo.Put(string(data), r, int64(size))
	return out, changed, nil
}
