package cli

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/revision"
)

// readBoundedYAML reads all of in, the YAML named name, holds it to the
// default revision.YAMLLimits, and then parses it with br (whose Reader
// it replaces). A stream over a bound (an alias bomb, a million
// documents) is refused with the *revision.YAMLLimitError, matching
// repository.ErrInvalidInput, before kyaml reads it; a read error is
// returned as is.
func (c *cmdEnv) readBoundedYAML(name string, in io.Reader, br kio.ByteReader) ([]*kyaml.RNode, error) {
	// One byte over the bound is enough for CheckYAML to refuse it.
	data, err := io.ReadAll(io.LimitReader(in, revision.DefaultYAMLMaxBytes+1))
	if err != nil {
		return nil, err
	}
	if err := revision.CheckYAML(c.ctx, name, data, nil); err != nil {
		return nil, err
	}
	br.Reader = bytes.NewReader(data)
	return br.Read()
}

// checkYAMLDir holds every file of the package directory dir that fn
// eval and fn source read as KRM (a Kptfile, *.yaml, *.yml, subpackages
// included) to the default per-file revision.YAMLLimits, as the engine
// does for a package in a repository; when dir is a file (a
// --fn-config), that file whatever its name. It returns the first
// *revision.YAMLLimitError (naming the file relative to dir), a read
// error, or nil.
func (c *cmdEnv) checkYAMLDir(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || (p != dir && !revision.IsYAMLFile(d.Name())) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			rel = filepath.Base(p)
		}
		if err := revision.CheckYAML(c.ctx, filepath.ToSlash(rel), data, nil); err != nil {
			return fmt.Errorf("reading %q: %w", dir, err)
		}
		return nil
	})
}
