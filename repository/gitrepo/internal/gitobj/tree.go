package gitobj

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// TreeEntry is one entry of a git tree. Decoded trees are shared through
// the cache and never modified.
type TreeEntry struct {
	Name string
	Mode filemode.FileMode
	Hash plumbing.Hash
}

// ScanTree finds the entry name in the raw content of a tree object:
// entries of "<octal mode> <name>\x00<20-byte id>".
func ScanTree(data []byte, name string) (TreeEntry, bool, error) {
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return TreeEntry{}, false, errors.New("malformed tree: no mode")
		}
		nul := bytes.IndexByte(data[sp+1:], 0)
		if nul < 0 || sp+1+nul+1+20 > len(data) {
			return TreeEntry{}, false, errors.New("malformed tree: entry cut short")
		}
		entName := data[sp+1 : sp+1+nul]
		idStart := sp + 1 + nul + 1
		if string(entName) == name {
			mode, err := filemode.New(string(data[:sp]))
			if err != nil {
				return TreeEntry{}, false, fmt.Errorf("malformed tree: %w", err)
			}
			var id plumbing.Hash
			copy(id[:], data[idStart:idStart+20])
			return TreeEntry{Name: name, Mode: mode, Hash: id}, true, nil
		}
		data = data[idStart+20:]
	}
	return TreeEntry{}, false, nil
}

// ParseTree decodes the raw content of a tree object.
func ParseTree(data []byte) ([]TreeEntry, error) {
	var out []TreeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return nil, errors.New("malformed tree: no mode")
		}
		nul := bytes.IndexByte(data[sp+1:], 0)
		if nul < 0 || sp+1+nul+1+20 > len(data) {
			return nil, errors.New("malformed tree: entry cut short")
		}
		mode, err := filemode.New(string(data[:sp]))
		if err != nil {
			return nil, fmt.Errorf("malformed tree: %w", err)
		}
		idStart := sp + 1 + nul + 1
		e := TreeEntry{Name: string(data[sp+1 : sp+1+nul]), Mode: mode}
		copy(e.Hash[:], data[idStart:idStart+20])
		out = append(out, e)
		data = data[idStart+20:]
	}
	return out, nil
}

// EncodeTree returns the raw content of a tree of sorted entries: for
// each "<octal mode> <name>\x00<20-byte id>", as git and go-git write
// them (a directory's mode is 40000).
func EncodeTree(sorted []TreeEntry) []byte {
	n := 0
	for _, e := range sorted {
		n += len(e.Name) + 28
	}
	out := make([]byte, 0, n)
	for _, e := range sorted {
		out = strconv.AppendUint(out, uint64(e.Mode), 8)
		out = append(out, ' ')
		out = append(out, e.Name...)
		out = append(out, 0)
		out = append(out, e.Hash[:]...)
	}
	return out
}

// CompareEntries orders tree entries as git does: by name, as if
// directories had a trailing slash.
func CompareEntries(a, b TreeEntry) int {
	n := min(len(a.Name), len(b.Name))
	if c := strings.Compare(a.Name[:n], b.Name[:n]); c != 0 {
		return c
	}
	ca, cb := nextByte(a, n), nextByte(b, n)
	switch {
	case ca < cb:
		return -1
	case ca > cb:
		return 1
	}
	return 0
}

// nextByte returns the byte of e's sort key at i: '/' just past a
// directory's name, 0 past a file's.
func nextByte(e TreeEntry, i int) int {
	if i < len(e.Name) {
		return int(e.Name[i])
	}
	if e.Mode == filemode.Dir && i == len(e.Name) {
		return '/'
	}
	return 0
}
