package fnruntime

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/configasdata/cad/internal/imageref"
	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

type imageSpec struct{ name, newName, newTag, digest string }

// setImage ports the catalog's set-image: the containers and init
// containers of Pods and pod templates, and the fields additionalImageFields
// names (kustomize field specs: group, version and kind select resources,
// path is slash-separated with "name[]" stepping into every element of a
// list; existing fields only, as create adds no image).
func setImage(ctx context.Context, rl *pipeline.ResourceList) error {
	fc := rl.FunctionConfig
	var img imageSpec
	var extra []fieldSpec
	fail := configErr
	switch {
	case fc.IsNilOrEmpty():
		return fail("must specify `name`")
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
	default:
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
	}
	if img.name == "" {
		return fail("must specify `name`")
	}
	if img.newName == "" && img.newTag == "" && img.digest == "" {
		return fail("must specify one of `newName`, `newTag`, or `digest`")
	}
	match, err := regexp.Compile("^" + img.name + "(@sha256)?(:[a-zA-Z0-9_.{}-]*)?$")
	if err != nil {
		return fail(err.Error())
	}
	count := 0
	update := func(podSpec *yaml.RNode) error {
		if podSpec == nil {
			return nil
		}
		// "iniContainers" is the catalog's spelling.
		for _, c := range append(getSlice(podSpec, "iniContainers"), getSlice(podSpec, "containers")...) {
			old, _ := nestedString(c, "image")
			if !match.MatchString(old) {
				continue
			}
			nn := newImageName(old, img)
			if nn == old {
				continue
			}
			if err := setNestedString(c, nn, "image"); err != nil {
				return err
			}
			count++
		}
		return nil
	}
	for _, o := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		switch o.GetKind() {
		case "Pod":
			err = update(getMap(o, "spec"))
		case "Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "PodTemplate":
			err = update(getMap(o, "spec", "template", "spec"))
		}
		if err != nil {
			r := errorResult(err.Error())
			r.ResourceRef = &pipeline.ResourceRef{APIVersion: o.GetApiVersion(), Kind: o.GetKind(), Name: o.GetName(), Namespace: o.GetNamespace()}
			rl.Results = append(rl.Results, r)
		}
	}
	for _, o := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		g, v := groupVersion(o.GetApiVersion())
		for _, fs := range extra {
			if (fs.Group != "" && fs.Group != g) || (fs.Version != "" && fs.Version != v) || (fs.Kind != "" && fs.Kind != o.GetKind()) {
				continue
			}
			visitFieldPath(o.YNode(), strings.Split(strings.Trim(fs.Path, "/"), "/"), func(n *yaml.Node) {
				if n.Kind != yaml.ScalarNode || !match.MatchString(n.Value) {
					return
				}
				if nn := newImageName(n.Value, img); nn != n.Value {
					n.Value, n.Tag, n.Style = nn, yaml.NodeTagString, 0
					count++
				}
			})
		}
	}
	rl.Results = append(rl.Results, info(fmt.Sprintf("summary: updated a total of %v image(s)", count)))
	return nil
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
