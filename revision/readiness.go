package revision

import (
	"fmt"
	"slices"
)

// MaxConditionTypeLength bounds the length of a condition type (and of a
// readiness gate's), as Kubernetes bounds a condition's type.
const MaxConditionTypeLength = 316

// validateReadiness checks m's readiness gates and conditions (see
// Validate).
func (m Metadata) validateReadiness() error {
	seen := map[string]bool{}
	for _, g := range m.ReadinessGates {
		switch {
		case g.ConditionType == "":
			return &MetadataError{Field: "readiness gate", Reason: "a readiness gate needs a condition type"}
		case len(g.ConditionType) > MaxConditionTypeLength:
			return &MetadataError{Field: "readiness gate", Key: g.ConditionType, Reason: fmt.Sprintf("condition type longer than %d bytes", MaxConditionTypeLength)}
		case seen[g.ConditionType]:
			return &MetadataError{Field: "readiness gate", Key: g.ConditionType, Reason: "appears more than once"}
		}
		seen[g.ConditionType] = true
	}
	clear(seen)
	for _, c := range m.Conditions {
		switch {
		case c.Type == "":
			return &MetadataError{Field: "condition", Reason: "a condition needs a type"}
		case len(c.Type) > MaxConditionTypeLength:
			return &MetadataError{Field: "condition", Key: c.Type, Reason: fmt.Sprintf("type longer than %d bytes", MaxConditionTypeLength)}
		case c.Status != ConditionTrue && c.Status != ConditionFalse && c.Status != ConditionUnknown:
			return &MetadataError{Field: "condition", Key: c.Type, Reason: fmt.Sprintf("status %q; want True, False or Unknown", c.Status)}
		case seen[c.Type]:
			return &MetadataError{Field: "condition", Key: c.Type, Reason: "appears more than once"}
		}
		seen[c.Type] = true
	}
	return nil
}

// WithCondition returns a copy of m in which c replaces the condition of
// its type, or is appended when there is none.
func (m Metadata) WithCondition(c Condition) Metadata {
	out := m.Clone()
	for i := range out.Conditions {
		if out.Conditions[i].Type == c.Type {
			out.Conditions[i] = c
			return out
		}
	}
	out.Conditions = append(out.Conditions, c)
	return out
}

// WithReadiness returns i with its ReadinessGates and Conditions replaced
// by the revision's effective readiness: i's own (from the Kptfile) merged
// with md's (revision data). The gates are the union: i's, then md's that
// i lacks. The conditions are i's, each replaced by md's condition of the
// same type when there is one (revision data wins), then md's others.
// This is what Approve checks and what is shown as the revision's gates
// and conditions. The slices are new; i and md are not changed.
func (i Info) WithReadiness(md Metadata) Info {
	out := i
	out.ReadinessGates = slices.Clone(i.ReadinessGates)
	for _, g := range md.ReadinessGates {
		if !slices.Contains(out.ReadinessGates, g) {
			out.ReadinessGates = append(out.ReadinessGates, g)
		}
	}
	out.Conditions = nil
	for _, c := range i.Conditions {
		if j := slices.IndexFunc(md.Conditions, func(o Condition) bool { return o.Type == c.Type }); j >= 0 {
			c = md.Conditions[j]
		}
		out.Conditions = append(out.Conditions, c)
	}
	for _, c := range md.Conditions {
		if !slices.ContainsFunc(i.Conditions, func(o Condition) bool { return o.Type == c.Type }) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	return out
}

// Unsatisfied returns the condition types of i's readiness gates that have
// no condition of that type with status True, each once, in gate order;
// nil when the revision is ready to be published.
func (i Info) Unsatisfied() []string {
	var out []string
	for _, g := range i.ReadinessGates {
		ok := slices.ContainsFunc(i.Conditions, func(c Condition) bool {
			return c.Type == g.ConditionType && c.Status == ConditionTrue
		})
		if !ok && !slices.Contains(out, g.ConditionType) {
			out = append(out, g.ConditionType)
		}
	}
	return out
}

// ProjectReadiness returns files with md's readiness gates and conditions
// written into the root Kptfile, so that kpt, Porch and functions reading
// the Kptfile see them: each of md's gates missing from info.readinessGates
// is appended, and each of md's conditions replaces the status condition of
// its type or is appended. The Kptfile keeps its formatting and comments.
// Files without a root Kptfile, and md without gates or conditions, are
// returned unchanged, as is files when the Kptfile already holds them. It
// returns an error matching [ErrInvalid] when the Kptfile does not parse.
func ProjectReadiness(files Files, md Metadata) (Files, error) {
	if len(md.ReadinessGates) == 0 && len(md.Conditions) == 0 {
		return files, nil
	}
	data, ok := files.Get(KptfileName)
	if !ok {
		return files, nil
	}
	kf, err := ParseKptfile(data)
	if err != nil {
		return Files{}, err
	}
	changed := false
	for _, g := range md.ReadinessGates {
		if kf.Info != nil && slices.Contains(kf.Info.ReadinessGates, g) {
			continue
		}
		if kf.Info == nil {
			kf.Info = &PackageInfo{}
		}
		kf.Info.ReadinessGates = append(kf.Info.ReadinessGates, g)
		changed = true
	}
	for _, c := range md.Conditions {
		if cur, ok := kf.Condition(c.Type); ok && cur == c {
			continue
		}
		kf.SetCondition(c)
		changed = true
	}
	if !changed {
		return files, nil
	}
	if data, err = kf.Encode(); err != nil {
		return Files{}, err
	}
	return files.With(KptfileName, data)
}
