// Package stdpipe is the pipeline configuration every example binary
// renders with: CEL step conditions and computed inputs (kpt's condition
// and cad's configMapExprs in Kptfiles and package files) and the
// declarative CEL validator (celfn.ValidatorImage), on top of a function
// registry.
package stdpipe

import (
	"sync"

	"github.com/configasdata/cad/fnruntime/celfn"
	"github.com/configasdata/cad/pipeline"
)

// evaluator is built once: its environment is static and its programs are
// cached and shared.
var evaluator = sync.OnceValue(func() *celfn.Evaluator {
	ev, err := celfn.New()
	if err != nil {
		panic("stdpipe: the CEL environment does not build: " + err.Error())
	}
	return ev
})

// Options returns opts (nil: the defaults) with the CEL evaluator set, and
// registers the CEL validator in reg when reg is not nil.
func Options(reg celfn.Registrar, opts *pipeline.Options) *pipeline.Options {
	out := pipeline.Options{}
	if opts != nil {
		out = *opts
	}
	evaluator().Install(&out, reg)
	return &out
}

// Kptfile returns pipeline.NewKptfile over resolver with Options(reg,
// opts); reg is resolver when it is a registry that takes functions.
func Kptfile(resolver pipeline.Resolver, opts *pipeline.Options) *pipeline.Renderer {
	reg, _ := resolver.(celfn.Registrar)
	return pipeline.NewKptfile(resolver, Options(reg, opts))
}
