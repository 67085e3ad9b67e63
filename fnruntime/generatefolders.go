package fnruntime

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const (
	hierarchyV3     = "blueprints.cloud.google.com/v1alpha3"
	hierarchyV2     = "cft.dev/v1alpha2"
	hierarchyV1     = "cft.dev/v1alpha1"
	folderGroup     = "resourcemanager.cnrm.cloud.google.com"
	folderAPI       = folderGroup + "/v1beta1"
	folderKind      = "Folder"
	orgIDAnnotation = "cnrm.cloud.google.com/organization-id"
	folderRefAnn    = "cnrm.cloud.google.com/folder-ref"
)

// folderNode is a node of a resource hierarchy: the parent (organization
// or folder) at the root, folders below.
type folderNode struct {
	name     string
	kind     string // of the root: Organization or Folder
	children []*folderNode
}

// severityWarn is the severity the TypeScript SDK, which the catalog's
// generate-folders is written with, gives warnings: "warn", not the Go
// SDK's "warning".
const severityWarn pipeline.Severity = "warn"

// generateFolders is the catalog's generate-folders: every
// ResourceHierarchy item (blueprints.cloud.google.com/v1alpha3, or the older
// cft.dev/v1alpha2 and v1alpha1, which get a warning) adds one Folder
// (resourcemanager.cnrm.cloud.google.com/v1beta1) per folder of its
// hierarchy, named by the normalised dotted path ("dev.team-one") with the
// display name as written. v1alpha3 references parents natively
// (organizationRef or folderRef external at the top, folderRef name and a
// depends-on annotation below), the older versions by annotation
// (organization-id, folder-ref). spec.subtrees are reused with
// {$subtree: name}; a missing parentRef, an unsupported parentRef kind, an
// unknown subtree or a v1alpha1 layer without config entry is an error
// result that fails the step. It takes no config.
func generateFolders(_ context.Context, rl *pipeline.ResourceList) error {
	var out []*yaml.RNode
	for _, h := range rl.Items {
		if h.GetKind() != "ResourceHierarchy" {
			continue
		}
		api := h.GetApiVersion()
		ref := &pipeline.ResourceRef{APIVersion: api, Kind: h.GetKind(), Name: h.GetName(), Namespace: h.GetNamespace()}
		result := func(msg string, sev pipeline.Severity) {
			r := &pipeline.Result{Message: msg, Severity: sev, ResourceRef: ref}
			if p := itemPath(h); p != "" {
				r.File = &pipeline.File{Path: p}
			}
			rl.Results = append(rl.Results, r)
		}
		switch api {
		case hierarchyV1, hierarchyV2:
			result(fmt.Sprintf("ResourceHierarchy %s is %s, an old version of the kind; %s is the current one", h.GetName(), api, hierarchyV3), severityWarn)
		case hierarchyV3:
		default:
			continue
		}
		if api == hierarchyV1 {
			folders, msg := v1Folders(h)
			if msg != "" {
				result(msg, pipeline.SeverityError)
				continue
			}
			out = append(out, folders...)
			continue
		}
		external, _ := nestedString(h, "spec", "parentRef", "external")
		if external == "" {
			result(fmt.Sprintf("ResourceHierarchy %s has no spec.parentRef.external: the folders need an organization or folder to go under", h.GetName()), pipeline.SeverityError)
			continue
		}
		kind, ok := nestedString(h, "spec", "parentRef", "kind")
		if !ok || kind == "" {
			kind = "Organization"
		} else if kind != "Organization" && kind != "Folder" {
			result(fmt.Sprintf("ResourceHierarchy %s: spec.parentRef.kind %q is neither Organization nor Folder", h.GetName(), kind), pipeline.SeverityError)
			continue
		}
		subtrees := map[string]*folderNode{}
		var missing string
		if st := getMap(h, "spec", "subtrees"); st != nil {
			_ = st.VisitFields(func(f *yaml.MapNode) error {
				n := &folderNode{name: f.Key.YNode().Value}
				if m := addFolders(n, f.Value.YNode(), subtrees); m != "" && missing == "" {
					missing = m
				}
				subtrees[n.name] = n
				return nil
			})
		}
		root := &folderNode{name: external, kind: kind}
		if c := getMap(h, "spec"); c != nil && c.Field("config") != nil {
			if m := addFolders(root, c.Field("config").Value.YNode(), subtrees); m != "" && missing == "" {
				missing = m
			}
		}
		if missing != "" {
			result(fmt.Sprintf("ResourceHierarchy %s uses subtree %q, which spec.subtrees does not define", h.GetName(), missing), pipeline.SeverityError)
			continue
		}
		inherited := inheritableAnnotations(h)
		var walk func(n *folderNode, path []string) error
		walk = func(n *folderNode, path []string) error {
			for _, c := range n.children {
				f, err := folderManifest(c.name, path, n, inherited, h.GetNamespace(), api == hierarchyV3)
				if err != nil {
					return err
				}
				out = append(out, f)
				if err := walk(c, append(append([]string{}, path...), c.name)); err != nil {
					return err
				}
			}
			return nil
		}
		if err := walk(root, nil); err != nil {
			return err
		}
	}
	rl.Items = append(rl.Items, out...)
	return nil
}

// addFolders adds the folders of a config list to parent; it returns the
// name of a missing subtree, if any.
func addFolders(parent *folderNode, list *yaml.Node, subtrees map[string]*folderNode) string {
	if list == nil || list.Kind != yaml.SequenceNode {
		return ""
	}
	for _, c := range list.Content {
		switch c.Kind {
		case yaml.ScalarNode:
			if c.ShortTag() == yaml.NodeTagNull {
				continue
			}
			parent.children = append(parent.children, &folderNode{name: c.Value})
		case yaml.MappingNode:
			if len(c.Content) < 2 {
				continue
			}
			n := &folderNode{name: c.Content[0].Value}
			v := c.Content[1]
			switch v.Kind {
			case yaml.SequenceNode:
				if m := addFolders(n, v, subtrees); m != "" {
					return m
				}
			case yaml.MappingNode:
				name := ""
				for i := 0; i+1 < len(v.Content); i += 2 {
					if v.Content[i].Value == "$subtree" {
						name = v.Content[i+1].Value
					}
				}
				st, ok := subtrees[name]
				if !ok {
					return name
				}
				n.children = st.children
			}
			parent.children = append(parent.children, n)
		}
	}
	return ""
}

// v1Folders builds the folders of a cft.dev/v1alpha1 hierarchy: every
// folder of layer i has every folder of layer i+1 as children.
func v1Folders(h *yaml.RNode) ([]*yaml.RNode, string) {
	org, _ := nestedString(h, "spec", "organization")
	var layers []string
	for _, l := range getSlice(h, "spec", "layers") {
		layers = append(layers, l.YNode().Value)
	}
	var out []*yaml.RNode
	var build func(parent *folderNode, i int, path []string) (string, error)
	build = func(parent *folderNode, i int, path []string) (string, error) {
		if i >= len(layers) {
			return "", nil
		}
		folders := getSlice(h, "spec", "config", layers[i])
		if folders == nil {
			return fmt.Sprintf("ResourceHierarchy %s: layer %q of spec.layers has no folder list: add spec.config.%s or drop the layer", h.GetName(), layers[i], layers[i]), nil
		}
		for _, f := range folders {
			name := f.YNode().Value
			m, err := folderManifest(name, path, parent, nil, h.GetNamespace(), false)
			if err != nil {
				return "", err
			}
			out = append(out, m)
			if msg, err := build(&folderNode{name: name}, i+1, append(append([]string{}, path...), name)); msg != "" || err != nil {
				return msg, err
			}
		}
		return "", nil
	}
	msg, err := build(&folderNode{name: org, kind: "Organization"}, 0, nil)
	if err != nil {
		return nil, err.Error()
	}
	return out, msg
}

// inheritableAnnotations are a hierarchy's annotations the folders get:
// all but local-config, the function annotation and kpt's ids, paths and
// indexes.
func inheritableAnnotations(h *yaml.RNode) [][2]string {
	var out [][2]string
	m := getMap(h, "metadata", "annotations")
	if m == nil {
		return nil
	}
	_ = m.VisitFields(func(f *yaml.MapNode) error {
		k := f.Key.YNode().Value
		switch {
		case k == pipeline.LocalConfigAnnotation, k == legacyFunctionAnnotation, k == "config.k8s.io/id",
			k == "config.kubernetes.io/path", k == "config.kubernetes.io/index",
			strings.HasPrefix(k, "internal.config.kubernetes.io/"):
			return nil
		}
		out = append(out, [2]string{k, f.Value.YNode().Value})
		return nil
	})
	return out
}

func folderManifest(name string, path []string, parent *folderNode, inherited [][2]string, namespace string, nativeRef bool) (*yaml.RNode, error) {
	parentName := strings.Join(path, ".")
	if parentName == "" {
		parentName = parent.name
	}
	anns := append([][2]string{}, inherited...)
	spec := yaml.NewMapRNode(nil)
	if err := spec.PipeE(yaml.SetField("displayName", yaml.NewStringRNode(name))); err != nil {
		return nil, err
	}
	setRef := func(field, key, value string) error {
		return spec.PipeE(yaml.LookupCreate(yaml.MappingNode, field), yaml.SetField(key, yaml.NewStringRNode(value)))
	}
	switch {
	case nativeRef && len(path) == 0 && parent.kind == "Organization":
		if err := setRef("organizationRef", "external", parentName); err != nil {
			return nil, err
		}
	case nativeRef && len(path) == 0:
		if err := setRef("folderRef", "external", parentName); err != nil {
			return nil, err
		}
	case nativeRef:
		if err := setRef("folderRef", "name", normalizeFolderName(parentName)); err != nil {
			return nil, err
		}
		if namespace != "" {
			anns = append(anns, [2]string{dependsOnAnnotation, fmt.Sprintf("%s/namespaces/%s/%s/%s", folderGroup, namespace, folderKind, normalizeFolderName(parentName))})
		}
	case parent.kind == "Organization":
		anns = append(anns, [2]string{orgIDAnnotation, normalizeFolderName(parentName)})
	default:
		anns = append(anns, [2]string{folderRefAnn, normalizeFolderName(parentName)})
	}
	f := yaml.NewMapRNode(nil)
	for _, step := range []yaml.Filter{
		yaml.SetField("apiVersion", yaml.NewStringRNode(folderAPI)),
		yaml.SetField("kind", yaml.NewStringRNode(folderKind)),
		yaml.SetK8sName(normalizeFolderName(strings.Join(append(append([]string{}, path...), name), "."))),
	} {
		if err := f.PipeE(step); err != nil {
			return nil, err
		}
	}
	if len(anns) > 0 {
		am, err := f.Pipe(yaml.LookupCreate(yaml.MappingNode, "metadata", "annotations"))
		if err != nil {
			return nil, err
		}
		for _, a := range anns {
			if err := am.PipeE(yaml.SetField(a[0], yaml.NewStringRNode(a[1]))); err != nil {
				return nil, err
			}
		}
	}
	if namespace != "" {
		if err := f.PipeE(yaml.SetK8sNamespace(namespace)); err != nil {
			return nil, err
		}
	}
	return f, f.PipeE(yaml.SetField("spec", spec))
}

var (
	folderQuotes  = regexp.MustCompile(`['"]`)
	folderSpaces  = regexp.MustCompile(`[_ ]`)
	folderInvalid = regexp.MustCompile(`[^a-z0-9.\- ]`)
)

// normalizeFolderName makes a Kubernetes name of a folder path as the
// catalog does: lower case, quotes dropped, "_" and " " as "-", other
// characters outside [a-z0-9.-] dropped.
func normalizeFolderName(s string) string {
	s = strings.ToLower(s)
	s = folderQuotes.ReplaceAllString(s, "")
	s = folderSpaces.ReplaceAllString(s, "-")
	return folderInvalid.ReplaceAllString(s, "")
}
