package update

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/revision"
)

// AddMergeKeys returns files with kpt's merge keys on every KRM resource
// that lacks them, as kpt adds them after get and update: the line comment
// "# kpt-merge: <namespace>/<name>" on the metadata key and the
// upstream-identifier annotation "<group>|<kind>|<namespace or
// default>|<name>". Files that do not read as KRM are left alone.
func AddMergeKeys(files revision.Files) (revision.Files, error) {
	out := files.Map()
	for _, p := range files.Paths() {
		if !isKRMPath(p) {
			continue
		}
		b, _ := files.Get(p)
		nodes, ok := readResources(p, b)
		if !ok || len(nodes) == 0 {
			continue
		}
		changed := false
		for _, n := range nodes {
			c, err := addMergeKey(n)
			if err != nil {
				return revision.Files{}, fmt.Errorf("update: %s: %w", p, err)
			}
			changed = changed || c
		}
		if !changed {
			continue
		}
		nb, err := writeResources(nodes)
		if err != nil {
			return revision.Files{}, fmt.Errorf("update: %s: %w", p, err)
		}
		out[p] = nb
	}
	return revision.NewFiles(out)
}

func addMergeKey(n *yaml.RNode) (bool, error) {
	changed := false
	ns, name := n.GetNamespace(), n.GetName()
	if f := n.Field("metadata"); f != nil && f.Key != nil {
		if _, _, ok := mergeComment(n); !ok && f.Key.YNode().LineComment == "" {
			f.Key.YNode().LineComment = "# " + mergeCommentPrefix + " " + ns + "/" + name
			changed = true
		}
	}
	if _, ok := n.GetAnnotations()[UpstreamIdentifierAnnotation]; !ok {
		group := ""
		if g, _, found := strings.Cut(n.GetApiVersion(), "/"); found {
			group = g
		}
		idNS := ns
		if idNS == "" {
			idNS = "default"
		}
		if err := n.PipeE(yaml.SetAnnotation(UpstreamIdentifierAnnotation,
			strings.Join([]string{group, n.GetKind(), idNS, name}, "|"))); err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
}
