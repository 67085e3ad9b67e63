package cli

import (
	"os"
	"path"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// renderRoot is where the library's renderer places the package it
// renders; functions see it in the package-path annotation.
const renderRoot = "/pkg"

var krmFiles = append([]string{revision.KptfileName}, kio.MatchAll...)

// readItems reads the resources of a package as kpt's package reader
// does: every KRM file of the package and its subpackages, with path,
// index and sequence-indent annotations, honouring .krmignore.
func readItems(files revision.Files) ([]*kyaml.RNode, error) {
	fsys := filesys.MakeFsInMemory()
	if err := fsys.MkdirAll(renderRoot); err != nil {
		return nil, err
	}
	for _, p := range files.Paths() {
		data, _ := files.Get(p)
		full := path.Join(renderRoot, p)
		if err := fsys.MkdirAll(path.Dir(full)); err != nil {
			return nil, err
		}
		if err := fsys.WriteFile(full, data); err != nil {
			return nil, err
		}
	}
	r := kio.LocalPackageReader{
		PackagePath:        renderRoot,
		IncludeSubpackages: true,
		PackageFileName:    revision.KptfileName,
		MatchFilesGlob:     krmFiles,
		PreserveSeqIndent:  true,
		WrapBareSeqNode:    true,
		FileSystem:         filesys.FileSystemOrOnDisk{FileSystem: fsys},
	}
	return r.Read()
}

func itemID(path, index string) string { return path + "#" + index }

// orderOf returns the resources of a rendered package in the order, and
// with the in-memory form, that kpt emits them. The library's Output holds
// only files, so both are taken from the recorded function runs: a
// package's resources are what its last mutator without selectors
// returned (which includes its subpackages'); for a function that ran
// in-process those are the renderer's own final nodes, otherwise the
// re-read files in that order. A package without such a mutator
// contributes its own resources in file order, then each subpackage's.
// Resources the recording does not place come last, in file order.
func orderOf(steps []pipeline.StepResult, calls []*fnCall, files revision.Files) ([]*kyaml.RNode, error) {
	items, err := readItems(files)
	if err != nil {
		return nil, err
	}
	o := &orderer{byID: map[string]*kyaml.RNode{}, items: items, dirs: packageDirs(files), steps: steps, matched: matchCalls(steps, calls)}
	for _, n := range items {
		o.byID[nodeID(n)] = n
	}
	bfs := false
	if data, ok := files.Get(revision.KptfileName); ok {
		if kf, err := revision.ParseKptfile(data); err == nil {
			bfs = strings.EqualFold(kf.Metadata.Annotations["kpt.dev/bfs-rendering"], "true")
		}
	}
	var ordered []*kyaml.RNode
	if !bfs {
		ordered = o.packageNodes("")
	}
	var out []*kyaml.RNode
	used := map[string]bool{}
	for _, n := range append(ordered, items...) {
		if id := nodeID(n); !used[id] {
			out = append(out, n)
			used[id] = true
		}
	}
	return out, nil
}

func nodeID(n *kyaml.RNode) string {
	p, idx, _ := kioutil.GetFileAnnotations(n)
	if idx == "" {
		idx = "0"
	}
	return itemID(path.Clean(p), idx)
}

type orderer struct {
	byID    map[string]*kyaml.RNode
	items   []*kyaml.RNode
	dirs    []string
	steps   []pipeline.StepResult
	matched []*fnCall
}

// packageNodes returns the resources of package dir and its subpackages,
// in pipeline order.
func (o *orderer) packageNodes(dir string) []*kyaml.RNode {
	rel := "."
	if dir != "" {
		rel = "./" + dir
	}
	// The package's mutators that ran, in order.
	var runs []*fnCall
	for i, s := range o.steps {
		if c := o.matched[i]; s.Package == rel && !s.Validator && c != nil && s.ExitCode == 0 && s.ExecutionError == "" {
			runs = append(runs, c)
		}
	}
	last := -1
	for i, c := range runs {
		if !c.selective {
			last = i
		}
	}
	var list []*kyaml.RNode
	sorted := false
	switch {
	case last >= 0 && runs[last].nodes != nil:
		list = append(list, runs[last].nodes...)
		sorted = sortsOutput(runs[last].id)
	case last >= 0:
		list = o.byKeys(runs[last].out)
		sorted = sortsOutput(runs[last].id)
	default:
		list = o.fileOrder(dir)
	}
	for _, c := range runs[last+1:] {
		if c.nodes == nil {
			// An external function's output nodes are not at hand.
			continue
		}
		list = mergeByID(list, c)
	}
	if sorted {
		sortItems(list)
	}
	return list
}

// byKeys returns the re-read resources at the recorded keys, in order.
func (o *orderer) byKeys(keys []itemKey) []*kyaml.RNode {
	var out []*kyaml.RNode
	for _, k := range keys {
		pp, ok := strings.CutPrefix(k.pkg, renderRoot)
		if !ok || k.path == "" {
			continue
		}
		idx := k.index
		if idx == "" {
			idx = "0"
		}
		if n, ok := o.byID[itemID(path.Join(strings.TrimPrefix(pp, "/"), k.path), idx)]; ok {
			out = append(out, n)
		}
	}
	return out
}

// fileOrder returns the package's own re-read resources in file order,
// then each subpackage's in pipeline order: the input of its pipeline.
func (o *orderer) fileOrder(dir string) []*kyaml.RNode {
	var out []*kyaml.RNode
	for _, n := range o.items {
		p, _, _ := kioutil.GetFileAnnotations(n)
		if owner(path.Dir(p), o.dirs) == dir {
			out = append(out, n)
		}
	}
	for _, sub := range o.dirs {
		if sub != "" && sub != dir && owner(parentDir(sub), o.dirs) == dir {
			out = append(out, o.packageNodes(sub)...)
		}
	}
	return out
}

// mergeByID applies a selective run to list as the renderer does: the
// resources it was given (by their position ids) are replaced by its
// output with the same id, or dropped; output without an id is appended.
func mergeByID(list []*kyaml.RNode, c *fnCall) []*kyaml.RNode {
	selected := map[string]bool{}
	for _, id := range c.inIDs {
		selected[id] = true
	}
	byID := map[string]*kyaml.RNode{}
	var generated []*kyaml.RNode
	for _, n := range c.nodes {
		if id := n.GetAnnotations()[resourceIDAnnotation]; id != "" {
			byID[id] = n
		} else {
			generated = append(generated, n)
		}
	}
	var out []*kyaml.RNode
	for i, n := range list {
		id := strconv.Itoa(i)
		if !selected[id] {
			out = append(out, n)
		} else if r, ok := byID[id]; ok {
			out = append(out, r)
		}
	}
	return append(out, generated...)
}

func parentDir(d string) string {
	p := path.Dir(d)
	if p == "." {
		return ""
	}
	return p
}

// owner returns the package directory that owns directory d: the deepest
// package directory at or above it.
func owner(d string, dirs []string) string {
	if d == "." {
		d = ""
	}
	best := ""
	for _, pd := range dirs {
		if pd == "" {
			continue
		}
		if (d == pd || strings.HasPrefix(d, pd+"/")) && len(pd) > len(best) {
			best = pd
		}
	}
	return best
}

// emit writes rendered or evaluated resources to an out-of-place
// destination, as kpt's -o does.
func (c *cmdEnv) emit(out outputMode, items []*kyaml.RNode) error {
	switch out.kind {
	case "stdout":
		return kio.ByteWriter{Writer: c.stdout, KeepReaderAnnotations: true,
			WrappingKind: kio.ResourceListKind, WrappingAPIVersion: kio.ResourceListAPIVersion}.Write(items)
	case "unwrap":
		return kio.ByteWriter{Writer: c.stdout, ClearAnnotations: []string{kioutil.PathAnnotation, kioutil.LegacyPathAnnotation}}.Write(items)
	case "dir":
		if err := os.MkdirAll(out.dir, 0o755); err != nil {
			return err
		}
		return kio.LocalPackageWriter{PackagePath: out.dir}.Write(items)
	}
	return nil
}
