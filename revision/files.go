package revision

import (
	"bytes"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Files is the content of a package: regular files by slash-separated path
// relative to the package directory. It is an immutable value: methods that
// change it return a new Files and leave the receiver as it was, so a Files
// may be shared freely between goroutines. The zero value is an empty
// package.
//
// Files implements [fs.FS], [fs.ReadFileFS], [fs.ReadDirFS], [fs.StatFS] and
// [fs.SubFS]; directories are implied by the paths of the files in them, as
// in [testing/fstest.MapFS]. Every path it holds has passed [ValidatePath].
type Files struct {
	m map[string][]byte
}

var (
	_ fs.ReadFileFS = Files{}
	_ fs.ReadDirFS  = Files{}
	_ fs.StatFS     = Files{}
	_ fs.SubFS      = Files{}
)

// NewFiles returns Files holding a copy of m. It returns a *PathError
// matching [ErrInvalid] for the first unsafe path, in sorted order, and
// also when one path is a directory of another ("a" and "a/b").
func NewFiles(m map[string][]byte) (Files, error) {
	out := make(map[string][]byte, len(m))
	for _, p := range slices.Sorted(maps.Keys(m)) {
		if err := ValidatePath(p); err != nil {
			return Files{}, err
		}
		out[p] = bytes.Clone(m[p])
		if out[p] == nil {
			out[p] = []byte{}
		}
	}
	f := Files{m: out}
	if err := f.checkPrefixes(); err != nil {
		return Files{}, err
	}
	return f, nil
}

// FilesFromStrings is [NewFiles] for string content, as in Porch's
// PackageRevisionResources.
func FilesFromStrings(m map[string]string) (Files, error) {
	b := make(map[string][]byte, len(m))
	for k, v := range m {
		b[k] = []byte(v)
	}
	return NewFiles(b)
}

// MustFiles is [FilesFromStrings] that panics on error, for tests and
// examples with literal content.
func MustFiles(m map[string]string) Files {
	f, err := FilesFromStrings(m)
	if err != nil {
		panic(err)
	}
	return f
}

// checkPrefixes refuses a file whose path is also a directory of another.
func (f Files) checkPrefixes() error {
	for p := range f.m {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if _, ok := f.m[dir]; ok {
				return &PathError{Path: dir, Reason: "is both a file and the directory of " + p}
			}
		}
	}
	return nil
}

// ValidatePath checks that p is a safe package-relative file path: not
// empty, not absolute, slash-separated with no empty, "." or ".." segments,
// no backslash, NUL or other control character, valid UTF-8, and no ".git"
// segment. It returns a *PathError matching [ErrInvalid].
func ValidatePath(p string) error {
	bad := func(reason string) error { return &PathError{Path: p, Reason: reason} }
	switch {
	case p == "":
		return bad("empty path")
	case !utf8.ValidString(p):
		return bad("not valid UTF-8")
	case strings.HasPrefix(p, "/"):
		return bad("absolute path")
	case strings.ContainsRune(p, '\\'):
		return bad("contains a backslash")
	case len(p) > 4096:
		return bad("longer than 4096 bytes")
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			if r == 0 {
				return bad("contains NUL")
			}
			return bad("contains a control character")
		}
	}
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "":
			return bad("empty path segment")
		case seg == "." || seg == "..":
			return bad("contains a " + seg + " segment")
		case strings.EqualFold(seg, ".git"):
			return bad("contains a .git segment")
		}
	}
	return nil
}

// Len returns the number of files.
func (f Files) Len() int { return len(f.m) }

// Paths returns the file paths in sorted order.
func (f Files) Paths() []string { return slices.Sorted(maps.Keys(f.m)) }

// Get returns the content of the file at p and whether it exists. The
// returned slice is shared and must not be modified; use ReadFile for a
// copy.
func (f Files) Get(p string) ([]byte, bool) {
	b, ok := f.m[p]
	return b, ok
}

// Has reports whether a file exists at p.
func (f Files) Has(p string) bool {
	_, ok := f.m[p]
	return ok
}

// With returns a copy of f with the file at p set to a copy of data. It
// returns a *PathError matching [ErrInvalid] when p is unsafe or clashes
// with a directory of f.
func (f Files) With(p string, data []byte) (Files, error) {
	if err := ValidatePath(p); err != nil {
		return f, err
	}
	out := f.clone()
	if out.m == nil {
		out.m = map[string][]byte{}
	}
	out.m[p] = append([]byte{}, data...)
	if err := out.checkPrefixes(); err != nil {
		return f, err
	}
	return out, nil
}

// Without returns a copy of f without the file at p, and without every
// file under p when p names a directory.
func (f Files) Without(p string) Files {
	out := f.clone()
	delete(out.m, p)
	prefix := p + "/"
	for k := range out.m {
		if strings.HasPrefix(k, prefix) {
			delete(out.m, k)
		}
	}
	return out
}

// Map returns a copy of the files as a map.
func (f Files) Map() map[string][]byte {
	out := make(map[string][]byte, len(f.m))
	for k, v := range f.m {
		out[k] = bytes.Clone(v)
	}
	return out
}

// Strings returns a copy of the files as a map of strings, the shape of
// Porch's PackageRevisionResources.
func (f Files) Strings() map[string]string {
	out := make(map[string]string, len(f.m))
	for k, v := range f.m {
		out[k] = string(v)
	}
	return out
}

// Equal reports whether f and g hold the same paths with the same content.
func (f Files) Equal(g Files) bool {
	return maps.EqualFunc(f.m, g.m, bytes.Equal)
}

// Sub returns the files under directory dir with dir/ stripped from their
// paths; the result is empty when dir holds nothing. It implements
// [fs.SubFS] and returns a *fs.PathError only when dir is not a valid path.
func (f Files) Sub(dir string) (fs.FS, error) {
	if dir == "." {
		return f, nil
	}
	if !fs.ValidPath(dir) {
		return nil, &fs.PathError{Op: "sub", Path: dir, Err: fs.ErrInvalid}
	}
	return f.Subdir(dir), nil
}

// Subdir is Sub returning Files. An invalid dir gives empty Files.
func (f Files) Subdir(dir string) Files {
	prefix := dir + "/"
	out := Files{m: map[string][]byte{}}
	for k, v := range f.m {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out.m[rest] = v
		}
	}
	return out
}

func (f Files) clone() Files {
	return Files{m: maps.Clone(f.m)}
}

// Open opens the named file or directory, as [fs.FS] requires.
func (f Files) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if data, ok := f.m[name]; ok {
		return &openFile{info: fileInfo{name: path.Base(name), size: int64(len(data))}, r: bytes.NewReader(data)}, nil
	}
	entries, ok := f.dirEntries(name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &openDir{info: fileInfo{name: path.Base(name), dir: true}, entries: entries}, nil
}

// ReadFile returns a copy of the named file's content, as [fs.ReadFileFS]
// requires.
func (f Files) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrInvalid}
	}
	data, ok := f.m[name]
	if !ok {
		if _, isDir := f.dirEntries(name); isDir {
			return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrInvalid}
		}
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrNotExist}
	}
	return bytes.Clone(data), nil
}

// ReadDir lists the named directory in sorted order, as [fs.ReadDirFS]
// requires.
func (f Files) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	entries, ok := f.dirEntries(name)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return entries, nil
}

// Stat describes the named file or directory, as [fs.StatFS] requires.
func (f Files) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	if data, ok := f.m[name]; ok {
		return fileInfo{name: path.Base(name), size: int64(len(data))}, nil
	}
	if _, ok := f.dirEntries(name); ok {
		return fileInfo{name: path.Base(name), dir: true}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

// dirEntries returns the entries of directory dir and whether it exists.
// The root always exists.
func (f Files) dirEntries(dir string) ([]fs.DirEntry, bool) {
	prefix := dir + "/"
	if dir == "." {
		prefix = ""
	}
	seen := map[string]fs.DirEntry{}
	for p, data := range f.m {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		if name, _, isDir := strings.Cut(rest, "/"); isDir {
			seen[name] = fs.FileInfoToDirEntry(fileInfo{name: name, dir: true})
		} else {
			seen[name] = fs.FileInfoToDirEntry(fileInfo{name: name, size: int64(len(data))})
		}
	}
	if len(seen) == 0 && dir != "." {
		return nil, false
	}
	out := make([]fs.DirEntry, 0, len(seen))
	for _, name := range slices.Sorted(maps.Keys(seen)) {
		out = append(out, seen[name])
	}
	return out, true
}

type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (i fileInfo) Name() string { return i.name }
func (i fileInfo) Size() int64  { return i.size }
func (i fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }

type openFile struct {
	info fileInfo
	r    *bytes.Reader
}

func (f *openFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *openFile) Read(b []byte) (int, error) { return f.r.Read(b) }
func (f *openFile) Seek(off int64, whence int) (int64, error) {
	return f.r.Seek(off, whence)
}
func (f *openFile) ReadAt(b []byte, off int64) (int, error) { return f.r.ReadAt(b, off) }
func (f *openFile) Close() error                            { return nil }

type openDir struct {
	info    fileInfo
	entries []fs.DirEntry
	off     int
}

func (d *openDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *openDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: fs.ErrInvalid}
}
func (d *openDir) Close() error { return nil }
func (d *openDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.off:]
	if n <= 0 {
		d.off = len(d.entries)
		return slices.Clone(rest), nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(rest))
	d.off += n
	return slices.Clone(rest[:n]), nil
}
