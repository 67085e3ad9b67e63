package revision

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/internal/yamlmemo"
)

// Default bounds of [YAMLLimits], per YAML file.
const (
	// DefaultYAMLMaxBytes bounds the size of one file.
	DefaultYAMLMaxBytes = 32 << 20
	// DefaultYAMLMaxDocuments bounds the documents ("---") of one file:
	// each costs kyaml tens of kilobytes, so 85,000 small ones in 5.5 MB
	// once took 2.4 GB.
	DefaultYAMLMaxDocuments = 10_000
	// DefaultYAMLMaxDepth bounds the nesting of mappings and sequences,
	// aliases expanded. Kubernetes schemas nest a few dozen levels.
	DefaultYAMLMaxDepth = 1000
	// DefaultYAMLMaxNodes bounds the nodes of one file with its aliases
	// expanded: about what 10 MB of ordinary YAML holds.
	DefaultYAMLMaxNodes = 1_000_000
	// DefaultYAMLMaxAliasNodes bounds the nodes that aliases (including
	// merge keys, "<<: *base") add when they are expanded. A 348-byte
	// "billion laughs" file adds 387 million.
	DefaultYAMLMaxAliasNodes = 100_000
	// DefaultYAMLMaxMapEntries bounds the keys of one mapping; kyaml looks
	// fields up by a linear scan, so its work on one mapping grows with
	// the square of its size.
	DefaultYAMLMaxMapEntries = 20_000
	// DefaultYAMLMaxPackageDocuments bounds the documents of all the YAML
	// files of one package together: a render costs kyaml about 20 KB
	// and half a millisecond of CPU per resource, so 85,000 small ones
	// split over nine files took 68 s and 1.9 GB.
	DefaultYAMLMaxPackageDocuments = 10_000
	// DefaultYAMLMaxPackageNodes bounds the nodes (aliases expanded) of
	// all the YAML files of one package together.
	DefaultYAMLMaxPackageNodes = 2_000_000
)

// YAMLLimits bound the work of reading one YAML file of a package: its
// size, documents, nesting, nodes, and the nodes its aliases expand to;
// and of reading all the YAML files of a package together. The zero
// value of each field means its Default constant; a negative value means
// no bound. [CheckYAML] applies the per-file bounds to one file,
// [CheckYAMLFiles] all of them to a package; the engine, the pipeline,
// the Kptfile and package file parsers apply them to user YAML before
// reading it, so a file over a bound is refused before any work that
// grows with it is done.
type YAMLLimits struct {
	MaxBytes      int // default DefaultYAMLMaxBytes
	MaxDocuments  int // default DefaultYAMLMaxDocuments
	MaxDepth      int // default DefaultYAMLMaxDepth
	MaxNodes      int // default DefaultYAMLMaxNodes
	MaxAliasNodes int // default DefaultYAMLMaxAliasNodes
	MaxMapEntries int // default DefaultYAMLMaxMapEntries

	MaxPackageDocuments int // default DefaultYAMLMaxPackageDocuments
	MaxPackageNodes     int // default DefaultYAMLMaxPackageNodes
}

func (l *YAMLLimits) withDefaults() YAMLLimits {
	var o YAMLLimits
	if l != nil {
		o = *l
	}
	def := func(v *int, d int) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = int(^uint(0) >> 1)
		}
	}
	def(&o.MaxBytes, DefaultYAMLMaxBytes)
	def(&o.MaxDocuments, DefaultYAMLMaxDocuments)
	def(&o.MaxDepth, DefaultYAMLMaxDepth)
	def(&o.MaxNodes, DefaultYAMLMaxNodes)
	def(&o.MaxAliasNodes, DefaultYAMLMaxAliasNodes)
	def(&o.MaxMapEntries, DefaultYAMLMaxMapEntries)
	def(&o.MaxPackageDocuments, DefaultYAMLMaxPackageDocuments)
	def(&o.MaxPackageNodes, DefaultYAMLMaxPackageNodes)
	return o
}

// YAMLLimitError reports a YAML file refused because reading it would
// exceed a bound of [YAMLLimits]. It matches [ErrLimit] and [ErrInvalid]
// with errors.Is.
type YAMLLimitError struct {
	File     string // the file, as the caller named it
	Document int    // the 1-based document where the bound was crossed; 0 for the whole file
	Limit    string // the YAMLLimits field, e.g. "MaxAliasNodes"
	Max      int    // its value
}

// Error returns the message, naming the file and the bound.
func (e *YAMLLimitError) Error() string {
	doc := ""
	if e.Document > 0 {
		doc = fmt.Sprintf(" (document %d)", e.Document)
	}
	return fmt.Sprintf("YAML file %q%s %s", e.File, doc, e.reason())
}

// reason says which bound was crossed, without the file.
func (e *YAMLLimitError) reason() string {
	what := map[string]string{
		"MaxBytes":      "is larger than %d bytes",
		"MaxDocuments":  "has more than %d documents",
		"MaxDepth":      "nests deeper than %d levels",
		"MaxNodes":      "has more than %d nodes",
		"MaxAliasNodes": "has aliases that expand to more than %d nodes",
		"MaxMapEntries": "has a mapping of more than %d keys",

		"MaxPackageDocuments": "brings the package's documents over %d",
		"MaxPackageNodes":     "brings the package's nodes over %d",
	}[e.Limit]
	if what == "" {
		what = "exceeds %d"
	}
	return fmt.Sprintf(what, e.Max) + " (YAMLLimits." + e.Limit + ")"
}

// Is reports whether target is [ErrLimit] or [ErrInvalid].
func (e *YAMLLimitError) Is(target error) bool { return target == ErrLimit || target == ErrInvalid }

// checkParse applies the default limits to data, the file name, for the
// parsers of this package; it returns the *YAMLLimitError, or nil.
func checkParse(name string, data []byte) *YAMLLimitError {
	var le *YAMLLimitError
	if err := CheckYAML(context.Background(), name, data, nil); errors.As(err, &le) {
		return le
	}
	return nil
}

// CheckYAML reports whether reading data, the YAML file name, stays within
// lim (nil means the defaults). It parses the documents one at a time
// without expanding aliases, and measures what expanding them would cost
// by walking each document's node graph once, remembering the size of
// every anchored node, so a "billion laughs" file is refused in
// microseconds. It returns a *YAMLLimitError (matching [ErrInvalid]) for
// the first bound crossed, ctx.Err() when ctx ends first, and nil
// otherwise, including for data that is not valid YAML: a syntax error is
// for the parser that reads the file to report.
//
// A file whose size alone shows that it is within the bounds (small, no
// alias) is not parsed at all, so checking a Kptfile costs next to
// nothing; nor is a file whose exact bytes already passed a check under
// the same per-file bounds (see [CheckYAMLFiles]).
func CheckYAML(ctx context.Context, name string, data []byte, lim *YAMLLimits) error {
	l := lim.withDefaults()
	l.MaxPackageDocuments, l.MaxPackageNodes = l.MaxDocuments, l.MaxNodes // one file alone
	if withinByScan(data, l) {
		return ctx.Err()
	}
	c := newYAMLChecker(l)
	return c.check(ctx, name, data)
}

// withinByScan reports whether data is certainly within the per-file
// bounds of l, from upper bounds that a scan of its bytes gives without
// parsing: with no "*" there is no alias to expand; every node takes at
// least half a byte (as in "{a,b}" or "?\n"); every mapping entry, at
// least a byte; every document, at least three ("---"); and every level
// of nesting below the top one is opened by one of ":-?[{" (a value, a
// sequence entry, an explicit key, a flow collection). The walk is
// needed only when a bound is within reach of these estimates.
func withinByScan(data []byte, l YAMLLimits) bool {
	if len(data) > l.MaxBytes || bytes.IndexByte(data, '*') >= 0 {
		return false
	}
	openers := 0
	for _, b := range data {
		switch b {
		case ':', '-', '?', '[', '{':
			openers++
		}
	}
	n := len(data)
	return 2+openers <= l.MaxDepth && 2*n+2 <= l.MaxNodes && n <= l.MaxMapEntries && n/3+1 <= l.MaxDocuments
}

// CheckYAMLFiles applies lim (nil means the defaults) to every YAML file
// of files (Kptfiles, *.yaml, *.yml), as [CheckYAML] does, and its
// package bounds (MaxPackageDocuments, MaxPackageNodes) to all of them
// together, in path order. It returns the first *YAMLLimitError
// (matching [ErrInvalid]), naming the file where a bound was crossed, or
// ctx.Err().
//
// A file whose exact bytes already passed a check under the same per-file
// bounds (in this process; the last 16,384 such contents are remembered,
// keyed by their SHA-256) is not parsed again: its documents and nodes,
// remembered from that check, count towards the package bounds as they
// would if it were parsed. So the render that follows an engine's check,
// or a save that changes one file of many, parses only what is new.
func CheckYAMLFiles(ctx context.Context, files Files, lim *YAMLLimits) error {
	c := newYAMLChecker(lim.withDefaults())
	for _, p := range files.Paths() {
		if !IsYAMLFile(p) {
			continue
		}
		data, _ := files.Get(p)
		if err := c.check(ctx, p, data); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// IsYAMLFile reports whether the package file p is read as YAML by the
// engine and the pipeline: a Kptfile, or a name ending in .yaml or .yml.
func IsYAMLFile(p string) bool {
	ext := path.Ext(p)
	return ext == ".yaml" || ext == ".yml" || path.Base(p) == KptfileName
}

// newYAMLChecker returns a checker of l.
func newYAMLChecker(l YAMLLimits) yamlChecker {
	return yamlChecker{l: l}
}

// perFile returns the per-file bounds of c, the key of its memo entries.
func (c *yamlChecker) perFile() yamlmemo.Limits {
	l := c.l
	return yamlmemo.Limits{l.MaxBytes, l.MaxDocuments, l.MaxDepth, l.MaxNodes, l.MaxAliasNodes, l.MaxMapEntries}
}

// check measures one file, adding to the package totals. A file whose
// bytes passed under the same per-file bounds before (internal/yamlmemo)
// adds the counts remembered, unless they would cross a package bound:
// then it is parsed again, so the error names the document as it would
// without the memo.
func (c *yamlChecker) check(ctx context.Context, name string, data []byte) error {
	if len(data) > c.l.MaxBytes {
		return &YAMLLimitError{File: name, Limit: "MaxBytes", Max: c.l.MaxBytes}
	}
	// Hashing is about 1% of a parse (BenchmarkRenderYAMLBounds).
	sum := yamlmemo.SumOf(data)
	if n, ok := yamlmemo.Lookup(sum, c.perFile()); ok &&
		c.pkgDocs+n.Documents <= c.l.MaxPackageDocuments && satAdd(c.pkgNodes, n.Nodes) <= c.l.MaxPackageNodes {
		c.pkgDocs += n.Documents
		c.pkgNodes = satAdd(c.pkgNodes, n.Nodes)
		return ctx.Err()
	}
	yamlmemo.Parsed(sum)
	c.name, c.doc, c.nodes, c.alias = name, 0, 0, 0
	dec := yaml.NewDecoder(bytes.NewReader(data))
	passed := func() error {
		yamlmemo.Store(sum, c.perFile(), yamlmemo.Counts{Documents: c.doc, Nodes: c.nodes})
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return passed()
		}
		if err != nil {
			return passed() // a syntax error is the reader's to report
		}
		c.doc++
		if c.doc > c.l.MaxDocuments {
			return c.fail("MaxDocuments", c.l.MaxDocuments)
		}
		if c.pkgDocs++; c.pkgDocs > c.l.MaxPackageDocuments {
			return c.fail("MaxPackageDocuments", c.l.MaxPackageDocuments)
		}
		c.sizes = nil
		before := c.nodes
		if _, _, err := c.walk(&doc, 0); err != nil {
			return err
		}
		if c.pkgNodes = satAdd(c.pkgNodes, c.nodes-before); c.pkgNodes > c.l.MaxPackageNodes {
			return c.fail("MaxPackageNodes", c.l.MaxPackageNodes)
		}
	}
}

type yamlChecker struct {
	l        YAMLLimits
	pkgDocs  int // documents of the files checked so far
	pkgNodes int // expanded nodes of the files checked so far
	name     string
	doc      int
	nodes    int // expanded nodes so far, over the whole file
	alias    int // nodes added by aliases so far
	// sizes memoises the expanded size and height of anchored nodes
	// (alias targets) of the current document; -1 marks one being
	// measured, a cycle.
	sizes map[*yaml.Node][2]int
}

func (c *yamlChecker) fail(limit string, max int) error {
	return &YAMLLimitError{File: c.name, Document: c.doc, Limit: limit, Max: max}
}

// walk returns the expanded size and height of n at depth, counting its
// nodes into c.nodes as it goes (aliases count through c.alias). It
// fails as soon as a bound is crossed, so its work is bounded by the
// limits whatever the input.
func (c *yamlChecker) walk(n *yaml.Node, depth int) (size, height int, err error) {
	if depth > c.l.MaxDepth {
		return 0, 0, c.fail("MaxDepth", c.l.MaxDepth)
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return 1, 1, nil
		}
		s, h, err := c.measure(n.Alias)
		if err != nil {
			return 0, 0, err
		}
		if depth+h-1 > c.l.MaxDepth {
			return 0, 0, c.fail("MaxDepth", c.l.MaxDepth)
		}
		c.alias = satAdd(c.alias, s)
		c.nodes = satAdd(c.nodes, s)
		if c.alias > c.l.MaxAliasNodes {
			return 0, 0, c.fail("MaxAliasNodes", c.l.MaxAliasNodes)
		}
		if c.nodes > c.l.MaxNodes {
			return 0, 0, c.fail("MaxNodes", c.l.MaxNodes)
		}
		return s, h, nil
	}
	c.nodes++
	if c.nodes > c.l.MaxNodes {
		return 0, 0, c.fail("MaxNodes", c.l.MaxNodes)
	}
	if n.Kind == yaml.MappingNode && len(n.Content)/2 > c.l.MaxMapEntries {
		return 0, 0, c.fail("MaxMapEntries", c.l.MaxMapEntries)
	}
	size, height = 1, 1
	for _, ch := range n.Content {
		s, h, err := c.walk(ch, depth+1)
		if err != nil {
			return 0, 0, err
		}
		size = satAdd(size, s)
		height = max(height, h+1)
	}
	if n.Anchor != "" {
		if c.sizes == nil {
			c.sizes = map[*yaml.Node][2]int{}
		}
		c.sizes[n] = [2]int{size, height}
	}
	return size, height, nil
}

// measure returns the expanded size and height of the alias target n
// without counting it into the totals: from the memo when n was walked
// already (an alias names an anchor defined before it), else by a
// separate walk whose sizes are saturated at the bounds.
func (c *yamlChecker) measure(n *yaml.Node) (size, height int, err error) {
	if sh, ok := c.sizes[n]; ok {
		if sh[0] < 0 {
			return 0, 0, c.fail("MaxAliasNodes", c.l.MaxAliasNodes)
		}
		return sh[0], sh[1], nil
	}
	if c.sizes == nil {
		c.sizes = map[*yaml.Node][2]int{}
	}
	c.sizes[n] = [2]int{-1, 0}
	size, height = 1, 1
	for _, ch := range n.Content {
		var s, h int
		if ch.Kind == yaml.AliasNode && ch.Alias != nil {
			s, h, err = c.measure(ch.Alias)
		} else {
			s, h, err = c.measure(ch)
		}
		if err != nil {
			return 0, 0, err
		}
		size = satAdd(size, s)
		height = max(height, h+1)
		if height > c.l.MaxDepth {
			return 0, 0, c.fail("MaxDepth", c.l.MaxDepth)
		}
	}
	c.sizes[n] = [2]int{size, height}
	return size, height, nil
}

// satAdd adds two non-negative sizes, saturating instead of overflowing.
func satAdd(a, b int) int {
	if s := a + b; s >= a {
		return s
	}
	return int(^uint(0) >> 1)
}
