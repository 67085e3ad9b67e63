package pipeline

import (
	"bytes"
	"fmt"
	"io"

	"github.com/configasdata/cad/revision"
)

// resourceListLimits returns the bounds of lim that apply to a
// ResourceList, which holds a whole package in one document: those on
// nesting, alias expansion and mapping size, whose cost grows faster
// than the bytes. Its size is the function runtime's to bound.
func resourceListLimits(lim *revision.YAMLLimits) *revision.YAMLLimits {
	var l revision.YAMLLimits
	if lim != nil {
		l = *lim
	}
	l.MaxBytes, l.MaxNodes, l.MaxPackageNodes = -1, -1, -1
	return &l
}

// runStream runs a stream function, and passes its output on only when
// it is within the render's YAML bounds: the output is read by kyaml,
// which expands aliases.
func (r *runner) runStream(sf StreamFunction, in io.Reader, out io.Writer) error {
	var buf bytes.Buffer
	stderr, err := sf.RunStream(r.ctx, in, &buf)
	r.result.Stderr = stderr
	if cerr := revision.CheckYAML(r.ctx, "output of "+r.result.ID(), buf.Bytes(), resourceListLimits(r.limits)); cerr != nil {
		return fmt.Errorf("function %s: %w", r.result.ID(), cerr)
	}
	if _, werr := out.Write(buf.Bytes()); werr != nil && err == nil {
		err = werr
	}
	return err
}
