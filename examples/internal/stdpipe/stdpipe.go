// Package stdpipe is the pipeline configuration every example binary
// renders with. It forwards to the public preset fnruntime/stdfn, which
// users import; new code should use stdfn directly.
package stdpipe

import (
	"github.com/configasdata/cad/fnruntime/celfn"
	"github.com/configasdata/cad/fnruntime/stdfn"
	"github.com/configasdata/cad/pipeline"
)

// Options is stdfn.Options.
func Options(reg celfn.Registrar, opts *pipeline.Options) *pipeline.Options {
	return stdfn.Options(reg, opts)
}

// Kptfile is stdfn.Kptfile.
func Kptfile(resolver pipeline.Resolver, opts *pipeline.Options) *pipeline.Renderer {
	return stdfn.Kptfile(resolver, opts)
}
