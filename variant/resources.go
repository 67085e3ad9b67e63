package variant

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// resourceFile is one YAML file of a package, parsed into its resources.
type resourceFile struct {
	path  string
	nodes []*yaml.RNode
	dirty bool
}

// isResourceFile reports whether p holds KRM resources: a .yaml or .yml
// file other than a Kptfile.
func isResourceFile(p string) bool {
	ext := path.Ext(p)
	return (ext == ".yaml" || ext == ".yml") && path.Base(p) != revision.KptfileName
}

// parseResourceFiles parses the resource files of files whose content
// contains any of needles (all of them when needles is empty), in path
// order. Each file is held to lim first (the engine's bounds; nil for the
// defaults of revision.YAMLLimits): one over a bound is refused with the
// *revision.YAMLLimitError (matching repository.ErrInvalidInput); ctx
// ending stops the reading.
func parseResourceFiles(ctx context.Context, lim *revision.YAMLLimits, files revision.Files, needles ...string) ([]*resourceFile, error) {
	var out []*resourceFile
	for _, p := range files.Paths() {
		if !isResourceFile(p) {
			continue
		}
		data, _ := files.Get(p)
		if len(needles) > 0 && !containsAny(data, needles) {
			continue
		}
		if err := revision.CheckYAML(ctx, p, data, lim); err != nil {
			return nil, err
		}
		nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), PreserveSeqIndent: true}).Read()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", repository.ErrInvalidInput, p, err)
		}
		out = append(out, &resourceFile{path: p, nodes: nodes})
	}
	return out, nil
}

func containsAny(data []byte, needles []string) bool {
	for _, n := range needles {
		if bytes.Contains(data, []byte(n)) {
			return true
		}
	}
	return false
}

// writeResourceFiles writes the dirty files of rfs into files; a dirty file
// left without resources is removed.
func writeResourceFiles(files revision.Files, rfs []*resourceFile) (revision.Files, error) {
	for _, rf := range rfs {
		if !rf.dirty {
			continue
		}
		if len(rf.nodes) == 0 {
			files = files.Without(rf.path)
			continue
		}
		var buf bytes.Buffer
		if err := (kio.ByteWriter{Writer: &buf}).Write(rf.nodes); err != nil {
			return revision.Files{}, fmt.Errorf("write %s: %w", rf.path, err)
		}
		var err error
		if files, err = files.With(rf.path, buf.Bytes()); err != nil {
			return revision.Files{}, err
		}
	}
	return files, nil
}

// readerAnnotations are the annotations kio's reader adds, which are not
// part of a resource.
var readerAnnotations = []string{kioutil.IndexAnnotation, kioutil.LegacyIndexAnnotation, kioutil.SeqIndentAnnotation}

// nodeMap returns n as a map, without the reader's annotations.
func nodeMap(n *yaml.RNode) (map[string]any, error) {
	m, err := n.Map()
	if err != nil {
		return nil, err
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			for _, a := range readerAnnotations {
				delete(ann, a)
			}
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	return m, nil
}

// nodeString returns n as YAML without the reader's annotations, for
// comparisons.
func nodeString(n *yaml.RNode) string {
	c := n.Copy()
	for _, a := range readerAnnotations {
		_, _ = c.Pipe(yaml.ClearAnnotation(a))
	}
	s, err := c.String()
	if err != nil {
		return ""
	}
	return s
}

// apiGroup returns the group of a resource's apiVersion.
func apiGroup(n *yaml.RNode) string {
	g, _ := splitAPIVersion(n.GetApiVersion())
	return g
}

// sameKind reports whether two resources have the same group and kind.
func sameKind(a, b *yaml.RNode) bool {
	return a.GetKind() == b.GetKind() && apiGroup(a) == apiGroup(b)
}

// resourceID formats a resource for messages.
func resourceID(n *yaml.RNode) string {
	id := n.GetKind() + "/" + n.GetName()
	if ns := n.GetNamespace(); ns != "" {
		id = n.GetKind() + "/" + ns + "/" + n.GetName()
	}
	return strings.TrimPrefix(id, "/")
}
