package variant

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/configasdata/cad/revision"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// BindingConditionType returns the Kptfile condition type of the binding
// point called name: "config.binding.<name>".
func BindingConditionType(name string) string { return "config.binding." + name }

// bindingPoint is the resources of one binding point in the package being
// mutated, and its default.
type bindingPoint struct {
	name     string
	nodes    []*yaml.RNode       // in file order
	files    []*resourceFile     // the file of each node
	def      *yaml.RNode         // the default: the declaration in the upstream, else in the package
	defFile  string              // the file of the default
	required bool                // the default has config.kpt.dev/binding-required: "true"
	bound    bool                // some node carries config.kpt.dev/bound-from
	status   *revision.Condition // set while binding
}

// bind fills the package's binding points from spec.bindings.
//
// A binding point is every resource annotated config.kpt.dev/binding:
// <name>. Its default is the point's declaration in the upstream revision
// (or, for a point the upstream lacks, in the package): every sync binds
// from the default, so what a source does not set keeps the upstream's
// value through clones and upgrades, and removing a binding restores the
// default. A bound point is replaced by one resource per source resource:
// the default with the source's fields (all but apiVersion, kind, metadata
// and status) merged over it (maps key by key, other values replaced),
// keeping the default's name when there is one source resource and taking
// each source's name when there are several, and annotated
// config.kpt.dev/bound-from. Each point gets the Kptfile condition
// config.binding.<name>: True with reason Bound or Default, or False
// (NotBound, NoResourceSelected, or the error); required points are
// readiness gates.
func (s *syncer) bind(ctx context.Context, files revision.Files) (revision.Files, error) {
	rfs, err := parseResourceFiles(ctx, s.e.YAMLLimits(), files, BindingAnnotation)
	if err != nil {
		return revision.Files{}, err
	}
	points := map[string]*bindingPoint{}
	var order []string
	for _, rf := range rfs {
		for _, n := range rf.nodes {
			name := n.GetAnnotations()[BindingAnnotation]
			if name == "" {
				continue
			}
			bp := points[name]
			if bp == nil {
				bp = &bindingPoint{name: name}
				points[name] = bp
				order = append(order, name)
			}
			bp.nodes = append(bp.nodes, n)
			bp.files = append(bp.files, rf)
			if _, ok := n.GetAnnotations()[BoundAnnotation]; ok {
				bp.bound = true
			}
		}
	}
	// Defaults come from the upstream's declarations.
	if len(s.spec.Bindings) > 0 || len(points) > 0 {
		ufs, err := parseResourceFiles(ctx, s.e.YAMLLimits(), s.upstreamFiles, BindingAnnotation)
		if err != nil {
			return revision.Files{}, fmt.Errorf("upstream: %w", err)
		}
		for _, rf := range ufs {
			for _, n := range rf.nodes {
				name := n.GetAnnotations()[BindingAnnotation]
				if name == "" {
					continue
				}
				bp := points[name]
				if bp == nil {
					// The package lost the point (a local edit); it comes
					// back from the upstream when it is bound.
					bp = &bindingPoint{name: name}
					points[name] = bp
					order = append(order, name)
				}
				if bp.def == nil {
					bp.def, bp.defFile = n, rf.path
				}
			}
		}
	}
	for _, name := range order {
		bp := points[name]
		if bp.def == nil {
			bp.def, bp.defFile = bp.nodes[0], bp.files[0].path
		}
		bp.required = bp.def.GetAnnotations()[BindingRequiredAnnotation] == "true"
	}
	for _, b := range s.spec.Bindings {
		if points[b.Name] == nil {
			s.warn(fmt.Sprintf("binding %q names no binding point of the package", b.Name))
		}
	}

	var conds []revision.Condition
	var gates []string
	for _, name := range order {
		bp := points[name]
		ct := BindingConditionType(name)
		if bp.required {
			gates = append(gates, ct)
		}
		b := s.binding(name)
		var c revision.Condition
		switch {
		case b == nil:
			if bp.bound {
				if rfs, err = bp.replace(rfs, []*yaml.RNode{cleanCopy(bp.def)}); err != nil {
					return revision.Files{}, err
				}
			}
			c = revision.Condition{Type: ct, Status: revision.ConditionTrue, Reason: ReasonDefault, Message: "no binding given; the default is used"}
			if bp.required {
				c = revision.Condition{Type: ct, Status: revision.ConditionFalse, Reason: ReasonNotBound, Message: "the binding point is required and no binding is given"}
			}
		default:
			srcs, from, msg, err := s.bindingSources(ctx, b, bp.def)
			if err != nil {
				return revision.Files{}, err
			}
			switch {
			case msg != "":
				c = revision.Condition{Type: ct, Status: revision.ConditionFalse, Reason: ReasonError, Message: msg}
			case len(srcs) == 0:
				if bp.bound {
					if rfs, err = bp.replace(rfs, []*yaml.RNode{cleanCopy(bp.def)}); err != nil {
						return revision.Files{}, err
					}
				}
				c = revision.Condition{Type: ct, Status: revision.ConditionFalse, Reason: ReasonNoResourceSelected, Message: "the binding selects no resource; the default is used"}
			default:
				nodes, err := boundNodes(bp.def, srcs, from)
				if err != nil {
					c = revision.Condition{Type: ct, Status: revision.ConditionFalse, Reason: ReasonError, Message: err.Error()}
					break
				}
				if rfs, err = bp.replace(rfs, nodes); err != nil {
					return revision.Files{}, err
				}
				c = revision.Condition{Type: ct, Status: revision.ConditionTrue, Reason: ReasonBound,
					Message: fmt.Sprintf("bound to %d resource(s) from %s", len(nodes), from)}
			}
		}
		conds = append(conds, c)
	}
	if files, err = writeResourceFiles(files, rfs); err != nil {
		return revision.Files{}, err
	}
	return kptfileConditions(files, "config.binding.", conds, gates)
}

func (s *syncer) warn(msg string) {
	if !slices.Contains(s.res.Warnings, msg) {
		s.res.Warnings = append(s.res.Warnings, msg)
	}
}

func (s *syncer) binding(name string) *Binding {
	for i := range s.spec.Bindings {
		if s.spec.Bindings[i].Name == name {
			return &s.spec.Bindings[i]
		}
	}
	return nil
}

// replace puts nodes in the place of the point's resources: where its
// first resource is (or in the default's file when the package has none),
// removing the others. Files whose content does not change stay clean.
func (bp *bindingPoint) replace(rfs []*resourceFile, nodes []*yaml.RNode) ([]*resourceFile, error) {
	if len(bp.nodes) == len(nodes) {
		same := true
		for i := range nodes {
			if nodeString(nodes[i]) != nodeString(bp.nodes[i]) {
				same = false
				break
			}
		}
		if same {
			return rfs, nil
		}
	}
	if len(bp.nodes) == 0 {
		var rf *resourceFile
		for _, f := range rfs {
			if f.path == bp.defFile {
				rf = f
			}
		}
		if rf == nil {
			rf = &resourceFile{path: bp.defFile}
			rfs = append(rfs, rf)
		}
		rf.nodes = append(rf.nodes, nodes...)
		rf.dirty = true
		bp.nodes, bp.files = nodes, slices.Repeat([]*resourceFile{rf}, len(nodes))
		return rfs, nil
	}
	first, firstFile := bp.nodes[0], bp.files[0]
	for i, n := range bp.nodes {
		rf := bp.files[i]
		if n == first {
			continue
		}
		rf.nodes = slices.DeleteFunc(rf.nodes, func(x *yaml.RNode) bool { return x == n })
		rf.dirty = true
	}
	at := slices.Index(firstFile.nodes, first)
	firstFile.nodes = slices.Concat(firstFile.nodes[:at], nodes, firstFile.nodes[at+1:])
	firstFile.dirty = true
	bp.nodes, bp.files = nodes, slices.Repeat([]*resourceFile{firstFile}, len(nodes))
	return rfs, nil
}

// cleanCopy returns a copy of n without the reader's annotations.
func cleanCopy(n *yaml.RNode) *yaml.RNode {
	c := n.Copy()
	for _, a := range readerAnnotations {
		_, _ = c.Pipe(yaml.ClearAnnotation(a))
	}
	return c
}

// bindingSources returns the resources b selects, as maps, and a
// description of where they came from. A problem of the binding itself
// (a kind mismatch, a missing package revision) is returned as msg; err is
// for failures of the machinery.
func (s *syncer) bindingSources(ctx context.Context, b *Binding, def *yaml.RNode) (srcs []map[string]any, from, msg string, err error) {
	switch {
	case b.Object != nil:
		ob := b.Object
		apiVersion, kind := ob.APIVersion, ob.Kind
		if apiVersion == "" {
			apiVersion = def.GetApiVersion()
		}
		if kind == "" {
			kind = def.GetKind()
		}
		g, v := splitAPIVersion(apiVersion)
		q := ObjectQuery{Namespace: s.pv.Namespace, Group: g, Version: v, Kind: kind, Name: ob.Name}
		if ob.Selector != nil {
			if q.Selector, err = metav1.LabelSelectorAsSelector(ob.Selector); err != nil {
				return nil, "", err.Error(), nil
			}
		}
		from = "object " + kind + "/" + ob.Name
		if ob.Selector != nil {
			from = "objects " + kind + " selected by " + metav1.FormatLabelSelector(ob.Selector)
		}
		if s.o.Objects == nil {
			return nil, from, "", nil
		}
		objs, err := s.o.Objects.ListObjects(ctx, q)
		if err != nil {
			return nil, "", "", fmt.Errorf("list %s objects: %w", kind, err)
		}
		for _, u := range objs {
			srcs = append(srcs, u.Object)
		}
		return srcs, from, "", nil
	case b.Resources != nil:
		for _, r := range b.Resources {
			m := maps.Clone(r)
			if _, ok := m["apiVersion"]; !ok {
				m["apiVersion"] = def.GetApiVersion()
			}
			srcs = append(srcs, m)
		}
		return srcs, "inline resources", "", nil
	case b.PackageRevision != nil:
		pb := b.PackageRevision
		pr, err := resolve(ctx, s.e, &pb.Upstream)
		if err != nil {
			return nil, "", err.Error(), nil
		}
		from = "package revision " + pr.Meta().Key.String()
		files, err := pr.Files(ctx)
		if err != nil {
			return nil, "", "", fmt.Errorf("read %s: %w", pr.Meta().Key, err)
		}
		rfs, err := parseResourceFiles(ctx, s.e.YAMLLimits(), files)
		if err != nil {
			return nil, "", err.Error(), nil
		}
		var sel labels.Selector
		if pb.Selector != nil {
			if sel, err = metav1.LabelSelectorAsSelector(pb.Selector); err != nil {
				return nil, "", err.Error(), nil
			}
		}
		for _, rf := range rfs {
			for _, n := range rf.nodes {
				if !sameKind(n, def) || (pb.Name != "" && n.GetName() != pb.Name) ||
					(sel != nil && !sel.Matches(labels.Set(n.GetLabels()))) {
					continue
				}
				m, err := nodeMap(n)
				if err != nil {
					return nil, "", "", err
				}
				srcs = append(srcs, m)
			}
		}
		return srcs, from, "", nil
	}
	return nil, "", "binding has no source", nil
}

// boundNodes builds the bound resources of a point with default def from
// srcs.
func boundNodes(def *yaml.RNode, srcs []map[string]any, from string) ([]*yaml.RNode, error) {
	base, err := nodeMap(def)
	if err != nil {
		return nil, err
	}
	var out []*yaml.RNode
	for _, src := range srcs {
		kind, _ := src["kind"].(string)
		apiVersion, _ := src["apiVersion"].(string)
		g, _ := splitAPIVersion(apiVersion)
		if kind != def.GetKind() || g != apiGroup(def) {
			return nil, fmt.Errorf("binding yields %s %s, the binding point is %s %s", apiVersion, kind, def.GetApiVersion(), def.GetKind())
		}
		m := deepCopyMap(base)
		for k, v := range src {
			switch k {
			case "apiVersion", "kind", "metadata", "status":
				continue
			}
			m[k] = mergeValue(m[k], v)
		}
		md, _ := m["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			m["metadata"] = md
		}
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
			md["annotations"] = ann
		}
		if len(srcs) > 1 {
			smd, _ := src["metadata"].(map[string]any)
			name, _ := smd["name"].(string)
			if name == "" {
				return nil, fmt.Errorf("binding yields a %s without a name", kind)
			}
			md["name"] = name
			// Each copy is a resource of its own, not the upstream's.
			delete(ann, "internal.kpt.dev/upstream-identifier")
		}
		ann[BoundAnnotation] = from
		n, err := yaml.FromMap(m)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	slices.SortStableFunc(out, func(a, b *yaml.RNode) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// mergeValue merges src over dst: maps key by key, anything else replaced.
func mergeValue(dst, src any) any {
	dm, ok1 := dst.(map[string]any)
	sm, ok2 := src.(map[string]any)
	if !ok1 || !ok2 {
		return deepCopyValue(src)
	}
	out := deepCopyMap(dm)
	for k, v := range sm {
		out[k] = mergeValue(out[k], v)
	}
	return out
}

func deepCopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return deepCopyMap(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = deepCopyValue(x[i])
		}
		return out
	}
	return v
}
