package fnruntime

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

type imageSpec struct{ name, newName, newTag, digest string }

// setImage ports the catalog's set-image for Pods and pod templates
// (additionalImageFields is not supported).
func setImage(_ context.Context, rl *pipeline.ResourceList) error {
	fc := rl.FunctionConfig
	var img imageSpec
	fail := func(msg string) error {
		rl.Results = append(rl.Results, errorResult(msg))
		return sdkFailure()
	}
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
		if fc.Field("additionalImageFields") != nil {
			return fail("set-image: additionalImageFields is not supported by the builtin")
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
	rl.Results = append(rl.Results, info(fmt.Sprintf("summary: updated a total of %v image(s)", count)))
	return nil
}

// splitImage splits an image into name, ":tag" and "@digest", ignoring a
// registry host's port.
func splitImage(s string) (name, tag, digest string) {
	search, off := s, 0
	if i := strings.Index(s, "/"); i > 0 {
		search, off = s[i:], i
	}
	id := strings.Index(search, "@")
	ic := strings.Index(search, ":")
	switch {
	case ic < 0 && id < 0:
		return s, "", ""
	case id >= 0 && (id < ic || ic < 0):
		return s[:id+off], "", s[id+off:]
	case id >= 0 && ic >= 0:
		return s[:ic+off], s[ic+off : id+off], s[id+off:]
	}
	return s[:ic+off], s[ic+off:], ""
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
