package porchapi

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/configasdata/cad/revision"
)

// PackageRevisionFields are the field selector labels of PackageRevisions
// and PackageRevisionResources besides metadata.name and
// metadata.namespace, as Porch serves them; a selector may also name a
// Kptfile label (see PackageMetadataLabelField).
var PackageRevisionFields = []string{"spec.repository", "spec.packageName", "spec.revision", "spec.workspaceName", "spec.lifecycle"}

// packageMetadataLabelsPrefix begins the field selector label of a
// Kptfile label: spec.packageMetadata.labels[<key>].
const packageMetadataLabelsPrefix = "spec.packageMetadata.labels["

// PackageMetadataLabelField returns the field selector label that selects
// package revisions by the Kptfile label key, as Porch names it:
// "spec.packageMetadata.labels[<key>]".
func PackageMetadataLabelField(key string) string {
	return packageMetadataLabelsPrefix + key + "]"
}

// IsPackageMetadataLabelField reports whether field has the form of a
// Kptfile label's field selector label, spec.packageMetadata.labels[...]
// (possibly with an empty key, which CheckPackageRevisionSelector refuses).
func IsPackageMetadataLabelField(field string) bool {
	return strings.HasPrefix(field, packageMetadataLabelsPrefix) && strings.HasSuffix(field, "]")
}

// CheckPackageRevisionSelector checks a field selector of a list or watch
// of PackageRevisions or PackageRevisionResources against the fields
// Porch serves: PackageRevisionFields, metadata.name, metadata.namespace
// and spec.packageMetadata.labels[<key>] with a non-empty key, which, as in
// Porch, takes only = or == and a non-empty value. The error, for a 400,
// says which requirement is refused: "field label not supported: <field>"
// for an unknown field.
func CheckPackageRevisionSelector(sel fields.Selector) error {
	for _, r := range sel.Requirements() {
		switch {
		case IsPackageMetadataLabelField(r.Field):
			if r.Field == PackageMetadataLabelField("") {
				return fmt.Errorf("label key cannot be empty in field selector %q", r.Field)
			}
			if r.Operator != selection.Equals && r.Operator != selection.DoubleEquals {
				return fmt.Errorf("unsupported fieldSelector operator %q for field %q", r.Operator, r.Field)
			}
			if r.Value == "" {
				return fmt.Errorf("unsupported fieldSelector value %q for field %q with operator %q", r.Value, r.Field, r.Operator)
			}
		case r.Field == "metadata.name", r.Field == "metadata.namespace":
		default:
			known := false
			for _, f := range PackageRevisionFields {
				known = known || f == r.Field
			}
			if !known {
				return fmt.Errorf("field label not supported: %s", r.Field)
			}
		}
	}
	return nil
}

// PackageRevisionFieldSet returns the selectable fields of pr besides
// metadata.name and metadata.namespace: PackageRevisionFields and, for
// each Kptfile label (spec.packageMetadata.labels), its
// PackageMetadataLabelField.
func PackageRevisionFieldSet(pr *PackageRevision) fields.Set {
	set := fields.Set{
		"spec.repository":    pr.Spec.RepositoryName,
		"spec.packageName":   pr.Spec.PackageName,
		"spec.revision":      strconv.Itoa(pr.Spec.Revision),
		"spec.workspaceName": pr.Spec.WorkspaceName,
		"spec.lifecycle":     string(pr.Spec.Lifecycle),
	}
	if md := pr.Spec.PackageMetadata; md != nil {
		for k, v := range md.Labels {
			set[PackageMetadataLabelField(k)] = v
		}
	}
	return set
}

// MatchesPackageMetadata reports whether a package whose Kptfile has
// labels satisfies the Kptfile label requirements of sel (true when sel
// has none). A PackageRevisionResources list selects with it, on the
// labels of the Kptfile in its spec.resources (see ResourcesKptfileLabels).
func MatchesPackageMetadata(sel fields.Selector, labels map[string]string) bool {
	for _, r := range sel.Requirements() {
		if !IsPackageMetadataLabelField(r.Field) {
			continue
		}
		key := strings.TrimSuffix(strings.TrimPrefix(r.Field, packageMetadataLabelsPrefix), "]")
		v, ok := labels[key]
		if !ok || v != r.Value {
			return false
		}
	}
	return true
}

// ResourcesKptfileLabels returns the metadata labels of the Kptfile in
// prr's spec.resources: none when it has none or it does not parse.
func ResourcesKptfileLabels(prr *PackageRevisionResources) map[string]string {
	data, ok := prr.Spec.Resources[revision.KptfileName]
	if !ok {
		return nil
	}
	kf, err := revision.ParseKptfile([]byte(data))
	if err != nil {
		return nil
	}
	return kf.Metadata.Labels
}

// WithoutPackageMetadataFields returns sel without its Kptfile label
// requirements: what can be decided about a revision before its Kptfile
// is read.
func WithoutPackageMetadataFields(sel fields.Selector) fields.Selector {
	var keep []fields.Selector
	for _, r := range sel.Requirements() {
		switch {
		case IsPackageMetadataLabelField(r.Field):
		case r.Operator == selection.NotEquals:
			keep = append(keep, fields.OneTermNotEqualSelector(r.Field, r.Value))
		default:
			keep = append(keep, fields.OneTermEqualSelector(r.Field, r.Value))
		}
	}
	return fields.AndSelectors(keep...)
}

// SelectsPackageMetadata reports whether sel has a Kptfile label
// requirement, which needs the revision's Kptfile to decide.
func SelectsPackageMetadata(sel fields.Selector) bool {
	for _, r := range sel.Requirements() {
		if IsPackageMetadataLabelField(r.Field) {
			return true
		}
	}
	return false
}
