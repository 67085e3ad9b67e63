package fnruntime

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const (
	ensureNameSubstringAPIVersion = "fn.kpt.dev/v1alpha1"
	ensureNameSubstringKind       = "EnsureNameSubstring"
)

// ErrInvalidEnsureNameSubstringConfig is wrapped by the Go error of an
// ensure-name-substring run whose functionConfig is unusable.
var ErrInvalidEnsureNameSubstringConfig = errors.New("invalid ensure-name-substring functionConfig")

var (
	// <group>/namespaces/<namespace>/<kind>/<name>
	dependsOnNamespaced = regexp.MustCompile(`\A([-.\w]*)/namespaces/([-.\w]*)/([-.\w]*)/([-.\w]*)\z`)
	// <group>/<kind>/<name>
	dependsOnClusterScoped = regexp.MustCompile(`\A([-.\w]*)/([-.\w]*)/([-.\w]*)\z`)
)

// ensureNameSkip are the kinds the catalog function never touches.
var ensureNameSkip = []resid.Gvk{
	{Kind: "CustomResourceDefinition"},
	{Group: "apiregistration.k8s.io", Kind: "APIService"},
	{Kind: "Namespace"},
	{Group: "kpt.dev", Kind: "Kptfile"},
}

// nameFieldSpec is kustomize's FieldSpec: a GVK selector (empty parts
// match anything) and a slash-separated path.
type nameFieldSpec struct {
	Group   string `yaml:"group,omitempty"`
	Version string `yaml:"version,omitempty"`
	Kind    string `yaml:"kind,omitempty"`
	Path    string `yaml:"path,omitempty"`
	Create  bool   `yaml:"create,omitempty"`
}

type ensureNameSubstringConfig struct {
	Substring            string          `yaml:"substring"`
	EditMode             string          `yaml:"editMode,omitempty"`
	FieldSpecs           []nameFieldSpec `yaml:"fieldSpecs,omitempty"`
	AdditionalNameFields []nameFieldSpec `yaml:"additionalNameFields,omitempty"`
}

// ensureNameSubstring ports the catalog's ensure-name-substring (v0.2):
// it prepends or appends a substring to metadata.name (the catalog's only
// default name field spec) and to the additionalNameFields of the config,
// unless the field already contains it, and rewrites depends-on
// annotations that name a renamed resource of the package.
//
// Like the catalog it takes a ConfigMap with exactly one data entry,
// `prepend` or `append`, whose value is the substring; or an
// EnsureNameSubstring (fn.kpt.dev/v1alpha1) with substring, editMode
// (default prepend), additionalNameFields (group, version, kind, path,
// create) and the deprecated fieldSpecs; it leaves
// CustomResourceDefinitions, APIServices, Namespaces and Kptfiles alone and
// processes local-config resources too. Step selectors and exclude are
// applied by the pipeline before the function runs. As v0.2.0 does (its
// README and examples: each resource renamed where it is), every resource
// keeps its file, its place in it and its package; the catalog's later,
// unreleased code moves every resource to kpt's default file for it
// (<namespace>/<kind>_<name>.yaml), which cad does not do.
//
// Fields that refer to a renamed resource of the same namespace are
// rewritten for a subset of kustomize's name-reference table (the catalog
// uses all of it, through sigs.k8s.io/kustomize/api): ConfigMaps, Secrets,
// ServiceAccounts and PersistentVolumeClaims named in the pod spec of
// Pods, Deployments, ReplicaSets, DaemonSets, StatefulSets, Jobs, CronJobs
// and ReplicationControllers; Secrets and Services named in Ingresses; a
// StatefulSet's serviceName; the ClusterRole or Role a RoleBinding's or
// ClusterRoleBinding's roleRef names (v0.2.0's depends-on example shows
// it). Other references (RBAC subjects, HPA targets, webhooks, ...) are
// left unchanged.
//
// It differs from the catalog in these ways besides: the already-present
// check is made per scalar field rather than on the rendered value of the
// whole path, so a path through a list is checked element by element; an
// editMode other
// than prepend or append is an error, where the catalog silently does
// nothing; a depends-on annotation is rewritten on any resource (not only
// one that was itself renamed) and only when the resource it names was
// actually renamed, where the catalog also rewrites references to skipped
// kinds and to names that already had the substring. Config errors, in
// cad's words, fail as v0.2.0's do (no result, the message on stderr, a
// *pipeline.FunctionError matching ErrInvalidFunctionConfig), and also
// match ErrInvalidEnsureNameSubstringConfig.
func ensureNameSubstring(ctx context.Context, rl *pipeline.ResourceList) error {
	cfg, err := ensureNameSubstringConfigFrom(rl.FunctionConfig)
	if err != nil {
		msg := "ensure-name-substring cannot use its functionConfig: " + err.Error()
		return &configError{msg: msg, stderr: msg, cause: errors.Join(ErrInvalidEnsureNameSubstringConfig, err)}
	}
	specs := append([]nameFieldSpec{{Path: "metadata/name"}}, cfg.AdditionalNameFields...)

	type key struct{ group, kind, name string }
	renamed := map[key]string{}
	renamedIn := map[nsKey]string{}
	for _, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		gvk := resid.GvkFromNode(it)
		if ensureNameSkipped(gvk) {
			continue
		}
		oldName := it.GetName()
		for _, fs := range specs {
			sel := resid.Gvk{Group: fs.Group, Version: fs.Version, Kind: fs.Kind}
			if !gvk.IsSelected(&sel) {
				continue
			}
			path, err := splitFieldPath(fs.Path)
			if err != nil {
				return &pipeline.FunctionError{ExitCode: 1, Stderr: err.Error(), Err: errors.Join(ErrInvalidEnsureNameSubstringConfig, err)}
			}
			editFieldSpec(it.YNode(), path, fs.Create, func(n *yaml.Node) {
				if strings.Contains(n.Value, cfg.Substring) {
					return
				}
				if cfg.EditMode == "append" {
					n.Value += cfg.Substring
				} else {
					n.Value = cfg.Substring + n.Value
				}
				n.Tag = yaml.NodeTagString
				n.Style = 0
			})
		}
		if newName := it.GetName(); newName != oldName {
			renamed[key{gvk.Group, gvk.Kind, oldName}] = newName
			renamedIn[nsKey{gvk.Group, gvk.Kind, namespaceOrDefault(it), oldName}] = newName
		}
	}
	if len(renamed) == 0 {
		return nil
	}
	fixNameReferences(rl.Items, renamedIn)
	for _, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		v, ok := it.GetAnnotations()[dependsOnAnnotation]
		if !ok {
			continue
		}
		seg := strings.Split(v, "/")
		var g, k, n int
		switch {
		case dependsOnNamespaced.MatchString(v):
			g, k, n = 0, 3, 4
		case dependsOnClusterScoped.MatchString(v):
			g, k, n = 0, 1, 2
		default:
			continue
		}
		newName, ok := renamed[key{seg[g], seg[k], seg[n]}]
		if !ok {
			continue
		}
		seg[n] = newName
		if err := it.PipeE(yaml.SetAnnotation(dependsOnAnnotation, strings.Join(seg, "/"))); err != nil {
			return err
		}
	}
	return nil
}

func ensureNameSkipped(gvk resid.Gvk) bool {
	for _, s := range ensureNameSkip {
		if gvk.IsSelected(&s) {
			return true
		}
	}
	return false
}

func ensureNameSubstringConfigFrom(fc *yaml.RNode) (*ensureNameSubstringConfig, error) {
	cfg := &ensureNameSubstringConfig{}
	switch {
	case fc.IsNilOrEmpty():
		return nil, errors.New("there is no functionConfig: give a v1 ConfigMap or an " + ensureNameSubstringAPIVersion + " EnsureNameSubstring")
	case fc.GetApiVersion() == "v1" && fc.GetKind() == "ConfigMap":
		d := configData(fc)
		if len(d) != 1 {
			return nil, fmt.Errorf("a ConfigMap functionConfig has one key, prepend or append, whose value is the substring; this one has %d keys", len(d))
		}
		for k, v := range d {
			if k != "prepend" && k != "append" {
				return nil, fmt.Errorf("editMode %q is neither prepend nor append", k)
			}
			cfg.EditMode, cfg.Substring = k, v
		}
	case fc.GetApiVersion() == ensureNameSubstringAPIVersion && fc.GetKind() == ensureNameSubstringKind:
		if err := fc.YNode().Decode(cfg); err != nil {
			return nil, err
		}
		if cfg.EditMode == "" {
			cfg.EditMode = "prepend"
		}
		if cfg.EditMode != "prepend" && cfg.EditMode != "append" {
			return nil, fmt.Errorf("editMode %q is neither prepend nor append", cfg.EditMode)
		}
		if cfg.AdditionalNameFields != nil && cfg.FieldSpecs != nil {
			return nil, errors.New("fieldSpecs and additionalNameFields are both set: fieldSpecs is the old name of additionalNameFields, keep one")
		}
		if cfg.AdditionalNameFields == nil {
			cfg.AdditionalNameFields, cfg.FieldSpecs = cfg.FieldSpecs, nil
		}
		for _, fs := range cfg.AdditionalNameFields {
			if fs.Path == "" {
				return nil, errors.New("additionalNameFields: path must not be empty")
			}
		}
	default:
		return nil, fmt.Errorf("a functionConfig of kind %s (apiVersion %s) is neither a v1 ConfigMap nor an %s %s",
			fc.GetKind(), fc.GetApiVersion(), ensureNameSubstringAPIVersion, ensureNameSubstringKind)
	}
	if cfg.Substring == "" {
		return nil, errors.New("substring must not be empty")
	}
	return cfg, nil
}

// splitFieldPath splits a kustomize field path on "/", honouring "\/" as
// a literal slash and dropping a "[]" list marker.
func splitFieldPath(p string) ([]string, error) {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p) && p[i+1] == '/':
			cur.WriteByte('/')
			i++
		case p[i] == '/':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(p[i])
		}
	}
	out = append(out, cur.String())
	for i, s := range out {
		out[i] = strings.TrimSuffix(s, "[]")
		if out[i] == "" {
			return nil, fmt.Errorf("field path %q has an empty segment", p)
		}
	}
	return out, nil
}

// editFieldSpec calls edit on every scalar at path below n, walking into
// each element of a list on the way, as kustomize's fieldspec filter
// does. With create, missing map fields are created (the last one as an
// empty string).
func editFieldSpec(n *yaml.Node, path []string, create bool, edit func(*yaml.Node)) {
	switch {
	case n == nil:
	case n.Kind == yaml.DocumentNode:
		for _, c := range n.Content {
			editFieldSpec(c, path, create, edit)
		}
	case n.Kind == yaml.SequenceNode:
		for _, c := range n.Content {
			editFieldSpec(c, path, create, edit)
		}
	case len(path) == 0:
		if n.Kind == yaml.ScalarNode {
			edit(n)
		}
	case n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == path[0] {
				editFieldSpec(n.Content[i+1], path[1:], create, edit)
				return
			}
		}
		if !create {
			return
		}
		v := &yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap}
		if len(path) == 1 {
			v = &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString}
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: path[0]}, v)
		editFieldSpec(v, path[1:], create, edit)
	}
}

type nsKey struct{ group, kind, namespace, name string }

func namespaceOrDefault(n *yaml.RNode) string {
	if ns := n.GetNamespace(); ns != "" {
		return ns
	}
	return defaultNamespace
}

// podSpecPaths are the paths to the pod spec in the workload kinds.
var podSpecPaths = map[string]string{
	"Pod":                   "spec",
	"Deployment":            "spec/template/spec",
	"ReplicaSet":            "spec/template/spec",
	"DaemonSet":             "spec/template/spec",
	"StatefulSet":           "spec/template/spec",
	"Job":                   "spec/template/spec",
	"ReplicationController": "spec/template/spec",
	"CronJob":               "spec/jobTemplate/spec/template/spec",
}

// podSpecRefs are the fields of a pod spec naming a core resource, by the
// kind they name.
var podSpecRefs = map[string][]string{
	"ConfigMap": {
		"volumes/configMap/name", "volumes/projected/sources/configMap/name",
		"containers/env/valueFrom/configMapKeyRef/name", "initContainers/env/valueFrom/configMapKeyRef/name",
		"containers/envFrom/configMapRef/name", "initContainers/envFrom/configMapRef/name",
	},
	"Secret": {
		"volumes/secret/secretName", "volumes/projected/sources/secret/name",
		"containers/env/valueFrom/secretKeyRef/name", "initContainers/env/valueFrom/secretKeyRef/name",
		"containers/envFrom/secretRef/name", "initContainers/envFrom/secretRef/name",
		"imagePullSecrets/name",
	},
	"ServiceAccount":        {"serviceAccountName"},
	"PersistentVolumeClaim": {"volumes/persistentVolumeClaim/claimName"},
}

// otherRefs are further referring fields: referrer kind, path, the core
// kind named.
var otherRefs = []struct{ referrer, path, kind string }{
	{"Ingress", "spec/tls/secretName", "Secret"},
	{"Ingress", "spec/rules/http/paths/backend/service/name", "Service"},
	{"Ingress", "spec/defaultBackend/service/name", "Service"},
	{"StatefulSet", "spec/serviceName", "Service"},
}

// fixNameReferences rewrites the fields of items that name a renamed core
// resource (group "") of their namespace.
func fixNameReferences(items []*yaml.RNode, renamed map[nsKey]string) {
	for _, it := range items {
		kind, ns := it.GetKind(), namespaceOrDefault(it)
		fix := func(path, target string) {
			p, err := splitFieldPath(path)
			if err != nil {
				return
			}
			editFieldSpec(it.YNode(), p, false, func(n *yaml.Node) {
				if newName, ok := renamed[nsKey{"", target, ns, n.Value}]; ok {
					n.Value = newName
				}
			})
		}
		if prefix, ok := podSpecPaths[kind]; ok {
			for target, paths := range podSpecRefs {
				for _, p := range paths {
					fix(prefix+"/"+p, target)
				}
			}
		}
		for _, r := range otherRefs {
			if r.referrer == kind {
				fix(r.path, r.kind)
			}
		}
		if kind == "RoleBinding" || kind == "ClusterRoleBinding" {
			// roleRef names a ClusterRole (cluster-scoped: keyed under
			// namespaceOrDefault's "default") or, from a RoleBinding, a
			// Role of the binding's namespace.
			target, _ := nestedString(it, "roleRef", "kind")
			refNs := ns
			switch {
			case target == "ClusterRole":
				refNs = defaultNamespace
			case target != "Role" || kind != "RoleBinding":
				continue
			}
			editFieldSpec(it.YNode(), []string{"roleRef", "name"}, false, func(n *yaml.Node) {
				if newName, ok := renamed[nsKey{rbacGroup, target, refNs, n.Value}]; ok {
					n.Value = newName
				}
			})
		}
	}
}

// rbacGroup is the API group of Roles, ClusterRoles and their bindings.
const rbacGroup = "rbac.authorization.k8s.io"
