package cli

import (
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/revision"
)

// errMetaResources is kpt's refusal of the removed
// --include-meta-resources flag.
const errMetaResources = "--include-meta-resources is no longer necessary because meta resources are now included by default"

// runSource is kpt fn source: the resources of DIR (subpackages and meta
// resources included) as a ResourceList on standard output, with their
// path and index annotations, or as plain YAML with -o unwrap.
func runSource(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "source [DIR] [flags]", short: "Source resources from a local directory.", long: `
Reads the resources of DIR (default ".", subpackages and the Kptfile
included) and writes them to standard output as a ResourceList, for a pipe
into fn eval - and fn sink. -o unwrap writes plain multi-document YAML
instead; --fn-config adds the file's object as the functionConfig.`}
	fs := c.newFlagSet("fn source")
	output := fs.String("output", "stdout", "output format: stdout (a ResourceList) or unwrap (plain YAML)")
	fs.StringVar(output, "o", "stdout", "shorthand for --output")
	fnConfig := fs.String("fn-config", "", "file holding the functionConfig to add")
	meta := fs.Bool("include-meta-resources", false, "removed: meta resources are always included")
	pos, rest, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	if *meta {
		return errors.New(errMetaResources)
	}
	if len(pos)+len(rest) > 1 {
		return usagef("accepts at most 1 arg(s), received %d", len(pos)+len(rest))
	}
	if *output != "stdout" && *output != "unwrap" {
		return fmt.Errorf("invalid input for --output flag %q, must be %q or %q", *output, "stdout", "unwrap")
	}
	arg := "."
	if len(pos) == 1 {
		arg = pos[0]
	}
	var cfg *kyaml.RNode
	if *fnConfig != "" {
		if err := c.checkYAMLDir(c.abs(*fnConfig)); err != nil {
			return err
		}
		configs, err := kio.LocalPackageReader{PackagePath: c.abs(*fnConfig), PreserveSeqIndent: true, WrapBareSeqNode: true}.Read()
		if err != nil {
			return err
		}
		if len(configs) != 1 {
			return fmt.Errorf("expected exactly 1 functionConfig, found %d", len(configs))
		}
		cfg = configs[0]
	}
	if st, err := os.Stat(c.abs(arg)); err != nil || !st.IsDir() {
		return fmt.Errorf("%q is not a directory", arg)
	}
	// A symbolic link to the package reads the package, as in kpt.
	dir, err := c.packageDir(arg)
	if err != nil {
		return err
	}
	if err := c.checkYAMLDir(dir); err != nil {
		return err
	}
	items, err := kio.LocalPackageReader{PackagePath: dir, IncludeSubpackages: true, PackageFileName: revision.KptfileName,
		MatchFilesGlob: krmFiles, PreserveSeqIndent: true, WrapBareSeqNode: true}.Read()
	if err != nil {
		return err
	}
	w := kio.ByteWriter{Writer: c.stdout, FunctionConfig: cfg}
	if *output == "stdout" {
		w.KeepReaderAnnotations = true
		w.WrappingKind, w.WrappingAPIVersion = kio.ResourceListKind, kio.ResourceListAPIVersion
	} else {
		w.ClearAnnotations = []string{kioutil.IndexAnnotation, kioutil.PathAnnotation, kioutil.LegacyPathAnnotation, kioutil.LegacyIndexAnnotation}
	}
	return w.Write(items)
}

// runSink is kpt fn sink: the ResourceList on standard input written to
// DIR, which must not exist yet, each resource in the file its path
// annotation names.
func runSink(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "sink DIR [flags]", short: "Write resources to a local directory.", long: `
Reads a ResourceList (or plain YAML) from standard input and writes its
resources to DIR, which must not exist yet, each to the file its path
annotation names (the default path otherwise).`}
	fs := c.newFlagSet("fn sink")
	pos, rest, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	if n := len(pos) + len(rest); n != 1 {
		return usagef("accepts 1 arg(s), received %d", n)
	}
	out := outputMode{kind: "dir", dir: c.abs(pos[0])}
	if _, err := os.Lstat(out.dir); err == nil {
		return fmt.Errorf("directory %q already exists, please delete the directory and retry", pos[0])
	}
	items, err := c.readBoundedYAML("standard input", c.stdin, kio.ByteReader{PreserveSeqIndent: true, WrapBareSeqNode: true})
	if err != nil {
		return fmt.Errorf("reading resources from standard input: %w", err)
	}
	if err := kioutil.DefaultPathAndIndexAnnotation("", items); err != nil {
		return err
	}
	return c.emit(out, items)
}
