// Package stdfn is the standard pipeline wiring: a Kptfile renderer whose
// steps resolve through a function registry and which evaluates CEL step
// conditions and computed inputs (kpt's condition and cad's
// configMapExprs, in Kptfiles and package files) and runs the declarative
// CEL validator (celfn.ValidatorImage). It is what cad's own binaries
// render with; use it unless you need a different CEL environment (then
// build a celfn.Evaluator and call its Install).
//
//	e, err := engine.New(&engine.Options{
//		Repositories: repos,
//		Pipeline:     stdfn.Kptfile(fnruntime.NewRegistry(nil), nil),
//	})
//
// Everything here is safe for concurrent use.
package stdfn

import (
	"sync"

	"github.com/configasdata/cad/fnruntime/celfn"
	"github.com/configasdata/cad/pipeline"
)

// evaluator is built once: its environment is static and its compiled
// programs are kept (bounded) and shared.
var evaluator = sync.OnceValue(func() *celfn.Evaluator {
	ev, err := celfn.New()
	if err != nil {
		panic("stdfn: the standard CEL environment does not build: " + err.Error())
	}
	return ev
})

// Evaluator returns the standard CEL evaluator (celfn.New with its
// defaults), built on first use and shared.
func Evaluator() *celfn.Evaluator { return evaluator() }

// Options returns a copy of opts (nil: the defaults) with the standard CEL
// evaluator set as its condition and input evaluator, and registers the
// CEL validator in reg when reg is not nil.
func Options(reg celfn.Registrar, opts *pipeline.Options) *pipeline.Options {
	out := pipeline.Options{}
	if opts != nil {
		out = *opts
	}
	Evaluator().Install(&out, reg)
	return &out
}

// Kptfile returns pipeline.NewKptfile over resolver with Options(reg,
// opts), where reg is resolver when it takes functions (celfn.Registrar,
// as a *fnruntime.Registry does), so the validator resolves.
func Kptfile(resolver pipeline.Resolver, opts *pipeline.Options) *pipeline.Renderer {
	reg, _ := resolver.(celfn.Registrar)
	return pipeline.NewKptfile(resolver, Options(reg, opts))
}
