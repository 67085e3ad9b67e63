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

// bombConfigMap is a ConfigMap with an alias bomb of width^levels strings
// (hostileyaml.Laughs) named name, annotated with annotation.
func bombConfigMap(levels, width int, name, annotation string) string {
	return hostileyaml.Laughs(levels, width) + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  annotations:\n    " +
		annotation + "\n"
}

// limitedEngine is a variant.Engine that reports other YAML bounds than
// the *engine.Engine it wraps uses, so that a test sees which bounds Sync
// holds its own reading to.
type limitedEngine struct {
	*engine.Engine
	lim *revision.YAMLLimits
}

func (l limitedEngine) YAMLLimits() *revision.YAMLLimits { return l.lim }

// bombCases are the files Sync parses itself: a resource file with an
// injection point, one with a binding point, and the package context.
var bombCases = []struct {
	name, file, object, annotation string
	pv                             func(*variant.PackageVariant)
}{
	{"injection point", "bomb.yaml", "bomb", variant.InjectionAnnotation + ": optional", nil},
	{"binding point", "bomb.yaml", "bomb", variant.BindingAnnotation + ": x", nil},
	{"package context", variant.PackageContextFile, variant.PackageContextName, "a: b", func(pv *variant.PackageVariant) {
		pv.Spec.PackageContext = &variant.PackageContext{Data: map[string]string{"k": "v"}}
	}},
}

// syncBomb publishes an upstream holding a ConfigMap with an alias bomb of
// width^levels strings as file, over an engine with MaxAliasNodes -1 (so
// the engine itself lets it in), and syncs a variant of it through the
// variant.Engine wrap(e) returns. It returns the sync's error and whether
// the repositories changed.
func syncBomb(t *testing.T, levels, width int, file, object, annotation string, mut func(*variant.PackageVariant),
	wrap func(*engine.Engine) variant.Engine) (error, bool) {
	v := newEnv(t, backends[0])
	e, err := engine.New(&engine.Options{Repositories: v.repos,
		YAMLLimits: &revision.YAMLLimits{MaxAliasNodes: -1}})
	require.NoError(t, err)
	v.e = e
	files := upstreamFiles()
	files[file] = bombConfigMap(levels, width, object, annotation)
	v.publish("blueprints", "bucket", files)
	before := v.version()
	pv := newPV("pv")
	if mut != nil {
		mut(pv)
	}
	opts := *v.opts
	opts.Attempts = 1
	_, err = variant.Sync(v.ctx, wrap(e), pv, &opts)
	return err, before != v.version()
}

// TestSyncRefusesOverEngineYAMLLimits: Sync holds the files it parses
// itself (an injection point, a binding point, the package context) to
// the bounds its Engine reports, not to the defaults: with an engine that
// reports MaxAliasNodes 100, a file whose aliases add about 1,100 nodes
// (well under the default of 100,000) is refused with the
// revision.YAMLLimitError naming the file, and nothing is written.
func TestSyncRefusesOverEngineYAMLLimits(t *testing.T) {
	for _, tc := range bombCases {
		t.Run(tc.name, func(t *testing.T) {
			err, changed := syncBomb(t, 3, 10, tc.file, tc.object, tc.annotation, tc.pv, func(e *engine.Engine) variant.Engine {
				return limitedEngine{e, &revision.YAMLLimits{MaxAliasNodes: 100}}
			})
			var le *revision.YAMLLimitError
			require.ErrorIs(t, err, repository.ErrInvalidInput)
			require.True(t, errors.As(err, &le), "%v is not a *revision.YAMLLimitError", err)
			require.Equal(t, "MaxAliasNodes", le.Limit)
			require.Equal(t, 100, le.Max)
			require.Equal(t, tc.file, le.File)
			require.False(t, changed, "a refused sync writes nothing")
		})
	}
}

// TestSyncRefusesAliasBomb: with the default bounds reported (an engine
// wrapper whose YAMLLimits is nil over an engine that lets the bomb in),
// Sync refuses a file whose aliases add about 111,000 nodes (over the
// default MaxAliasNodes of 100,000) with the revision.YAMLLimitError and
// writes nothing.
func TestSyncRefusesAliasBomb(t *testing.T) {
	for _, tc := range bombCases {
		t.Run(tc.name, func(t *testing.T) {
			err, changed := syncBomb(t, 5, 10, tc.file, tc.object, tc.annotation, tc.pv, func(e *engine.Engine) variant.Engine {
				return limitedEngine{e, nil}
			})
			var le *revision.YAMLLimitError
			require.ErrorIs(t, err, repository.ErrInvalidInput)
			require.True(t, errors.As(err, &le), "%v is not a *revision.YAMLLimitError", err)
			require.Equal(t, "MaxAliasNodes", le.Limit)
			require.Equal(t, revision.DefaultYAMLMaxAliasNodes, le.Max)
			require.Equal(t, tc.file, le.File)
			require.False(t, changed, "a refused sync writes nothing")
		})
	}
}

// TestSyncUsesLooserEngineYAMLLimits: the concrete engine's YAMLLimits
// are the ones Sync applies: an engine built with MaxAliasNodes -1 (no
// bound) syncs the file the default bounds refuse.
func TestSyncUsesLooserEngineYAMLLimits(t *testing.T) {
	for _, tc := range bombCases {
		t.Run(tc.name, func(t *testing.T) {
			err, changed := syncBomb(t, 5, 10, tc.file, tc.object, tc.annotation, tc.pv, func(e *engine.Engine) variant.Engine { return e })
			require.NoError(t, err)
			require.True(t, changed)
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

// TestDecodeLimits: DecodeLimits holds the stream to the bounds it is
// given: a stream whose aliases add about 1,100 nodes gets past the
// default bounds (to fail only on its unknown fields) and is refused
// under MaxAliasNodes 100.
func TestDecodeLimits(t *testing.T) {
	data := []byte(hostileyaml.Laughs(3, 10) + "apiVersion: " + variant.PackageVariantAPIVersion +
		"\nkind: PackageVariant\nmetadata: {name: x}\n")
	_, err := variant.Decode(data)
	var le *revision.YAMLLimitError
	require.ErrorIs(t, err, repository.ErrInvalidInput)
	require.False(t, errors.As(err, &le), "%v", err)
	require.ErrorContains(t, err, "unknown field")
	_, err = variant.DecodeLimits(data, &revision.YAMLLimits{MaxAliasNodes: 100})
	require.ErrorIs(t, err, repository.ErrInvalidInput)
	require.True(t, errors.As(err, &le), "%v is not a *revision.YAMLLimitError", err)
	require.Equal(t, "MaxAliasNodes", le.Limit)
}
