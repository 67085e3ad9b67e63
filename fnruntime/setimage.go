package fnruntime

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/configasdata/cad/internal/imageref"
	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

type imageSpec struct{ name, newName, newTag, digest string }

// defaultImageFields are the standard image fields the set-image README
// links to (kustomize's builtin image field specs of its time): the
// containers and init containers of a pod spec and of a template's pod
// spec, in a resource of any kind.
var defaultImageFields = []fieldSpec{
	{Path: "spec/containers[]/image"},
	{Path: "spec/initContainers[]/image"},
	{Path: "spec/template/spec/containers[]/image"},
	{Path: "spec/template/spec/initContainers[]/image"},
}

// setImage is the catalog's set-image v0.1.1, as its README and examples
// document it: every image field of the standard fields
// (defaultImageFields: containers and initContainers, in any kind) and of
// additionalImageFields (kustomize field specs: group, version and kind
// select resources, path is slash-separated with "name[]" stepping into
// every element of a list; existing fields only, as create adds no image)
// whose image is name (any tag or digest) gets newName, newTag or digest.
// Each image changed gets an info result, "set image from <old> to
// <new>", naming the resource, its file and the field (its path the field
// names joined by dots, list elements unmarked: spec.containers.image),
// ordered by file; nothing changed is one info result, "no images
// changed". A config without name, without any of newName, newTag and
// digest, or with both newTag and digest is a config error, worded as the
// release words it.
func setImage(ctx context.Context, rl *pipeline.ResourceList) error {
	fc := rl.FunctionConfig
	var img imageSpec
	var extra []fieldSpec
	fail := configErr
	switch {
	case fc.IsNilOrEmpty():
		return fail("missing image name")
	case isGVK(fc, "", "v1", "ConfigMap"):
		for k, v := range configData(fc) {
			switch k {
			case "name":
				img.name = v
			case "newName":
				img.newName = v
			case "newTag":
				img.newTag = v
			case "digest":
				img.digest = v
			default:
				return fail(fmt.Sprintf("ConfigMap has wrong field name %v", k))
			}
		}
	case isGVK(fc, "fn.kpt.dev", "v1alpha1", "SetImage"):
		img.name, _ = nestedString(fc, "image", "name")
		img.newName, _ = nestedString(fc, "image", "newName")
		img.newTag, _ = nestedString(fc, "image", "newTag")
		img.digest, _ = nestedString(fc, "image", "digest")
		if f := fc.Field("additionalImageFields"); f != nil && !f.Value.IsNil() {
			str, _ := f.Value.String()
			if err := yaml.Unmarshal([]byte(str), &extra); err != nil {
				return fail(err.Error())
			}
			for i, fs := range extra {
				if fs.Path == "" {
					return fail(fmt.Sprintf("additionalImageFields[%d]: path is required", i))
				}
			}
		}
	default:
		return fail("`functionConfig` must be a `ConfigMap` or `SetImage`")
	}
	switch {
	case img.name == "":
		return fail("missing image name")
	case img.newName == "" && img.newTag == "" && img.digest == "":
		return fail("missing image newName, newTag, or digest")
	case img.newTag != "" && img.digest != "":
		return fail("image newTag and digest both set")
	}
	match, err := regexp.Compile("^" + img.name + "(@sha256)?(:[a-zA-Z0-9_.{}-]*)?$")
	if err != nil {
		return fail(err.Error())
	}
	specs := append(append([]fieldSpec(nil), defaultImageFields...), extra...)
	var changed pipeline.Results
	for _, o := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		g, v := groupVersion(o.GetApiVersion())
		file, index := itemPath(o), itemIndex(o)
		seen := map[*yaml.Node]bool{} // a field two specs name changes once
		for _, fs := range specs {
			if (fs.Group != "" && fs.Group != g) || (fs.Version != "" && fs.Version != v) || (fs.Kind != "" && fs.Kind != o.GetKind()) {
				continue
			}
			segs := strings.Split(strings.Trim(fs.Path, "/"), "/")
			visitFieldPath(o.YNode(), segs, func(n *yaml.Node) {
				if seen[n] || n.Kind != yaml.ScalarNode || !match.MatchString(n.Value) {
					return
				}
				seen[n] = true
				old := n.Value
				nn := newImageName(old, img)
				if nn == old {
					return
				}
				n.Value, n.Tag, n.Style = nn, yaml.NodeTagString, 0
				r := info(fmt.Sprintf("set image from %s to %s", old, nn))
				r.ResourceRef = &pipeline.ResourceRef{APIVersion: o.GetApiVersion(), Kind: o.GetKind(), Name: o.GetName(), Namespace: o.GetNamespace()}
				r.Field = &pipeline.Field{Path: fieldNames(segs), CurrentValue: old, ProposedValue: nn}
				if file != "" {
					r.File = &pipeline.File{Path: file, Index: index}
				}
				changed = append(changed, r)
			})
		}
	}
	if len(changed) == 0 {
		rl.Results = append(rl.Results, info("no images changed"))
		return nil
	}
	sort.SliceStable(changed, func(i, j int) bool {
		a, b := changed[i].File, changed[j].File
		if a == nil || b == nil {
			return a == nil && b != nil
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Index < b.Index
	})
	rl.Results = append(rl.Results, changed...)
	return nil
}

// fieldNames is a field spec path as set-image's results name it: its
// field names joined by dots, "[]" dropped (spec.containers.image).
func fieldNames(segs []string) string {
	names := make([]string, len(segs))
	for i, s := range segs {
		names[i] = strings.TrimSuffix(s, "[]")
	}
	return strings.Join(names, ".")
}

// visitFieldPath calls fn with every node at path under n, a field spec
// path whose "name[]" segments step into each element of a list.
func visitFieldPath(n *yaml.Node, path []string, fn func(*yaml.Node)) {
	if n == nil {
		return
	}
	if len(path) == 0 {
		fn(n)
		return
	}
	if n.Kind != yaml.MappingNode {
		return
	}
	seg, list := strings.CutSuffix(path[0], "[]")
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != seg {
			continue
		}
		v := n.Content[i+1]
		if !list {
			visitFieldPath(v, path[1:], fn)
			return
		}
		if v.Kind == yaml.SequenceNode {
			for _, el := range v.Content {
				visitFieldPath(el, path[1:], fn)
			}
		}
		return
	}
}

// splitImage splits an image into name, ":tag" and "@digest", ignoring a
// registry host's port (internal/imageref).
func splitImage(s string) (name, tag, digest string) {
	r := imageref.Split(s)
	name = r.Name
	if r.Tag != "" {
		tag = ":" + r.Tag
	}
	if r.Digest != "" {
		digest = "@" + r.Digest
	}
	return name, tag, digest
}

func newImageName(old string, img imageSpec) string {
	name, tag, digest := splitImage(old)
	if img.newName != "" {
		name = img.newName
	}
	if img.newTag != "" {
		tag = ":" + img.newTag
	}
	if img.digest != "" {
		tag = "@" + img.digest
	}
	if tag == "" {
		return name + digest
	}
	return name + tag
}

// itemIndex is the index of n in its file (its index annotation); 0 when
// it has none or it is not a number.
func itemIndex(n *yaml.RNode) int {
	a := n.GetAnnotations()
	s := a[kioutil.IndexAnnotation]
	if s == "" {
		s = a[kioutil.LegacyIndexAnnotation]
	}
	i, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return i
}
