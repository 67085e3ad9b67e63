package variant

import (
	"context"
	"fmt"
	"strings"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// injectionPoint is one resource of the package annotated
// kpt.dev/config-injection.
type injectionPoint struct {
	file     *resourceFile
	node     *yaml.RNode
	condType string
	required bool
	injected string   // the name of the injected object
	errs     []string // why nothing was injected
}

// InjectionConditionType returns the Kptfile condition type of the
// injection point of kind and name: "config.injection.<kind>.<name>".
func InjectionConditionType(kind, name string) string {
	return "config.injection." + kind + "." + name
}

// inject fills the injection points of files from the ObjectSource, as
// Porch's PackageVariant controller does: for each point the first
// injector whose group, version and kind match the point names the object,
// of the point's kind, whose data (a core ConfigMap) or spec (anything
// else) replaces the point's and whose name goes into the
// kpt.dev/injected-resource annotation. Each point gets the Kptfile
// condition config.injection.<Kind>.<name>, True when injected; required
// points are readiness gates.
func (s *syncer) inject(ctx context.Context, files revision.Files) (revision.Files, error) {
	rfs, err := parseResourceFiles(ctx, s.e.YAMLLimits(), files, InjectionAnnotation)
	if err != nil {
		return revision.Files{}, err
	}
	var points []*injectionPoint
	var errs []string
	seen := map[string]string{}
	for _, rf := range rfs {
		for _, n := range rf.nodes {
			v, ok := n.GetAnnotations()[InjectionAnnotation]
			if !ok {
				continue
			}
			ip := &injectionPoint{file: rf, node: n, condType: InjectionConditionType(n.GetKind(), n.GetName())}
			switch v {
			case "required":
				ip.required = true
			case "optional":
			default:
				errs = append(errs, fmt.Sprintf("%s: %s has invalid %q annotation value of %q", rf.path, resourceID(n), InjectionAnnotation, v))
			}
			if prev, dup := seen[ip.condType]; dup {
				errs = append(errs, fmt.Sprintf("duplicate injection conditionType %q (%s and %s)", ip.condType, prev, rf.path))
			}
			seen[ip.condType] = rf.path
			points = append(points, ip)
		}
	}
	if len(errs) > 0 {
		return revision.Files{}, fmt.Errorf("%w: errors in injection points: %s", repository.ErrInvalidInput, strings.Join(errs, ", "))
	}
	if len(points) == 0 {
		return kptfileConditions(files, "config.injection.", nil, nil)
	}
	for _, ip := range points {
		if err := s.injectPoint(ctx, ip); err != nil {
			return revision.Files{}, err
		}
	}
	if files, err = writeResourceFiles(files, rfs); err != nil {
		return revision.Files{}, err
	}
	var conds []revision.Condition
	var gates []string
	for _, ip := range points {
		if ip.required {
			gates = append(gates, ip.condType)
		}
		c := revision.Condition{Type: ip.condType, Status: revision.ConditionFalse, Reason: ReasonNoResourceSelected,
			Message: "no resource matched any injection selector for this injection point"}
		if len(ip.errs) > 0 {
			c.Message = strings.Join(ip.errs, ", ")
		}
		if ip.injected != "" {
			c = revision.Condition{Type: ip.condType, Status: revision.ConditionTrue, Reason: ReasonConfigInjected,
				Message: fmt.Sprintf("injected resource %q from cluster", ip.injected)}
		}
		conds = append(conds, c)
	}
	return kptfileConditions(files, "config.injection.", conds, gates)
}

// injectPoint fills one injection point. Problems that only leave the point
// unfilled are recorded in ip.errs; an error from the ObjectSource fails the
// sync.
func (s *syncer) injectPoint(ctx context.Context, ip *injectionPoint) error {
	if len(s.spec.Injectors) == 0 {
		ip.errs = append(ip.errs, "no injectors defined")
		return nil
	}
	group, version := splitAPIVersion(ip.node.GetApiVersion())
	var objs []*unstructured.Unstructured
	if s.o.Objects != nil {
		var err error
		objs, err = s.o.Objects.ListObjects(ctx, ObjectQuery{Namespace: s.pv.Namespace, Group: group, Version: version, Kind: ip.node.GetKind()})
		if err != nil {
			return fmt.Errorf("list %s objects: %w", ip.node.GetKind(), err)
		}
	}
	if len(objs) == 0 {
		ip.errs = append(ip.errs, fmt.Sprintf("no in-cluster resources of type %s.%s", ip.node.GetApiVersion(), ip.node.GetKind()))
		return nil
	}
	for _, inj := range s.spec.Injectors {
		if (inj.Group != nil && *inj.Group != group) || (inj.Version != nil && *inj.Version != version) ||
			(inj.Kind != nil && *inj.Kind != ip.node.GetKind()) {
			continue
		}
		for _, u := range objs {
			if u.GetName() == inj.Name {
				return ip.injectObject(u)
			}
		}
	}
	return nil
}

// injectObject copies the allowed field of u into the point.
func (ip *injectionPoint) injectObject(u *unstructured.Unstructured) error {
	g, _ := splitAPIVersion(u.GetAPIVersion())
	field := "spec"
	if g == "" && u.GetKind() == "ConfigMap" {
		field = "data"
	}
	val, ok := u.Object[field]
	if !ok {
		ip.errs = append(ip.errs, fmt.Sprintf("field %q not found in resource %q", field, u.GetName()))
		return nil
	}
	before := nodeString(ip.node)
	vn, err := yaml.FromMap(map[string]any{field: val})
	if err != nil {
		ip.errs = append(ip.errs, err.Error())
		return nil
	}
	if err := ip.node.PipeE(yaml.SetField(field, vn.Field(field).Value)); err != nil {
		return err
	}
	if err := ip.node.PipeE(yaml.SetAnnotation(InjectedAnnotation, u.GetName())); err != nil {
		return err
	}
	ip.injected = u.GetName()
	if nodeString(ip.node) != before {
		ip.file.dirty = true
	}
	return nil
}
