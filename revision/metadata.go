package revision

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Metadata is what a caller attaches to a revision besides its files: the
// labels and annotations of Porch's PackageRevision object, and the
// revision-level readiness gates and conditions. Porch keeps labels and
// annotations in Kubernetes, outside the repository, and readiness in the
// Kptfile; backends that implement repository.MetadataWriter keep all of
// it in the repository itself, so it survives a restart and every process
// sees it. Metadata belongs to one revision: it stays through the
// revision's lifecycle changes (approval keeps it), goes when the revision
// is deleted, and a new revision (a clone, copy or upgrade) starts without
// any.
//
// ReadinessGates and Conditions are readiness as revision data rather than
// package content: a checker can set a condition on a Proposed revision
// without touching its files. They add to what the root Kptfile records
// (info.readinessGates, status.conditions); [Info.WithReadiness] says
// which wins. They can change while the revision is a Draft or Proposed
// and are frozen once it is published (repository.MetadataWriter refuses
// a change with ErrImmutable); labels and annotations stay mutable.
//
// Nil and empty maps and slices mean the same thing.
type Metadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// ReadinessGates are condition types that must be True before the
	// revision may be published, in addition to the Kptfile's; one per
	// type.
	ReadinessGates []ReadinessGate `json:"readinessGates,omitempty"`
	// Conditions are the revision's conditions, one per type; each
	// overrides a Kptfile condition of its type.
	Conditions []Condition `json:"conditions,omitempty"`
}

// IsZero reports whether m has no labels, annotations, readiness gates or
// conditions.
func (m Metadata) IsZero() bool {
	return len(m.Labels) == 0 && len(m.Annotations) == 0 && len(m.ReadinessGates) == 0 && len(m.Conditions) == 0
}

// Clone returns a deep copy of m, with nil for empty maps and slices.
func (m Metadata) Clone() Metadata {
	var out Metadata
	if len(m.Labels) > 0 {
		out.Labels = maps.Clone(m.Labels)
	}
	if len(m.Annotations) > 0 {
		out.Annotations = maps.Clone(m.Annotations)
	}
	if len(m.ReadinessGates) > 0 {
		out.ReadinessGates = slices.Clone(m.ReadinessGates)
	}
	if len(m.Conditions) > 0 {
		out.Conditions = slices.Clone(m.Conditions)
	}
	return out
}

// Equal reports whether m and o hold the same labels, annotations,
// readiness gates and conditions (gates and conditions in the same order).
func (m Metadata) Equal(o Metadata) bool {
	return maps.Equal(m.Labels, o.Labels) && maps.Equal(m.Annotations, o.Annotations) && m.ReadinessEqual(o)
}

// ReadinessEqual reports whether m and o hold the same readiness gates and
// conditions, in the same order, whatever their labels and annotations.
func (m Metadata) ReadinessEqual(o Metadata) bool {
	return slices.Equal(m.ReadinessGates, o.ReadinessGates) && slices.Equal(m.Conditions, o.Conditions)
}

// Hash returns a short stable digest of m, "" for zero Metadata. Backends
// fold it into Meta.Version so that the Version changes with the metadata.
func (m Metadata) Hash() string {
	if m.IsZero() {
		return ""
	}
	data, _ := m.Marshal()
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// Marshal returns m as canonical JSON (keys sorted), the form backends
// store.
func (m Metadata) Marshal() ([]byte, error) {
	return json.Marshal(m.Clone()) // encoding/json sorts map keys
}

// ParseMetadata decodes what Marshal wrote. It returns an error matching
// [ErrInvalid] when data is not such JSON or does not pass Validate.
func ParseMetadata(data []byte) (Metadata, error) {
	var m Metadata
	if err := json.Unmarshal(data, &m); err != nil {
		return Metadata{}, fmt.Errorf("%w: metadata: %v", ErrInvalid, err)
	}
	if err := m.Validate(); err != nil {
		return Metadata{}, err
	}
	return m.Clone(), nil
}

// MaxAnnotationsSize is the limit Kubernetes puts on the total size of an
// object's annotation keys and values.
const MaxAnnotationsSize = 256 << 10

var (
	dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	qualifiedRE    = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
)

// Validate checks m by the rules Kubernetes applies to object metadata:
// label and annotation keys are qualified names (an optional DNS subdomain
// prefix of at most 253 characters and a slash, then a name of at most 63
// alphanumerics, '-', '_' or '.' that starts and ends alphanumeric); label
// values are empty or such a name; annotations total at most
// MaxAnnotationsSize bytes. Readiness gates need a condition type and
// conditions a type and a status of True, False or Unknown; types are at
// most MaxConditionTypeLength bytes and appear once each. It returns a
// *MetadataError naming the first offending key, in sorted order, which
// matches [ErrInvalid].
func (m Metadata) Validate() error {
	if err := m.validateReadiness(); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(m.Labels)) {
		if reason := qualifiedNameProblem(k); reason != "" {
			return &MetadataError{Field: "label", Key: k, Reason: reason}
		}
		if v := m.Labels[k]; v != "" && (len(v) > 63 || !qualifiedRE.MatchString(v)) {
			return &MetadataError{Field: "label", Key: k, Reason: fmt.Sprintf("value %q must be at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric", v)}
		}
	}
	size := 0
	for _, k := range slices.Sorted(maps.Keys(m.Annotations)) {
		if reason := qualifiedNameProblem(k); reason != "" {
			return &MetadataError{Field: "annotation", Key: k, Reason: reason}
		}
		size += len(k) + len(m.Annotations[k])
	}
	if size > MaxAnnotationsSize {
		return &MetadataError{Field: "annotation", Reason: fmt.Sprintf("annotations total %d bytes, more than %d", size, MaxAnnotationsSize)}
	}
	return nil
}

func qualifiedNameProblem(k string) string {
	name := k
	if prefix, rest, ok := strings.Cut(k, "/"); ok {
		if prefix == "" || len(prefix) > 253 || !dnsSubdomainRE.MatchString(prefix) {
			return "prefix must be a DNS subdomain of at most 253 characters"
		}
		name = rest
	}
	if name == "" || len(name) > 63 || !qualifiedRE.MatchString(name) {
		return "name must be 1 to 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
	}
	return ""
}

// MetadataError reports a label or annotation that Kubernetes would refuse.
// It matches [ErrInvalid] with errors.Is.
type MetadataError struct {
	Field  string // "label" or "annotation"
	Key    string // the offending key, "" for a limit on all of them
	Reason string
}

// Error returns the message, naming the offending key.
func (e *MetadataError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("invalid %ss: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("invalid %s %q: %s", e.Field, e.Key, e.Reason)
}

// Is reports whether target is [ErrInvalid].
func (e *MetadataError) Is(target error) bool { return target == ErrInvalid }
