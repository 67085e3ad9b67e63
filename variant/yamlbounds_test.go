package variant_test

import (
	"errors"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
	"github.com/stretchr/testify/require"
)

// bombConfigMap is a ConfigMap with an alias bomb of 10^5 strings
// (Laughs(5, 10), over the default MaxAliasNodes of 100,000 but cheap to
// expand), annotated with annotation.
func bombConfigMap(annotation string) string {
	return hostileyaml.Laughs(5, 10) + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n  annotations:\n    " +
		annotation + "\n"
}

// TestSyncRefusesAliasBomb: an upstream package holding an alias bomb (let
// in by an engine with looser bounds) is refused by Sync where it reads
// resources (an injection point, a binding point) or the package context,
// with the revision.YAMLLimitError naming the file, and nothing is
// written.
func TestSyncRefusesAliasBomb(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		pv                  func(*variant.PackageVariant)
	}{
		{"injection point", "bomb.yaml", bombConfigMap(variant.InjectionAnnotation + ": optional"), nil},
		{"binding point", "bomb.yaml", bombConfigMap(variant.BindingAnnotation + ": x"), nil},
		{"package context", "package-context.yaml", bombConfigMap("a: b"), func(pv *variant.PackageVariant) {
			pv.Spec.PackageContext = &variant.PackageContext{Data: map[string]string{"k": "v"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t, backends[0])
			e, err := engine.New(&engine.Options{Repositories: v.repos,
				YAMLLimits: &revision.YAMLLimits{MaxAliasNodes: -1}})
			require.NoError(t, err)
			v.e = e
			files := upstreamFiles()
			files[tc.file] = tc.content
			v.publish("blueprints", "bucket", files)
			before := v.version()
			pv := newPV("pv")
			if tc.pv != nil {
				tc.pv(pv)
			}
			opts := *v.opts
			opts.Attempts = 1
			_, err = variant.Sync(v.ctx, v.e, pv, &opts)
			var le *revision.YAMLLimitError
			require.ErrorIs(t, err, repository.ErrInvalidInput)
			require.True(t, errors.As(err, &le), "%v is not a *revision.YAMLLimitError", err)
			require.Equal(t, "MaxAliasNodes", le.Limit)
			require.Equal(t, tc.file, le.File)
			require.Equal(t, before, v.version(), "a refused sync writes nothing")
		})
	}
}

// TestDecodeRefusesAliasBomb: Decode refuses a PackageVariant stream that
// holds an alias bomb with the revision.YAMLLimitError.
func TestDecodeRefusesAliasBomb(t *testing.T) {
	_, err := variant.Decode([]byte(hostileyaml.Laughs(9, 9) + "apiVersion: " + variant.PackageVariantAPIVersion +
		"\nkind: PackageVariant\nmetadata: {name: x}\n"))
	var le *revision.YAMLLimitError
	require.ErrorIs(t, err, repository.ErrInvalidInput)
	require.True(t, errors.As(err, &le), "%v is not a *revision.YAMLLimitError", err)
}
