// Package kpttestfns implements the two function images that kpt's e2e
// fixtures use but that are not catalog functions: no-op and
// drop-comments, test images of kpt's own e2e suite. They belong in the
// registries of tests that run kpt's fixtures, never in the production
// builtins: a user's package naming "no-op" must not silently run a
// function cad made up.
package kpttestfns

import (
	"context"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/pipeline"
)

// Functions returns, as a new map by image name (without the catalog
// prefix), kpt's test images: "no-op" returns its input unchanged;
// "drop-comments" removes every comment of every item. Neither fails.
func Functions() map[string]pipeline.Function {
	return map[string]pipeline.Function{
		"no-op":         pipeline.FunctionFunc(noOp),
		"drop-comments": pipeline.FunctionFunc(dropComments),
	}
}

// Registerer is what Register adds the functions to
// (*fnruntime.Registry has this method).
type Registerer interface {
	Register(name string, fn pipeline.Function)
}

// Register adds Functions to r.
func Register(r Registerer) {
	for name, fn := range Functions() {
		r.Register(name, fn)
	}
}

func noOp(context.Context, *pipeline.ResourceList) error { return nil }

func dropComments(_ context.Context, rl *pipeline.ResourceList) error {
	for _, it := range rl.Items {
		clearComments(it.YNode())
	}
	return nil
}

func clearComments(n *yaml.Node) {
	if n == nil {
		return
	}
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		clearComments(c)
	}
}
