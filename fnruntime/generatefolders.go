package fnruntime

// generate-folders, written for cad from the catalog function's public
// documentation: its README (the three ResourceHierarchy versions, config
// as the folder tree, folder names joined with dots, the folder-ref
// annotation), the input kinds' CRDs, and the three example packages
// (generate-folders-resourcehierarchy-v1, -v2, -v3), whose expected diffs
// show the Folders each version produces and whose results show the
// old-version warning with severity "warn". Where the documentation is
// silent, the choice is cad's and is said so below.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/internal/kptattr"
	"github.com/configasdata/cad/pipeline"
)

// The input kind, the versions of it the function reads, and what it
// generates.
const (
	hierarchyKind = "ResourceHierarchy"
	// hierarchyCurrent is the version the README recommends; the two
	// cft.dev versions are read too, with a warning.
	hierarchyCurrent = "blueprints.cloud.google.com/v1alpha3"
	hierarchyV2      = "cft.dev/v1alpha2"
	hierarchyV1      = "cft.dev/v1alpha1"

	ccFolderGroup      = "resourcemanager.cnrm.cloud.google.com"
	ccFolderAPIVersion = ccFolderGroup + "/v1beta1"
	ccFolderKind       = "Folder"

	// Config Connector's scope-defining annotations, which the cft.dev
	// versions' Folders carry instead of spec references, and the
	// folder-ref annotation the README describes (kpt-folder-parent turns
	// it into a reference later).
	ccOrganizationIDAnnotation = "cnrm.cloud.google.com/organization-id"
	ccFolderIDAnnotation       = "cnrm.cloud.google.com/folder-id"
	ccFolderRefAnnotation      = "cnrm.cloud.google.com/folder-ref"

	// subtreeKey is the key that, in place of a folder's list of
	// sub-folders, names an entry of spec.subtrees to use instead.
	subtreeKey = "$subtree"
)

// hierarchyVersions are the ResourceHierarchy apiVersions the function
// reads; a ResourceHierarchy of any other apiVersion is left alone.
var hierarchyVersions = map[string]bool{hierarchyCurrent: true, hierarchyV2: true, hierarchyV1: true}

// generateFolders is the catalog's generate-folders (v0.1): every
// ResourceHierarchy among the items (the README: they are items, not the
// function config, which is ignored) becomes Config Connector Folders
// (resourcemanager.cnrm.cloud.google.com/v1beta1), one per folder of its
// tree; the ResourceHierarchy itself stays as it is.
//
// The tree: in blueprints.cloud.google.com/v1alpha3 and cft.dev/v1alpha2,
// spec.config is a list whose entries are a folder name or a map from a
// folder name to its sub-folders, given the same way, or to
// {$subtree: <name>}, which uses the list spec.subtrees.<name> (subtrees
// may use subtrees). In cft.dev/v1alpha1, spec.layers names the levels
// from the top and spec.config.<layer> lists the folders of that level,
// each of which is created under every folder of the level above.
//
// A Folder's spec.displayName is the name as written; its metadata.name
// is the name in lower case with each run of characters other than
// letters and digits turned into one "-" (none at either end), after its
// parent's metadata.name and a "." for a sub-folder ("Team \"One\"" under
// "Dev" is dev.team-one). It has the hierarchy's namespace and its
// annotations, except kpt's and the KRM function specification's own
// (config.kubernetes.io/*, internal.config.kubernetes.io/*,
// config.k8s.io/*), as the catalog's annotation examples intend.
//
// How a Folder names its parent depends on the version, as the example
// packages show. v1alpha3: a top folder has spec.organizationRef.external
// (spec.parentRef.kind Organization, the default) or
// spec.folderRef.external (kind Folder) set to spec.parentRef.external; a
// sub-folder has spec.folderRef.name its parent's name and, when the
// hierarchy has a namespace, the depends-on annotation
// resourcemanager.cnrm.cloud.google.com/namespaces/<ns>/Folder/<parent>
// (without a namespace there is no reference that kpt could resolve, so
// cad writes none). The cft.dev versions reference by annotation: a top
// folder has cnrm.cloud.google.com/organization-id (v1alpha1's
// spec.organization, or v1alpha2's parentRef of kind Organization) or
// cnrm.cloud.google.com/folder-id (kind Folder, Config Connector's
// folder-scope annotation), a sub-folder cnrm.cloud.google.com/folder-ref
// its parent's name; each cft.dev hierarchy also gets a warning
// (severity "warn", as the v1 example's results show) that it is an old
// version.
//
// Generating is idempotent (cad's choice, so that a package renders
// again to the same files): a Folder already among the items with the
// name and namespace of one generated is replaced by it in its file.
// Errors are results of severity error, worded by cad, and leave that
// hierarchy's Folders out: no parent (no spec.parentRef.external, or no
// spec.organization in v1alpha1), a parentRef kind other than
// Organization or Folder, no spec.config, a v1alpha1 layer without a
// folder list, an entry of the wrong shape, an unknown or self-using
// subtree, a name without a letter or digit, and two folders with the
// same metadata.name. It returns a Go error only when it cannot build a
// node.
func generateFolders(ctx context.Context, rl *pipeline.ResourceList) error {
	var out []*yaml.RNode
	taken := map[string]string{} // namespace/name -> owning hierarchy
	for _, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if it.GetKind() != hierarchyKind || !hierarchyVersions[it.GetApiVersion()] {
			continue
		}
		if v := it.GetApiVersion(); v != hierarchyCurrent {
			rl.Results = append(rl.Results, hierarchyResult(it, "warn",
				fmt.Sprintf("%s %s is %s, an old version of the kind; %s is the current one", hierarchyKind, it.GetName(), v, hierarchyCurrent)))
		}
		folders, err := planHierarchy(it)
		if err != nil {
			rl.Results = append(rl.Results, hierarchyResult(it, pipeline.SeverityError, err.Error()))
			continue
		}
		var nodes []*yaml.RNode
		clash := ""
		mine := map[string]bool{}
		for _, f := range folders {
			key := it.GetNamespace() + "/" + f.name
			if mine[key] {
				clash = fmt.Sprintf("%s %s has two folders named %s: give them names that differ in letters or digits", hierarchyKind, it.GetName(), f.name)
				break
			}
			if owner, ok := taken[key]; ok {
				clash = fmt.Sprintf("%s %s generates folder %s, which %s %s generates too", hierarchyKind, it.GetName(), f.name, hierarchyKind, owner)
				break
			}
			mine[key] = true
			n, err := f.node(it)
			if err != nil {
				return err
			}
			nodes = append(nodes, n)
		}
		if clash != "" {
			rl.Results = append(rl.Results, hierarchyResult(it, pipeline.SeverityError, clash))
			continue
		}
		for _, n := range nodes {
			taken[n.GetNamespace()+"/"+n.GetName()] = it.GetName()
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil
	}
	// Replace Folders generated by an earlier run in place; append the rest.
	existing := map[string]int{}
	for i, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if it.GetApiVersion() == ccFolderAPIVersion && it.GetKind() == ccFolderKind {
			existing[it.GetNamespace()+"/"+it.GetName()] = i
		}
	}
	for _, n := range out {
		i, ok := existing[n.GetNamespace()+"/"+n.GetName()]
		if !ok {
			rl.Items = append(rl.Items, n)
			continue
		}
		if err := keepPlace(rl.Items[i], n); err != nil {
			return err
		}
		rl.Items[i] = n
	}
	return nil
}

// keepPlace gives a regenerated Folder the file, position and kpt
// bookkeeping of the one it replaces: the path and index annotations in
// both spellings, kpt's internal annotations, and the blueprint
// attribution kpt recorded on it.
func keepPlace(old, fresh *yaml.RNode) error {
	for _, k := range annotationKeys(old) {
		keep := k == kioutil.PathAnnotation || k == kioutil.IndexAnnotation ||
			k == kioutil.LegacyPathAnnotation || k == kioutil.LegacyIndexAnnotation ||
			k == kptattr.BlueprintAnnotation || strings.HasPrefix(k, "internal.config.kubernetes.io/")
		if !keep {
			continue
		}
		if err := fresh.PipeE(yaml.SetAnnotation(k, old.GetAnnotations()[k])); err != nil {
			return err
		}
	}
	return nil
}

// plannedFolder is one Folder to generate.
type plannedFolder struct {
	name    string // metadata.name
	display string // spec.displayName, the name as written
	parent  string // the parent Folder's metadata.name; "" for a top folder
	// For a top folder: the kind (Organization or Folder) and id of the
	// resource it goes under.
	parentKind, parentID string
}

// planHierarchy returns the folders of a ResourceHierarchy, parents
// before their sub-folders, or an error whose text is the result message.
func planHierarchy(h *yaml.RNode) ([]plannedFolder, error) {
	if h.GetApiVersion() == hierarchyV1 {
		return planLayers(h)
	}
	kind, _ := nestedString(h, "spec", "parentRef", "kind")
	if kind == "" {
		kind = "Organization"
	}
	if kind != "Organization" && kind != "Folder" {
		return nil, fmt.Errorf("%s %s: spec.parentRef.kind %q is neither Organization nor Folder", hierarchyKind, h.GetName(), kind)
	}
	id, _ := nestedString(h, "spec", "parentRef", "external")
	if id == "" {
		return nil, fmt.Errorf("%s %s has no spec.parentRef.external: the folders need an organization or folder to go under", hierarchyKind, h.GetName())
	}
	config, err := h.Pipe(yaml.Lookup("spec", "config"))
	if err != nil || config == nil || config.YNode().Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s %s has no spec.config: list the folders to generate there", hierarchyKind, h.GetName())
	}
	t := &treeWalk{hierarchy: h, subtrees: getMap(h, "spec", "subtrees"), using: map[string]bool{}}
	if err := t.list(config.YNode(), ""); err != nil {
		return nil, err
	}
	for i := range t.folders {
		if t.folders[i].parent == "" {
			t.folders[i].parentKind, t.folders[i].parentID = kind, id
		}
	}
	return t.folders, nil
}

// treeWalk collects the folders of a v1alpha3 or v1alpha2 config.
type treeWalk struct {
	hierarchy *yaml.RNode
	subtrees  *yaml.RNode     // spec.subtrees, or nil
	using     map[string]bool // subtrees being expanded, to refuse a loop
	folders   []plannedFolder
}

// list adds the folders of a list of entries under parent.
func (t *treeWalk) list(n *yaml.Node, parent string) error {
	for _, e := range n.Content {
		switch e.Kind {
		case yaml.ScalarNode:
			if _, err := t.add(e.Value, parent); err != nil {
				return err
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(e.Content); i += 2 {
				name, err := t.add(e.Content[i].Value, parent)
				if err != nil {
					return err
				}
				if err := t.children(e.Content[i+1], name, e.Content[i].Value); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("%s %s: an entry under %s is neither a folder name nor a folder with its sub-folders", hierarchyKind, t.hierarchy.GetName(), t.where(parent))
		}
	}
	return nil
}

// children adds the sub-folders of folder name (written display): a list,
// a {$subtree: <name>} reference, or nothing.
func (t *treeWalk) children(v *yaml.Node, name, display string) error {
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag == yaml.NodeTagNull:
		return nil
	case v.Kind == yaml.SequenceNode:
		return t.list(v, name)
	case v.Kind == yaml.MappingNode && len(v.Content) == 2 && v.Content[0].Value == subtreeKey:
		ref := v.Content[1].Value
		var def *yaml.RNode
		if t.subtrees != nil {
			if f := t.subtrees.Field(ref); f != nil {
				def = f.Value
			}
		}
		if def == nil {
			return fmt.Errorf("%s %s uses subtree %q, which spec.subtrees does not define", hierarchyKind, t.hierarchy.GetName(), ref)
		}
		if t.using[ref] {
			return fmt.Errorf("%s %s: subtree %q uses itself", hierarchyKind, t.hierarchy.GetName(), ref)
		}
		if def.YNode().Kind != yaml.SequenceNode {
			return fmt.Errorf("%s %s: spec.subtrees.%s is not a list of folders", hierarchyKind, t.hierarchy.GetName(), ref)
		}
		t.using[ref] = true
		defer delete(t.using, ref)
		return t.list(def.YNode(), name)
	default:
		return fmt.Errorf("%s %s: the sub-folders of %q are neither a list nor a %s reference", hierarchyKind, t.hierarchy.GetName(), display, subtreeKey)
	}
}

// add records folder display under parent and returns its metadata.name.
func (t *treeWalk) add(display, parent string) (string, error) {
	name, err := childFolderName(t.hierarchy, display, parent)
	if err != nil {
		return "", err
	}
	t.folders = append(t.folders, plannedFolder{name: name, display: display, parent: parent})
	return name, nil
}

func (t *treeWalk) where(parent string) string {
	if parent == "" {
		return "spec.config"
	}
	return "folder " + parent
}

// planLayers returns the folders of a cft.dev/v1alpha1 hierarchy: the
// folders of each layer under every folder of the layer above.
func planLayers(h *yaml.RNode) ([]plannedFolder, error) {
	org, _ := nestedString(h, "spec", "organization")
	if org == "" {
		return nil, fmt.Errorf("%s %s has no spec.organization: the folders need an organization to go under", hierarchyKind, h.GetName())
	}
	var layers [][]string
	for _, l := range getSlice(h, "spec", "layers") {
		layer := l.YNode().Value
		names := getSlice(h, "spec", "config", layer)
		if names == nil {
			return nil, fmt.Errorf("%s %s: layer %q of spec.layers has no folder list: add spec.config.%s or drop the layer", hierarchyKind, h.GetName(), layer, layer)
		}
		var level []string
		for _, n := range names {
			if n.YNode().Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s %s: spec.config.%s must list folder names", hierarchyKind, h.GetName(), layer)
			}
			level = append(level, n.YNode().Value)
		}
		layers = append(layers, level)
	}
	if len(layers) == 0 {
		return nil, fmt.Errorf("%s %s has no spec.layers: name the levels of folders there", hierarchyKind, h.GetName())
	}
	var out []plannedFolder
	var under func(depth int, parent string) error
	under = func(depth int, parent string) error {
		if depth == len(layers) {
			return nil
		}
		for _, display := range layers[depth] {
			name, err := childFolderName(h, display, parent)
			if err != nil {
				return err
			}
			f := plannedFolder{name: name, display: display, parent: parent}
			if parent == "" {
				f.parentKind, f.parentID = "Organization", org
			}
			out = append(out, f)
			if err := under(depth+1, name); err != nil {
				return err
			}
		}
		return nil
	}
	if err := under(0, ""); err != nil {
		return nil, err
	}
	return out, nil
}

// childFolderName is the metadata.name of folder display under parent.
func childFolderName(h *yaml.RNode, display, parent string) (string, error) {
	base := folderNamePart(display)
	if base == "" {
		return "", fmt.Errorf("%s %s: folder %q has no letter or digit to name its Folder by", hierarchyKind, h.GetName(), display)
	}
	if parent == "" {
		return base, nil
	}
	return parent + "." + base, nil
}

// folderNamePart turns a folder's display name into a name segment: lower
// case ASCII letters and digits, each run of anything else one "-", none
// at either end.
func folderNamePart(display string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(display) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return b.String()
}

// node builds the Folder for f of hierarchy h. Field order: metadata name,
// annotations, namespace; spec displayName, then the parent reference.
func (f plannedFolder) node(h *yaml.RNode) (*yaml.RNode, error) {
	n := yaml.NewMapRNode(nil)
	n.SetApiVersion(ccFolderAPIVersion)
	n.SetKind(ccFolderKind)
	if err := n.SetName(f.name); err != nil {
		return nil, err
	}
	// Annotation values are written plain where YAML allows it, as the
	// example packages show them (kyaml's SetAnnotation would quote them).
	set := func(k, v string) error {
		m, err := n.Pipe(yaml.LookupCreate(yaml.MappingNode, yaml.MetadataField, yaml.AnnotationsField))
		if err != nil {
			return err
		}
		return m.PipeE(yaml.SetField(k, yaml.NewStringRNode(v)))
	}
	for _, k := range annotationKeys(h) {
		if strings.HasPrefix(k, "config.kubernetes.io/") || strings.HasPrefix(k, "internal.config.kubernetes.io/") || strings.HasPrefix(k, "config.k8s.io/") {
			continue
		}
		if err := set(k, h.GetAnnotations()[k]); err != nil {
			return nil, err
		}
	}
	ns := h.GetNamespace()
	refsInSpec := h.GetApiVersion() == hierarchyCurrent
	var err error
	switch {
	case f.parent != "" && refsInSpec && ns != "":
		err = set("config.kubernetes.io/depends-on", ccFolderGroup+"/namespaces/"+ns+"/"+ccFolderKind+"/"+f.parent)
	case f.parent != "" && !refsInSpec:
		err = set(ccFolderRefAnnotation, f.parent)
	case f.parent == "" && !refsInSpec && f.parentKind == "Folder":
		err = set(ccFolderIDAnnotation, f.parentID)
	case f.parent == "" && !refsInSpec:
		err = set(ccOrganizationIDAnnotation, f.parentID)
	}
	if err != nil {
		return nil, err
	}
	if ns != "" {
		if err := n.SetNamespace(ns); err != nil {
			return nil, err
		}
	}
	if err := setNestedString(n, f.display, "spec", "displayName"); err != nil {
		return nil, err
	}
	if !refsInSpec {
		return n, nil
	}
	switch {
	case f.parent != "":
		err = setNestedString(n, f.parent, "spec", "folderRef", "name")
	case f.parentKind == "Folder":
		err = setNestedString(n, f.parentID, "spec", "folderRef", "external")
	default:
		err = setNestedString(n, f.parentID, "spec", "organizationRef", "external")
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

// annotationKeys returns n's annotation keys in the order they are
// written.
func annotationKeys(n *yaml.RNode) []string {
	m := getMap(n, "metadata", "annotations")
	if m == nil {
		return nil
	}
	var keys []string
	c := m.YNode().Content
	for i := 0; i+1 < len(c); i += 2 {
		keys = append(keys, c[i].Value)
	}
	return keys
}

// hierarchyResult is a result about ResourceHierarchy h, naming its file
// and its index in the file.
func hierarchyResult(h *yaml.RNode, sev pipeline.Severity, msg string) *pipeline.Result {
	r := &pipeline.Result{Message: msg, Severity: sev,
		ResourceRef: &pipeline.ResourceRef{APIVersion: h.GetApiVersion(), Kind: h.GetKind(), Name: h.GetName(), Namespace: h.GetNamespace()}}
	if p := itemPath(h); p != "" {
		r.File = &pipeline.File{Path: p}
		if i, err := strconv.Atoi(h.GetAnnotations()[kioutil.IndexAnnotation]); err == nil {
			r.File.Index = i
		}
	}
	return r
}
