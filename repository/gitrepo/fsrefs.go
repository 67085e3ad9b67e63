package gitrepo

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// fsRefs reads refs of a repository on disk directly, as git does: a
// loose ref file wins over packed-refs. It exists so that looking up one
// ref, or the refs under one prefix, costs the same with 100 refs as with
// 100,000: go-git scans the whole packed-refs file for every lookup, so
// fsRefs parses it once per change of the file and keeps it sorted.
// Callers hold the store's lock, which makes go-git's in-place ref writes
// atomic to them.
type fsRefs struct {
	gitDir string

	mu      sync.Mutex
	modTime time.Time
	size    int64
	names   []string // sorted
	hashes  map[string]plumbing.Hash
}

// packed returns the parsed packed-refs, re-reading the file when it
// changed.
func (f *fsRefs) packed() ([]string, map[string]plumbing.Hash, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := filepath.Join(f.gitDir, "packed-refs")
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		f.names, f.hashes, f.modTime, f.size = nil, nil, time.Time{}, -1
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if f.hashes != nil && fi.ModTime().Equal(f.modTime) && fi.Size() == f.size {
		return f.names, f.hashes, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, nil, err
	}
	hashes := map[string]plumbing.Hash{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		h, name, ok := strings.Cut(line, " ")
		if !ok || !plumbing.IsHash(h) {
			continue
		}
		hashes[name] = plumbing.NewHash(h)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(hashes))
	for n := range hashes {
		names = append(names, n)
	}
	sort.Strings(names)
	f.names, f.hashes, f.modTime, f.size = names, hashes, fi.ModTime(), fi.Size()
	return names, hashes, nil
}

// loose reads the loose ref file name; ok is false when there is none or
// it is not a hash (a symbolic ref).
func (f *fsRefs) loose(name string) (plumbing.Hash, bool, error) {
	data, err := os.ReadFile(filepath.Join(f.gitDir, filepath.FromSlash(name)))
	if err != nil {
		if notExist(err) {
			return plumbing.ZeroHash, false, nil
		}
		return plumbing.ZeroHash, false, err
	}
	s := strings.TrimSpace(string(data))
	if !plumbing.IsHash(s) {
		return plumbing.ZeroHash, false, nil
	}
	return plumbing.NewHash(s), true, nil
}

// notExist reports whether err says there is no file: none, a directory,
// or a path through a file.
func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR)
}

// ref returns the value of ref name.
func (f *fsRefs) ref(name plumbing.ReferenceName) (plumbing.Hash, bool, error) {
	if h, ok, err := f.loose(string(name)); err != nil || ok {
		return h, ok, err
	}
	_, hashes, err := f.packed()
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	h, ok := hashes[string(name)]
	return h, ok, nil
}

// childNames returns the names of the refs directly under prefix (which
// ends in a slash) without reading their values.
func (f *fsRefs) childNames(prefix string) ([]string, error) {
	var out []string
	names, _, err := f.packed()
	if err != nil {
		return nil, err
	}
	for i := sort.SearchStrings(names, prefix); i < len(names) && strings.HasPrefix(names[i], prefix); i++ {
		if rest := names[i][len(prefix):]; !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	entries, err := os.ReadDir(filepath.Join(f.gitDir, filepath.FromSlash(prefix)))
	if err != nil && !notExist(err) {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() && !strings.HasSuffix(e.Name(), ".lock") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// children returns the refs directly under prefix (which ends in a
// slash), not those further down.
func (f *fsRefs) children(prefix string) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	names, hashes, err := f.packed()
	if err != nil {
		return nil, err
	}
	for i := sort.SearchStrings(names, prefix); i < len(names) && strings.HasPrefix(names[i], prefix); i++ {
		if !strings.Contains(names[i][len(prefix):], "/") {
			out[plumbing.ReferenceName(names[i])] = hashes[names[i]]
		}
	}
	entries, err := os.ReadDir(filepath.Join(f.gitDir, filepath.FromSlash(prefix)))
	if err != nil && !notExist(err) {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		name := prefix + e.Name()
		if h, ok, err := f.loose(name); err != nil {
			return nil, err
		} else if ok {
			out[plumbing.ReferenceName(name)] = h
		}
	}
	return out, nil
}

// removeLoose deletes ref name when it is only a loose file, removing
// directories left empty as git does, and reports whether it did. A ref
// in packed-refs is left to go-git.
func (f *fsRefs) removeLoose(name plumbing.ReferenceName) (bool, error) {
	_, hashes, err := f.packed()
	if err != nil {
		return false, err
	}
	if _, ok := hashes[string(name)]; ok {
		return false, nil
	}
	p := filepath.Join(f.gitDir, filepath.FromSlash(string(name)))
	if err := os.Remove(p); err != nil {
		if notExist(err) {
			return true, nil
		}
		return false, err
	}
	stop := filepath.Join(f.gitDir, "refs")
	for dir := filepath.Dir(p); len(dir) > len(stop) && strings.HasPrefix(dir, stop); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break // not empty
		}
	}
	return true, nil
}

// under returns every ref below prefix (which ends in a slash), at any
// depth, reading only that part of the refs directory and of packed-refs.
func (f *fsRefs) under(prefix string) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	names, hashes, err := f.packed()
	if err != nil {
		return nil, err
	}
	for i := sort.SearchStrings(names, prefix); i < len(names) && strings.HasPrefix(names[i], prefix); i++ {
		out[plumbing.ReferenceName(names[i])] = hashes[names[i]]
	}
	root := filepath.Join(f.gitDir, filepath.FromSlash(prefix))
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if notExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(d.Name(), ".lock") {
			return nil
		}
		rel, err := filepath.Rel(f.gitDir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if h, ok, err := f.loose(name); err != nil {
			return err
		} else if ok {
			out[plumbing.ReferenceName(name)] = h
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
