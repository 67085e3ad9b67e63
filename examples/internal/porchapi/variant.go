package porchapi

import (
	"encoding/json"
	"fmt"

	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
)

// TypedVariant decodes pv, whose spec and status are kept as opaque JSON,
// into the variant package's PackageVariant. The error matches
// revision.ErrInvalid when the spec does not decode.
func TypedVariant(pv *PackageVariant) (*variant.PackageVariant, error) {
	var out variant.PackageVariant
	if err := retype(pv, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TypedVariantSet decodes pvs into the variant package's
// PackageVariantSet. The error matches revision.ErrInvalid when the spec
// does not decode.
func TypedVariantSet(pvs *PackageVariantSet) (*variant.PackageVariantSet, error) {
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
