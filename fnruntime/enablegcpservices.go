package fnruntime

import (
	"context"
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/pipeline"
)

const (
	projectServiceSetAPIVersion = "blueprints.cloud.google.com/v1alpha1"
	projectServiceSetKind       = "ProjectServiceSet"
	gcpServiceAPIVersion        = "serviceusage.cnrm.cloud.google.com/v1beta1"
	gcpServiceKind              = "Service"
	// ownerReferenceAnnotation marks a Service generated from a
	// ProjectServiceSet: blueprints.cloud.google.com/ProjectServiceSet/<name>.
	ownerReferenceAnnotation = "blueprints.cloud.google.com/ownerReference"
)

// enableGCPServices is the catalog's enable-gcp-services (v0.1), as its
// README and examples describe it: every ProjectServiceSet
// (blueprints.cloud.google.com/v1alpha1, a local-config resource) among
// the items generates one Config Connector Service
// (serviceusage.cnrm.cloud.google.com/v1beta1) per entry of
// spec.services, named <set>-<first label of the service name>
// ("ledger-apis-pubsub" for pubsub.googleapis.com in set ledger-apis),
// with the set's namespace, its annotations (local-config aside), the
// ownerReference annotation blueprints.cloud.google.com/ProjectServiceSet/<set>,
// spec.resourceID the service and, when spec.projectID is set,
// spec.projectRef.external it. Services generated earlier (those with the
// ownerReference annotation) are replaced: one no longer listed is
// pruned ("pruned service"), one listed again is recreated in its file
// ("recreated service"), a new one is written to
// service_<name>.yaml beside its set ("generated service"): in the set's
// directory and, in a render of nested packages, in the set's package
// (its package-path annotation), so a subpackage's Services stay in the
// subpackage whichever package's pipeline runs the function; each gets an
// info result naming it and its file. A set without spec.services, or
// not marked local-config, is an error result.
func enableGCPServices(ctx context.Context, rl *pipeline.ResourceList) error {
	owned := map[string]*yaml.RNode{} // generated earlier, by serviceKey
	var kept []*yaml.RNode
	var sets []*yaml.RNode
	for _, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, ok := it.GetAnnotations()[ownerReferenceAnnotation]; ok && it.GetApiVersion() == gcpServiceAPIVersion && it.GetKind() == gcpServiceKind {
			owned[serviceKey(it, it.GetName())] = it
			continue
		}
		if it.GetApiVersion() == projectServiceSetAPIVersion && it.GetKind() == projectServiceSetKind {
			sets = append(sets, it)
		}
		kept = append(kept, it)
	}
	type generated struct {
		node *yaml.RNode
		msg  string
	}
	var out []generated
	names := map[string]bool{}
	for _, set := range sets {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !isLocalConfig(set) {
			rl.Results = append(rl.Results, setError(set, "a ProjectServiceSet must be a local-config resource (config.kubernetes.io/local-config: \"true\")"))
			continue
		}
		services := getSlice(set, "spec", "services")
		if len(services) == 0 {
			rl.Results = append(rl.Results, setError(set, "spec.services is required: list the services to enable"))
			continue
		}
		projectID, _ := nestedString(set, "spec", "projectID")
		for _, svc := range services {
			id := svc.YNode().Value
			if svc.YNode().Kind != yaml.ScalarNode || id == "" {
				rl.Results = append(rl.Results, setError(set, "spec.services must be a list of service names"))
				continue
			}
			name := set.GetName() + "-" + strings.SplitN(id, ".", 2)[0]
			n, err := newGCPService(set, name, id, projectID)
			if err != nil {
				return err
			}
			// The Service goes beside its set: in the set's package (in
			// a render, a subpackage's items carry its package-path
			// and paths relative to it) and directory.
			msg := "generated service"
			pkg := set.GetAnnotations()[pipeline.PackagePathAnnotation]
			p := path.Join(path.Dir(itemPath(set)), "service_"+name+".yaml")
			key := serviceKey(set, name)
			if old, ok := owned[key]; ok {
				msg = "recreated service"
				if op := itemPath(old); op != "" {
					p = op
				}
			}
			if err := n.PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, p)); err != nil {
				return err
			}
			if pkg != "" {
				if err := n.PipeE(yaml.SetAnnotation(pipeline.PackagePathAnnotation, pkg)); err != nil {
					return err
				}
			}
			names[key] = true
			out = append(out, generated{n, msg})
		}
	}
	var results []*pipeline.Result
	for _, it := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if k := serviceKey(it, it.GetName()); owned[k] == it && !names[k] {
			results = append(results, serviceResult("pruned service", it))
		}
	}
	for _, g := range out {
		kept = append(kept, g.node)
		results = append(results, serviceResult(g.msg, g.node))
	}
	rl.Items = kept
	rl.Results = append(rl.Results, results...)
	return nil
}

// serviceKey identifies the Service name generated in the package of n
// (its package-path annotation, empty outside a render): sets of the same
// name in two packages generate two Services, each in its own package.
func serviceKey(n *yaml.RNode, name string) string {
	return n.GetAnnotations()[pipeline.PackagePathAnnotation] + "\x00" + name
}

func newGCPService(set *yaml.RNode, name, id, projectID string) (*yaml.RNode, error) {
	n := yaml.NewMapRNode(nil)
	n.SetApiVersion(gcpServiceAPIVersion)
	n.SetKind(gcpServiceKind)
	if err := n.SetName(name); err != nil {
		return nil, err
	}
	if ns := set.GetNamespace(); ns != "" {
		if err := n.SetNamespace(ns); err != nil {
			return nil, err
		}
	}
	for k, v := range set.GetAnnotations() {
		if k == pipeline.LocalConfigAnnotation || strings.HasPrefix(k, "config.kubernetes.io/") || strings.HasPrefix(k, "internal.config.kubernetes.io/") || strings.HasPrefix(k, "config.k8s.io/") {
			continue
		}
		if err := n.PipeE(yaml.SetAnnotation(k, v)); err != nil {
			return nil, err
		}
	}
	owner := "blueprints.cloud.google.com/" + projectServiceSetKind + "/" + set.GetName()
	if err := n.PipeE(yaml.SetAnnotation(ownerReferenceAnnotation, owner)); err != nil {
		return nil, err
	}
	if err := setNestedString(n, id, "spec", "resourceID"); err != nil {
		return nil, err
	}
	if projectID != "" {
		if err := setNestedString(n, projectID, "spec", "projectRef", "external"); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func serviceResult(msg string, n *yaml.RNode) *pipeline.Result {
	return &pipeline.Result{Message: msg, Severity: pipeline.SeverityInfo,
		ResourceRef: &pipeline.ResourceRef{APIVersion: n.GetApiVersion(), Kind: n.GetKind(), Name: n.GetName(), Namespace: n.GetNamespace()},
		File:        &pipeline.File{Path: itemPath(n)}}
}

func setError(set *yaml.RNode, msg string) *pipeline.Result {
	r := errorResult(fmt.Sprintf("ProjectServiceSet %s: %s", set.GetName(), msg))
	r.ResourceRef = &pipeline.ResourceRef{APIVersion: set.GetApiVersion(), Kind: set.GetKind(), Name: set.GetName(), Namespace: set.GetNamespace()}
	if p := itemPath(set); p != "" {
		r.File = &pipeline.File{Path: p}
	}
	return r
}
