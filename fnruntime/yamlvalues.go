package fnruntime

import (
	"context"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/revision"
)

// parseValue parses s, a YAML value a builtin function reads from a
// string of its config or of an annotation (what names it), as
// yaml.Parse does, after holding it to the default revision.YAMLLimits:
// such a value is new YAML, which the bounds of the ResourceList that
// carried it as a string did not measure. It returns the
// *revision.YAMLLimitError for a value over a bound, or yaml.Parse's
// error.
func parseValue(what, s string) (*yaml.RNode, error) {
	if err := revision.CheckYAML(context.Background(), what, []byte(s), nil); err != nil {
		return nil, err
	}
	return yaml.Parse(s)
}
