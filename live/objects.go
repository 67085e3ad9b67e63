package live

import (
	"bytes"
	"context"
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Object identifies one resource of a package as it is applied to a
// cluster: its group, version and kind, namespace (empty when the package
// gives none) and name, and the package file that holds it.
type Object struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
	// File is the package-relative path of the file the resource is in.
	File string
}

// String returns the object as group/version, Kind namespace/name.
func (o Object) String() string {
	id := o.Name
	if o.Namespace != "" {
		id = o.Namespace + "/" + o.Name
	}
	return o.GVK.GroupVersion().String() + ", Kind=" + o.GVK.Kind + " " + id
}

// Objects returns the resources of files that are applied to a cluster, in
// file path order and, within a file, in document order. It reads every
// .yaml and .yml file of the package, subpackages included, and leaves
// out:
//
//   - the Kptfile (which has no extension) and cad's package file
//     (revision.PackageFileName), and any kpt.dev Kptfile or kustomize
//     Kustomization resource;
//   - resources annotated config.kubernetes.io/local-config with any value
//     other than "false" (kpt's rule: they configure functions and are
//     never applied).
//
// It returns an error matching repository.ErrInvalidInput, naming the
// file, for a file that does not parse as YAML or a resource without
// apiVersion, kind or metadata.name, and no objects.
func Objects(files revision.Files) ([]Object, error) {
	var out []Object
	for _, p := range files.Paths() {
		base := path.Base(p)
		ext := path.Ext(p)
		if base == revision.KptfileName || base == revision.PackageFileName || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		data, _ := files.Get(p)
		if err := revision.CheckYAML(context.Background(), p, data, nil); err != nil {
			return nil, fmt.Errorf("live status: %w", err)
		}
		nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
		if err != nil {
			return nil, invalidf("read %s: %v", p, err)
		}
		for i, n := range nodes {
			obj, skip, err := objectOf(n, p)
			if err != nil {
				return nil, invalidf("read %s: resource %d: %v", p, i+1, err)
			}
			if !skip {
				out = append(out, obj)
			}
		}
	}
	return out, nil
}

// objectOf returns the identity of n, or skip for a resource that is never
// applied.
func objectOf(n *yaml.RNode, file string) (obj Object, skip bool, err error) {
	if pipeline.IsLocalConfig(n) {
		return Object{}, true, nil
	}
	apiVersion, kind, name := n.GetApiVersion(), n.GetKind(), n.GetName()
	if apiVersion == "" || kind == "" {
		return Object{}, false, fmt.Errorf("not a Kubernetes resource (no apiVersion or kind)")
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return Object{}, false, fmt.Errorf("apiVersion %q: %v", apiVersion, err)
	}
	if (gv.Group == "kpt.dev" && kind == "Kptfile") || (gv.Group == "kustomize.config.k8s.io" && kind == "Kustomization") {
		return Object{}, true, nil
	}
	if name == "" {
		return Object{}, false, fmt.Errorf("%s %s has no metadata.name", apiVersion, kind)
	}
	return Object{GVK: gv.WithKind(kind), Namespace: n.GetNamespace(), Name: name, File: file}, false, nil
}

func invalidf(format string, args ...any) error {
	return repository.Errorf("live status", "", revision.Key{}, repository.ErrInvalidInput, format, args...)
}

// clusterScoped lists the kinds of the built-in Kubernetes APIs that are
// not namespaced, by group/Kind, for Readers that do not implement
// [Scoper].
var clusterScoped = map[string]bool{
	"/Namespace": true, "/Node": true, "/PersistentVolume": true, "/ComponentStatus": true,
	"rbac.authorization.k8s.io/ClusterRole":                         true,
	"rbac.authorization.k8s.io/ClusterRoleBinding":                  true,
	"apiextensions.k8s.io/CustomResourceDefinition":                 true,
	"apiregistration.k8s.io/APIService":                             true,
	"storage.k8s.io/StorageClass":                                   true,
	"storage.k8s.io/CSIDriver":                                      true,
	"storage.k8s.io/CSINode":                                        true,
	"storage.k8s.io/VolumeAttachment":                               true,
	"scheduling.k8s.io/PriorityClass":                               true,
	"node.k8s.io/RuntimeClass":                                      true,
	"admissionregistration.k8s.io/MutatingWebhookConfiguration":     true,
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration":   true,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicy":        true,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding": true,
	"certificates.k8s.io/CertificateSigningRequest":                 true,
	"flowcontrol.apiserver.k8s.io/FlowSchema":                       true,
	"flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration":       true,
	"networking.k8s.io/IngressClass":                                true,
}

func builtinNamespaced(gvk schema.GroupVersionKind) bool {
	return !clusterScoped[gvk.Group+"/"+gvk.Kind]
}
