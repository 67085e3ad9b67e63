package gitobj

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"

	"github.com/configasdata/cad/repository/gitrepo/internal/tmpfile"
)

// Loose objects on disk are written by cad, not go-git: go-git compresses
// them at zlib's default level, where git writes them at its fastest
// (core.looseCompression defaults to 1). The difference is most of an
// approval's CPU when the branch's root tree holds thousands of
// packages, as Porch writes them (360 KB for 10,000), compressed anew by
// every approval and every new draft.
//
// A tree of storedTreeMin bytes or more is stored without compression
// (zlib's level 0, stored blocks: what git writes with
// core.looseCompression 0): the ids that are most of a tree do not
// compress, so level 1 saves about 30% of its size (248 KB of 360 KB)
// for five to fifty times the CPU of the copy, more than hashing it, on
// every approval at the root of Porch's flat layout. Maintenance packs
// loose objects deflated, so the extra size lasts until its next run.

var looseWriters = sync.Pool{New: func() any {
	w, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return w
}}

var storedWriters = sync.Pool{New: func() any {
	w, _ := zlib.NewWriterLevel(nil, zlib.NoCompression)
	return w
}}

// storedTreeMin is the size from which a tree is stored without
// compression.
const storedTreeMin = 64 << 10

// WriteLoose stores object h, of type t and content data, as a loose
// object of gitDir: "<type> <size>\x00<data>" deflated (a large tree
// stored uncompressed, see storedTreeMin), written to a
// temporary file in its directory and renamed into place, read-only as
// git leaves it. An object already there is left as it is. Errors name
// the object.
func WriteLoose(gitDir string, h plumbing.Hash, t plumbing.ObjectType, data []byte) error {
	hex := h.String()
	dir := filepath.Join(gitDir, "objects", hex[:2])
	path := filepath.Join(dir, hex[2:])
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("store object %s: %w", h, err)
	}
	f, err := tmpfile.Create(dir, tmpfile.ObjPrefix)
	if err != nil {
		return fmt.Errorf("store object %s: %w", h, err)
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("store object %s: %w", h, err)
	}
	pool := &looseWriters
	if t == plumbing.TreeObject && len(data) >= storedTreeMin {
		pool = &storedWriters
	}
	zw := pool.Get().(*zlib.Writer)
	defer pool.Put(zw)
	zw.Reset(f)
	header := strconv.AppendInt(append([]byte(t.String()), ' '), int64(len(data)), 10)
	if _, err := zw.Write(append(header, 0)); err != nil {
		return fail(err)
	}
	if _, err := zw.Write(data); err != nil {
		return fail(err)
	}
	if err := zw.Close(); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o444); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("store object %s: %w", h, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		if _, serr := os.Lstat(path); serr == nil {
			return nil // another writer stored it meanwhile (Windows renames over no file)
		}
		return fmt.Errorf("store object %s: %w", h, err)
	}
	return nil
}

// ErrNotLoose says an object directory holds no loose object of that id.
var ErrNotLoose = errors.New("no loose object")

// ReadLoose returns the type and content of object h stored loose in the
// object directory objDir (a repository's objects/, or an alternate's):
// the file <objDir>/<2 hex>/<38 hex>, inflated, its header
// "<type> <size>\x00" checked against what follows. It returns an error
// matching ErrNotLoose when there is no such file, and one matching
// repository.ErrCorrupt, naming the file, when it cannot be read as an
// object or is larger than maxPackObject.
func ReadLoose(objDir string, h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	hex := h.String()
	path := filepath.Join(objDir, hex[:2], hex[2:])
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return plumbing.InvalidObject, nil, fmt.Errorf("object %s: %w", h, ErrNotLoose)
	}
	if err != nil {
		return plumbing.InvalidObject, nil, fmt.Errorf("object %s: %w", h, err)
	}
	defer f.Close()
	bad := func(err error) (plumbing.ObjectType, []byte, error) {
		return plumbing.InvalidObject, nil, fmt.Errorf("%w: loose object %s: %w", repository.ErrCorrupt, path, err)
	}
	zr, err := zlib.NewReader(bufio.NewReader(f))
	if err != nil {
		return bad(err)
	}
	defer zr.Close()
	br := bufio.NewReader(zr)
	head, err := br.ReadBytes(0)
	if err != nil {
		return bad(fmt.Errorf("header: %w", err))
	}
	typ, size, ok := bytes.Cut(head[:len(head)-1], []byte{' '})
	t, terr := plumbing.ParseObjectType(string(typ))
	n, nerr := strconv.ParseInt(string(size), 10, 64)
	if !ok || terr != nil || nerr != nil || n < 0 || t == plumbing.OFSDeltaObject || t == plumbing.REFDeltaObject {
		return bad(fmt.Errorf("header %q", head[:len(head)-1]))
	}
	if n > maxPackObject {
		return bad(fmt.Errorf("%d bytes, more than %d", n, maxPackObject))
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(br, data); err != nil {
		return bad(err)
	}
	// Read to the end, so that zlib checks its checksum, and refuse
	// trailing bytes.
	if extra, err := io.Copy(io.Discard, br); err != nil || extra != 0 {
		return bad(fmt.Errorf("content does not match its header's size %d", n))
	}
	if plumbing.ComputeHash(t, data) != h {
		return bad(errors.New("content does not hash to its name"))
	}
	return t, data, nil
}

// LooseSize returns the type and size of the object h stored loose in the
// object directory objDir (a repository's objects/, or an alternate's)
// from its header ("<type> <size>\x00", the first bytes of its zlib
// stream), without inflating its content. An object that is not there
// gives an error matching fs.ErrNotExist; a header that does not parse
// one matching repository.ErrCorrupt, naming the object.
func LooseSize(objDir string, h plumbing.Hash) (plumbing.ObjectType, int64, error) {
	hex := h.String()
	f, err := os.Open(filepath.Join(objDir, hex[:2], hex[2:]))
	if err != nil {
		return plumbing.InvalidObject, 0, err
	}
	defer f.Close()
	bad := func() (plumbing.ObjectType, int64, error) {
		return plumbing.InvalidObject, 0, fmt.Errorf("%w: loose object %s: bad header", repository.ErrCorrupt, h)
	}
	zr, err := zlib.NewReader(bufio.NewReaderSize(f, 512))
	if err != nil {
		return bad()
	}
	defer zr.Close()
	// The longest header, a six-letter type and a 19-digit size, fits.
	var head [32]byte
	n, _ := io.ReadFull(zr, head[:])
	typ, rest, ok := bytes.Cut(head[:n], []byte{' '})
	if !ok {
		return bad()
	}
	num, _, ok := bytes.Cut(rest, []byte{0})
	if !ok {
		return bad()
	}
	t, err := plumbing.ParseObjectType(string(typ))
	if err != nil {
		return bad()
	}
	size, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || size < 0 {
		return bad()
	}
	return t, size, nil
}
