package variant

import (
	"bytes"
	"context"
	"fmt"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/kio"
	sigsyaml "sigs.k8s.io/yaml"
)

// Decode reads the PackageVariant and PackageVariantSet objects of a YAML
// or JSON stream (several YAML documents, or a List), in order; each is a
// *PackageVariant or a *PackageVariantSet. Fields are checked strictly, so
// a misspelt field is an error, not ignored.
//
// Errors match repository.ErrInvalidInput: a document that does not parse,
// an object of another kind or apiVersion (PackageVariant is
// config.porch.kpt.dev/v1alpha1, PackageVariantSet v1alpha2), an unknown
// field, a stream over the default revision.YAMLLimits (the
// *revision.YAMLLimitError). DecodeLimits reads with other bounds.
func Decode(data []byte) ([]any, error) {
	return DecodeLimits(data, nil)
}

// DecodeLimits is Decode with the stream held to lim instead of the
// default revision.YAMLLimits (nil means the defaults): pass an engine's
// YAMLLimits() to read variants with the bounds the engine reads packages
// with. Its errors are Decode's; a stream over a bound of lim fails with
// the *revision.YAMLLimitError (matching repository.ErrInvalidInput).
func DecodeLimits(data []byte, lim *revision.YAMLLimits) ([]any, error) {
	if err := revision.CheckYAML(context.Background(), "PackageVariant stream", data, lim); err != nil {
		return nil, fmt.Errorf("variant: decode: %w", err)
	}
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, fmt.Errorf("variant: decode: %w: %v", repository.ErrInvalidInput, err)
	}
	var out []any
	for i, n := range nodes {
		s, err := n.String()
		if err != nil {
			return nil, fmt.Errorf("variant: decode object %d: %w: %v", i, repository.ErrInvalidInput, err)
		}
		var obj any
		switch av, k := n.GetApiVersion(), n.GetKind(); {
		case av == PackageVariantAPIVersion && k == PackageVariantKind:
			obj = &PackageVariant{}
		case av == PackageVariantSetAPIVersion && k == PackageVariantSetKind:
			obj = &PackageVariantSet{}
		default:
			return nil, fmt.Errorf("variant: decode object %d: %w: %s %s %q is neither a %s %s nor a %s %s",
				i, repository.ErrInvalidInput, av, k, n.GetName(),
				PackageVariantAPIVersion, PackageVariantKind, PackageVariantSetAPIVersion, PackageVariantSetKind)
		}
		if err := sigsyaml.UnmarshalStrict([]byte(s), obj); err != nil {
			return nil, fmt.Errorf("variant: decode %s %q: %w: %v", n.GetKind(), n.GetName(), repository.ErrInvalidInput, err)
		}
		out = append(out, obj)
	}
	return out, nil
}
