package revision

import (
	"bytes"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ParseKptfile decodes a kpt.dev/v1 Kptfile. Unknown fields are refused as
// kpt refuses them. The error matches [ErrInvalid].
func ParseKptfile(data []byte) (*Kptfile, error) {
	var kf Kptfile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&kf); err != nil {
		return nil, fmt.Errorf("%w: Kptfile: %v", ErrInvalid, err)
	}
	return &kf, nil
}
