package pipeline

import (
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// annotation reads one annotation straight from the node tree, without
// decoding the whole metadata as kyaml's GetMeta does.
func annotation(n *yaml.RNode, key string) (string, bool) {
	m := n.YNode()
	if m == nil || m.Kind != yaml.MappingNode {
		return "", false
	}
	md := mapValue(m, "metadata")
	if md == nil {
		return "", false
	}
	an := mapValue(md, "annotations")
	if an == nil {
		return "", false
	}
	if v := mapValue(an, key); v != nil {
		return v.Value, true
	}
	return "", false
}

func annotationValue(n *yaml.RNode, key string) string {
	v, _ := annotation(n, key)
	return v
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// fileAnnotations is kioutil.GetFileAnnotations without GetMeta: the
// internal path and index, else the legacy ones.
func fileAnnotations(n *yaml.RNode) (string, string) {
	p, ok := annotation(n, kioutil.PathAnnotation)
	if !ok {
		p, _ = annotation(n, kioutil.LegacyPathAnnotation)
	}
	i, ok := annotation(n, kioutil.IndexAnnotation)
	if !ok {
		i, _ = annotation(n, kioutil.LegacyIndexAnnotation)
	}
	return p, i
}

// pathIndex is the path and index annotations of an item in both
// spellings.
type pathIndex struct {
	path, index, legacyPath, legacyIndex             string
	hasPath, hasIndex, hasLegacyPath, hasLegacyIndex bool
}

func readPathIndex(n *yaml.RNode) pathIndex {
	var s pathIndex
	s.path, s.hasPath = annotation(n, kioutil.PathAnnotation)
	s.index, s.hasIndex = annotation(n, kioutil.IndexAnnotation)
	s.legacyPath, s.hasLegacyPath = annotation(n, kioutil.LegacyPathAnnotation)
	s.legacyIndex, s.hasLegacyIndex = annotation(n, kioutil.LegacyIndexAnnotation)
	return s
}

// reconcilePathIndex mirrors a function's change of one spelling of the
// path or index annotation to the other, as kyaml's kio.Pipeline does. It
// returns an error when both were changed to different values.
func reconcilePathIndex(n *yaml.RNode, before *pathIndex) error {
	now := readPathIndex(n)
	pairs := []struct {
		key, legacyKey    string
		old, oldLegacy    string
		cur, curLegacy    string
		hasCur, hasLegacy bool
	}{
		{kioutil.PathAnnotation, kioutil.LegacyPathAnnotation, "", "", now.path, now.legacyPath, now.hasPath, now.hasLegacyPath},
		{kioutil.IndexAnnotation, kioutil.LegacyIndexAnnotation, "", "", now.index, now.legacyIndex, now.hasIndex, now.hasLegacyIndex},
	}
	if before != nil {
		pairs[0].old, pairs[0].oldLegacy = before.path, before.legacyPath
		pairs[1].old, pairs[1].oldLegacy = before.index, before.legacyIndex
	}
	for _, p := range pairs {
		switch {
		case p.hasCur && !p.hasLegacy:
			if err := n.PipeE(yaml.SetAnnotation(p.legacyKey, p.cur)); err != nil {
				return err
			}
		case p.hasLegacy && !p.hasCur:
			if err := n.PipeE(yaml.SetAnnotation(p.key, p.curLegacy)); err != nil {
				return err
			}
		case p.cur == p.curLegacy || before == nil:
		case p.cur != p.old && p.curLegacy == p.oldLegacy:
			if err := n.PipeE(yaml.SetAnnotation(p.legacyKey, p.cur)); err != nil {
				return err
			}
		case p.curLegacy != p.oldLegacy && p.cur == p.old:
			if err := n.PipeE(yaml.SetAnnotation(p.key, p.curLegacy)); err != nil {
				return err
			}
		default:
			return errMismatchedAnnotations
		}
	}
	return nil
}
