package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

func pkgCommands() []command {
	return []command{
		{name: "init", short: "Initialize an empty package in a local directory, as kpt pkg init", run: runPkgInit},
	}
}

// runPkgInit is kpt pkg init: it creates DIR if needed and writes, unless
// they exist, a Kptfile (local-config, with info), a README.md and the
// abstract package context (package-context.yaml), reporting each on
// standard error as kpt does.
func runPkgInit(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "init [DIR] [flags]", short: "Initialize an empty package in a local directory.", long: `
Creates DIR (default ".") if it does not exist and writes the files of an
empty kpt package that are missing: a Kptfile naming the package after the
directory, a README.md and package-context.yaml.`}
	fs := c.newFlagSet("pkg init")
	desc := fs.String("description", "sample description", "short description of the package")
	var keywords stringsFlag
	fs.Var(&keywords, "keywords", "keywords of the package (comma separated; repeatable)")
	site := fs.String("site", "", "link to a page with information about the package")
	pos, rest, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	if n := len(pos) + len(rest); n > 1 {
		return usagef("accepts at most 1 arg(s), received %d", n)
	}
	rel := "."
	if len(pos) == 1 {
		rel = pos[0]
	}
	dir := c.abs(rel)
	name := filepath.Base(dir)
	if st, err := os.Stat(dir); err != nil {
		c.stderrf("creating package directory %s\n", rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("failed to create directory %s: %w", dir, err)
		}
	} else if !st.IsDir() {
		return fmt.Errorf("%q is not a directory", rel)
	}
	var kws []string
	for _, k := range keywords {
		for _, w := range strings.Split(k, ",") {
			if w = strings.TrimSpace(w); w != "" {
				kws = append(kws, w)
			}
		}
	}
	write := func(file string, content func() ([]byte, error)) error {
		p := filepath.Join(dir, file)
		if _, err := os.Stat(p); err == nil {
			return nil
		}
		c.stderrf("writing %s\n", filepath.Join(rel, file))
		data, err := content()
		if err != nil {
			return err
		}
		return os.WriteFile(p, data, 0o644)
	}
	if err := write(revision.KptfileName, func() ([]byte, error) {
		kf := revision.NewKptfile(name)
		kf.Metadata.Annotations = map[string]string{pipeline.LocalConfigAnnotation: "true"}
		kf.Info = &revision.PackageInfo{Description: *desc, Site: *site, Keywords: kws}
		return kf.Encode()
	}); err != nil {
		return err
	}
	if err := write("README.md", func() ([]byte, error) {
		return []byte(fmt.Sprintf("# %s\n\n%s\n\n## Usage\n\nRender the package after editing it:\n\n    cadctl fn render %s\n", name, *desc, name)), nil
	}); err != nil {
		return err
	}
	return write("package-context.yaml", func() ([]byte, error) {
		return []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: example\n"), nil
	})
}
