package gitrepo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// objIndex keeps, in the file cad-index of a git directory, what reading
// revisions learns about immutable objects: each commit's tree, parents,
// author and message, and where a path leads under a tree. A list of a
// repository reads, for every tag, its commit and the trees on the way to
// its package; in a repository as Porch writes it every approval commit
// has its own root tree, so a process that starts cold spends most of a
// list decoding those objects out of the pack. With the index, the next
// process reads one file instead.
//
// Objects never change, so the index is never stale: a record is a fact
// about an object id. It is a cache, not state: deleting the file loses
// nothing. Records are appended, one line each with a checksum, in one
// write per read operation (O_APPEND), by readers and writers alike; a
// line cut short by a crash, or otherwise damaged, is skipped when the
// file is loaded. A repository whose directory cannot be written is read
// without an index file. Safe for concurrent use.
type objIndex struct {
	path string

	mu       sync.Mutex
	loaded   bool
	disabled bool
	commits  map[plumbing.Hash]*commitInfo
	paths    map[pathKey]treeEntry
	pending  bytes.Buffer
}

type pathKey struct {
	root plumbing.Hash
	path string
}

const (
	indexName = "cad-index"
	// maxIndexBytes: past this size the index is neither loaded nor
	// appended to (a repository that large should be repacked, and the
	// file removed).
	maxIndexBytes = 512 << 20
)

func newObjIndex(gitDir string) *objIndex {
	return &objIndex{path: filepath.Join(gitDir, indexName)}
}

// load reads the file once; x.mu is held.
func (x *objIndex) load() {
	if x.loaded {
		return
	}
	x.loaded = true
	x.commits = map[plumbing.Hash]*commitInfo{}
	x.paths = map[pathKey]treeEntry{}
	fi, err := os.Stat(x.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil || fi.Size() > maxIndexBytes {
		x.disabled = true
		return
	}
	data, err := os.ReadFile(x.path)
	if err != nil {
		x.disabled = true
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		x.parse(sc.Text())
	}
}

// commit returns the commit h when the index knows it.
func (x *objIndex) commit(h plumbing.Hash) *commitInfo {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.load()
	return x.commits[h]
}

// subtree returns the entry path p leads to under tree root when the
// index knows it.
func (x *objIndex) subtree(root plumbing.Hash, p string) (treeEntry, bool) {
	if x == nil {
		return treeEntry{}, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.load()
	e, ok := x.paths[pathKey{root, p}]
	return e, ok
}

// addCommit records commit c.
func (x *objIndex) addCommit(c *commitInfo) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.load()
	if x.disabled || x.commits[c.hash] != nil {
		return
	}
	x.commits[c.hash] = c
	parents := "-"
	if len(c.parents) > 0 {
		ps := make([]string, len(c.parents))
		for i, p := range c.parents {
			ps[i] = p.String()
		}
		parents = strings.Join(ps, ",")
	}
	_, offset := c.author.When.Zone()
	x.record(fmt.Sprintf("c %s %s %s %s %s %d %d %s", c.hash, c.tree, parents,
		strconv.Quote(c.author.Name), strconv.Quote(c.author.Email), c.author.When.Unix(), offset, strconv.Quote(c.message)))
}

// addSubtree records that path p under tree root is the directory h.
func (x *objIndex) addSubtree(root plumbing.Hash, p string, e treeEntry) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.load()
	k := pathKey{root, p}
	if x.disabled {
		return
	}
	if _, ok := x.paths[k]; ok {
		return
	}
	x.paths[k] = e
	x.record(fmt.Sprintf("p %s %s %s %o", root, strconv.Quote(p), e.hash, uint32(e.mode)))
}

// record queues line with its checksum; x.mu is held.
func (x *objIndex) record(line string) {
	fmt.Fprintf(&x.pending, "%s %08x\n", line, crc32.ChecksumIEEE([]byte(line)))
}

// flush appends what was recorded since the last flush to the file, in
// one write.
func (x *objIndex) flush() {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.pending.Len() == 0 || x.disabled {
		x.pending.Reset()
		return
	}
	f, err := os.OpenFile(x.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		x.disabled = true // a read-only repository: no index file
		x.pending.Reset()
		return
	}
	_, _ = f.Write(x.pending.Bytes())
	_ = f.Close()
	x.pending.Reset()
}

// parse loads one line; a damaged one is ignored. x.mu is held.
func (x *objIndex) parse(line string) {
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return
	}
	body := line[:i]
	if sum, err := strconv.ParseUint(line[i+1:], 16, 32); err != nil || uint32(sum) != crc32.ChecksumIEEE([]byte(body)) {
		return
	}
	f, ok := fields(body)
	if !ok || len(f) == 0 {
		return
	}
	switch {
	case f[0] == "c" && len(f) == 9:
		c := &commitInfo{hash: plumbing.NewHash(f[1]), tree: plumbing.NewHash(f[2]), message: f[8]}
		if f[3] != "-" {
			for _, p := range strings.Split(f[3], ",") {
				c.parents = append(c.parents, plumbing.NewHash(p))
			}
		}
		sec, err1 := strconv.ParseInt(f[6], 10, 64)
		offset, err2 := strconv.Atoi(f[7])
		if err1 != nil || err2 != nil {
			return
		}
		c.author = object.Signature{Name: f[4], Email: f[5], When: time.Unix(sec, 0).In(time.FixedZone("", offset))}
		c.annotations = annotations(c.message)
		x.commits[c.hash] = c
	case f[0] == "p" && len(f) == 5:
		mode, err := strconv.ParseUint(f[4], 8, 32)
		if err != nil {
			return
		}
		x.paths[pathKey{plumbing.NewHash(f[1]), f[2]}] = treeEntry{name: f[2][strings.LastIndexByte(f[2], '/')+1:], mode: filemode.FileMode(mode), hash: plumbing.NewHash(f[3])}
	}
}

// fields splits a record into its space-separated fields, unquoting the
// quoted ones.
func fields(s string) ([]string, bool) {
	var out []string
	for len(s) > 0 {
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, false
			}
			v, err := strconv.Unquote(q)
			if err != nil {
				return nil, false
			}
			out = append(out, v)
			s = s[len(q):]
		} else {
			i := strings.IndexByte(s, ' ')
			if i < 0 {
				i = len(s)
			}
			out = append(out, s[:i])
			s = s[i:]
		}
		if len(s) > 0 {
			if s[0] != ' ' {
				return nil, false
			}
			s = s[1:]
		}
	}
	return out, true
}
