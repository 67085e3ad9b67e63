package gitobj

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/configasdata/cad/repository/gitrepo/internal/tmpfile"
)

// PackStaging holds a fetched pack until it is added to a repository's
// objects (see "Staging a fetched pack" in the package documentation).
// For a repository on disk it is a temporary file in objects/pack,
// indexed (Prepare) into another before the caller's lock, so that adding
// it (Install) is two renames; for a repository in memory it is memory,
// its objects parsed into a storage of their own before the lock and
// handed over under it. It is safe for concurrent use.
type PackStaging struct {
	mu       sync.Mutex
	f        *os.File // the pack, on disk
	idx      string   // its index, once prepared
	idxF     *os.File // the index, open until installed or closed
	checksum plumbing.Hash
	buf      bytes.Buffer
	mem      *memory.Storage // the objects, in memory, once prepared
	closed   bool
}

// Temporary files of staged fetches start with these (package tmpfile's
// names, which git prune treats as git's).
const (
	StagePackPrefix = tmpfile.PackPrefix + "fetch_"
	StageIdxPrefix  = tmpfile.IdxPrefix + "fetch_"
)

// NewPackStaging returns an empty staging for a pack of the repository in
// gitDir: a temporary file objects/pack/tmp_pack_cad_fetch_* (created with
// its directory, after removing the stale temporary files there:
// tmpfile.RemoveStale), or memory when
// gitDir is "". It returns the file system's error when the file cannot
// be created.
func NewPackStaging(gitDir string) (*PackStaging, error) {
	if gitDir == "" {
		return &PackStaging{}, nil
	}
	dir := filepath.Join(gitDir, "objects", "pack")
	tmpfile.RemoveStale(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := tmpfile.Create(dir, StagePackPrefix)
	if err != nil {
		return nil, err
	}
	return &PackStaging{f: f}, nil
}

// Write appends p to the staged pack. It returns os.ErrClosed after
// Close, or the file system's error.
func (s *PackStaging) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, os.ErrClosed
	}
	if s.f != nil {
		return s.f.Write(p)
	}
	return s.buf.Write(p)
}

// Prepare checks and indexes the staged pack, holding no lock: on disk it
// writes the pack's index beside it (tmp_idx_cad_*) and syncs both with
// syncFile (nil: not synced); in memory it parses the objects into a
// storage of their own. An empty pack prepares to nothing. It returns
// go-git's parse error for a damaged pack, or the file system's error.
func (s *PackStaging) Prepare(syncFile func(*os.File) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		s.mem = memory.NewStorage()
		p, err := packfile.NewParserWithStorage(packfile.NewScanner(bytes.NewReader(s.buf.Bytes())), s.mem)
		if err != nil {
			return err
		}
		if _, err := p.Parse(); err != nil && !errors.Is(err, packfile.ErrEmptyPackfile) {
			return err
		}
		s.buf = bytes.Buffer{}
		return nil
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	w := new(idxfile.Writer)
	p, err := packfile.NewParser(packfile.NewScanner(s.f), w)
	if err != nil {
		return err
	}
	sum, err := p.Parse()
	if errors.Is(err, packfile.ErrEmptyPackfile) {
		return nil
	}
	if err != nil {
		return err
	}
	idx, err := w.Index()
	if err != nil {
		return err
	}
	f, err := tmpfile.Create(filepath.Dir(s.f.Name()), StageIdxPrefix)
	if err != nil {
		return err
	}
	s.idx = f.Name()
	s.idxF = f // open, and so locked, until it is installed
	if _, err := idxfile.NewEncoder(f).Encode(idx); err != nil {
		f.Close()
		return err
	}
	if syncFile != nil {
		if err := syncFile(f); err != nil {
			return err
		}
		if err := syncFile(s.f); err != nil {
			return err
		}
	}
	s.checksum = sum
	return nil
}

// Install adds the prepared objects to objs; the caller holds its write
// lock. On disk the pack and its index are renamed into objects/pack as
// pack-<checksum>.pack and .idx (the index last: a pack is found by its
// index) unless a pack of the same content is there already, the
// directory is synced with syncDir (nil: not synced), and objs is told to
// look again (a Reindex method, when it has one). In memory each object
// is set in objs. It returns the file system's or objs's error.
func (s *PackStaging) Install(objs storer.EncodedObjectStorer, syncDir func(dir string) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem != nil {
		iter, err := s.mem.IterEncodedObjects(plumbing.AnyObject)
		if err != nil {
			return err
		}
		return iter.ForEach(func(o plumbing.EncodedObject) error {
			_, err := objs.SetEncodedObject(o)
			return err
		})
	}
	if s.f == nil || s.checksum.IsZero() {
		return nil // an empty pack
	}
	base := filepath.Join(filepath.Dir(s.f.Name()), "pack-"+s.checksum.String())
	if _, err := os.Stat(base + ".idx"); err == nil {
		return nil
	}
	if err := tmpfile.RenameOpen(s.f, base+".pack"); err != nil {
		return err
	}
	if err := tmpfile.RenameOpen(s.idxF, base+".idx"); err != nil {
		return err
	}
	s.idx = ""
	_ = s.f.Close() // held open so far: locked until in place
	_ = s.idxF.Close()
	if syncDir != nil {
		if err := syncDir(filepath.Dir(base)); err != nil {
			return err
		}
	}
	if ri, ok := objs.(interface{ Reindex() }); ok {
		ri.Reindex()
	}
	return nil
}

// Close removes what Install did not move in; a Write after it fails.
// It may be called more than once.
func (s *PackStaging) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if s.f != nil {
		_ = s.f.Close()
		_ = os.Remove(s.f.Name()) // gone already when installed
		if s.idxF != nil {
			_ = s.idxF.Close()
		}
		if s.idx != "" {
			_ = os.Remove(s.idx)
		}
	}
	s.buf = bytes.Buffer{}
	s.mem = nil
}
