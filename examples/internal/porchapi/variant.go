package porchapi

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
)

// PackageVariant is config.porch.kpt.dev/v1alpha1 PackageVariant. Its spec
// and status are kept as the JSON they were given (an opaque value that
// preserves fields cad does not know): cad's variant package owns their
// meaning, and Typed decodes the object into its types.
type PackageVariant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   json.RawMessage `json:"spec,omitempty"`
	Status json.RawMessage `json:"status,omitempty"`
}

// PackageVariantList is a list of PackageVariants.
type PackageVariantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PackageVariant `json:"items"`
}

// PackageVariantSet is config.porch.kpt.dev/v1alpha2 PackageVariantSet,
// with spec and status kept as opaque JSON like PackageVariant's; Typed
// decodes it into the variant package's types.
type PackageVariantSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   json.RawMessage `json:"spec,omitempty"`
	Status json.RawMessage `json:"status,omitempty"`
}

// PackageVariantSetList is a list of PackageVariantSets.
type PackageVariantSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PackageVariantSet `json:"items"`
}

// Typed decodes pv into the variant package's PackageVariant. The error
// matches revision.ErrInvalid when the spec does not decode.
func (pv *PackageVariant) Typed() (*variant.PackageVariant, error) {
	var out variant.PackageVariant
	if err := retype(pv, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Typed decodes pvs into the variant package's PackageVariantSet. The error
// matches revision.ErrInvalid when the spec does not decode.
func (pvs *PackageVariantSet) Typed() (*variant.PackageVariantSet, error) {
	var out variant.PackageVariantSet
	if err := retype(pvs, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func retype(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%w: %v", revision.ErrInvalid, err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %v", revision.ErrInvalid, err)
	}
	return nil
}
