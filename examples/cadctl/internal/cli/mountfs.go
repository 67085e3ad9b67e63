package cli

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// mount is one --mount of fn eval: type=bind,src=SRC,dst=DST[,rw=...].
type mount struct {
	src string // absolute path on this machine: a directory or a file
	dst string // where the function sees it: a slash path, no leading slash
}

// parseMount reads a --mount value as docker's --mount takes it (type
// bind only; src or source, dst, target or destination; rw, readonly
// and other keys accepted). abs resolves a relative src.
func parseMount(m string, abs func(string) string) (mount, error) {
	var src, dst string
	for _, part := range strings.Split(m, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "type":
			if v != "bind" {
				return mount{}, fmt.Errorf("--mount %q: type %q: only bind mounts can be mapped for an in-process function", m, v)
			}
		case "src", "source":
			src = v
		case "dst", "target", "destination":
			dst = v
		}
	}
	if src == "" || dst == "" {
		return mount{}, fmt.Errorf("--mount %q: needs src and dst", m)
	}
	if !path.IsAbs(dst) {
		return mount{}, fmt.Errorf("--mount %q: dst must be an absolute path", m)
	}
	if _, err := os.Stat(abs(src)); err != nil {
		return mount{}, fmt.Errorf("--mount %q: %w", m, err)
	}
	return mount{src: filepath.Clean(abs(src)), dst: strings.TrimPrefix(path.Clean(dst), "/")}, nil
}

// mountFS is an in-process function's view of the file system when fn
// eval is given --mount: each mount's src seen at its dst, as a
// container would see it, with paths relative to the container's root
// ("/tmp/charts/x" is "tmp/charts/x": the catalog's functions run in /,
// so their relative default paths such as tmp/charts name the same
// place). The deepest mount holding a path serves it; as in a container,
// a path under no mount does not exist (the package is seen only where a
// mount puts it). A directory that only holds mount points (tmp, for a
// mount at /tmp/charts) is not listed. It is read-only: what a function
// writes goes to the package (pipeline.ResourceList.WriteFiles), as
// without mounts.
type mountFS struct {
	mounts []mount // deepest dst first
}

func newMountFS(mounts []mount) *mountFS {
	ms := append([]mount(nil), mounts...)
	sort.SliceStable(ms, func(i, j int) bool { return len(ms[i].dst) > len(ms[j].dst) })
	return &mountFS{mounts: ms}
}

// Open implements fs.FS.
func (m *mountFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	for _, mt := range m.mounts {
		rest, ok := under(name, mt.dst)
		if !ok {
			continue
		}
		st, err := os.Stat(mt.src)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		if !st.IsDir() {
			if rest != "." {
				return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
			}
			return os.Open(mt.src)
		}
		return os.DirFS(mt.src).Open(rest)
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// under returns name relative to dir ("." for dir itself) and whether
// name is dir or below it; dir "" (a mount at /) holds every path.
func under(name, dir string) (string, bool) {
	switch {
	case dir == "":
		return name, true
	case name == dir:
		return ".", true
	case strings.HasPrefix(name, dir+"/"):
		return strings.TrimPrefix(name, dir+"/"), true
	}
	return "", false
}
