package refstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// The transaction protocol is described in doc.go.

const (
	journalName = "cad-journal"
	journalHead = "cad-journal v1"
)

// FaultHook, when set (by tests only), is called at every step of a ref
// transaction on disk with the step's name, so that a test can kill the
// process exactly there.
var FaultHook func(step string)

func fault(step string) {
	if FaultHook != nil {
		FaultHook(step)
	}
}

// errRefLocked: a ref's lock file exists, held by a program that does
// not take cad.lock.
var errRefLocked = errors.New("ref is locked by another program")

// journalPath returns the path of the journal.
func (f *FSRefs) journalPath() string { return filepath.Join(f.GitDir, journalName) }

// intentPath returns the path of the intent, the journal before it is
// committed.
func (f *FSRefs) intentPath() string { return f.journalPath() + ".lock" }

// Pending reports whether the journal of a transaction that passed its
// commit point but did not finish is on disk: what a reader must see
// completed. An intent alone (a writer that died before its commit
// point) changed no ref, so readers leave it to the next writer.
func (f *FSRefs) Pending() bool { return JournalPending(f.GitDir) }

// JournalPending is Pending for the git directory gitDir, without an
// FSRefs: whether a journal is there (an lstat).
func JournalPending(gitDir string) bool {
	_, err := os.Lstat(filepath.Join(gitDir, journalName))
	return err == nil
}

// Transact applies updates all or nothing (see above), after syncing the
// loose objects among objects (those the write stored). When check is
// set, every ref must be at its old value, else it returns an error
// matching ErrConflictRef and changes nothing. The caller holds the
// exclusive lock, and has completed what a dead writer left (store.write
// runs recover first).
func (f *FSRefs) Transact(updates []RefUpdate, check bool, objects []plumbing.Hash) (err error) {
	if len(updates) == 0 {
		return nil
	}
	if err := f.syncObjects(objects); err != nil {
		return fmt.Errorf("sync objects: %w", err)
	}
	fault("objects-synced")
	if err := f.writeSynced(f.intentPath(), journalBytes(updates)); err != nil {
		return fmt.Errorf("write %s: %w", journalName, err)
	}
	fault("intent-written")
	var locked []string
	committed := false
	defer func() {
		if committed {
			return
		}
		for _, l := range locked {
			_ = os.Remove(l)
		}
		_ = os.Remove(f.intentPath())
	}()
	for _, u := range updates {
		l, err := f.lockRef(u.Name)
		if err != nil {
			return err
		}
		locked = append(locked, l)
		fault("locked " + string(u.Name))
	}
	if check {
		for _, u := range updates {
			cur, _, err := f.Ref(u.Name)
			if err != nil {
				return err
			}
			if cur != u.Old {
				return fmt.Errorf("%w: %s is %s, expected %s", ErrConflictRef, u.Name, HashOrNone(cur), HashOrNone(u.Old))
			}
		}
	}
	for i, u := range updates {
		if u.New.IsZero() {
			continue
		}
		if err := f.writeSynced(locked[i], []byte(u.New.String()+"\n")); err != nil {
			return err
		}
		fault("lock-written " + string(u.Name))
	}
	if err := os.Rename(f.intentPath(), f.journalPath()); err != nil {
		return fmt.Errorf("commit %s: %w", journalName, err)
	}
	committed = true
	if err := f.syncDir(f.GitDir); err != nil {
		return fmt.Errorf("%w (the journal %s completes the write)", err, journalName)
	}
	fault("journal-committed")
	if err := f.apply(updates); err != nil {
		return fmt.Errorf("%w (the journal %s completes the write)", err, journalName)
	}
	return nil
}

// apply moves every ref of updates to its new value, from lock files that
// hold it (for sets), and removes the journal. It is the second half of
// transact and what recover runs: updates whose ref is no longer at its
// old value are left alone.
func (f *FSRefs) apply(updates []RefUpdate) error {
	var deletes []RefUpdate
	dirs := map[string]bool{}
	for _, u := range updates {
		p := f.refPath(u.Name)
		if u.New.IsZero() {
			deletes = append(deletes, u)
			continue
		}
		if err := os.Rename(p+".lock", p); err != nil {
			return fmt.Errorf("set ref %s: %w", u.Name, err)
		}
		dirs[filepath.Dir(p)] = true
		fault("renamed " + string(u.Name))
	}
	if len(deletes) > 0 {
		// packed-refs first, then the loose files: the other order would
		// let a stale packed value show between the two.
		if err := f.rewritePacked(deletes); err != nil {
			return err
		}
		for _, u := range deletes {
			p := f.refPath(u.Name)
			if err := os.Remove(p); err != nil && !notExist(err) {
				return fmt.Errorf("delete ref %s: %w", u.Name, err)
			}
			fault("deleted " + string(u.Name))
			if err := os.Remove(p + ".lock"); err != nil && !notExist(err) {
				return err
			}
			dirs[filepath.Dir(p)] = true
		}
	}
	for d := range dirs {
		if err := f.syncDir(d); err != nil && !notExist(err) {
			return err
		}
	}
	fault("refs-synced")
	if err := os.Remove(f.journalPath()); err != nil && !notExist(err) {
		return err
	}
	if err := f.syncDir(f.GitDir); err != nil {
		return err
	}
	fault("journal-removed")
	// Directories left empty by deletions go, as git removes them.
	for _, u := range deletes {
		f.pruneDirs(f.refPath(u.Name))
	}
	return nil
}

// Recover completes a transaction a dead process left: it reads the
// journal and, for every ref still at its old value (or locked by that
// transaction), sets the new value. A ref at neither value was changed by
// another program since and is left as it is, reported through warn when
// set. The caller holds the exclusive lock.
func (f *FSRefs) Recover(warn func(msg string, args ...any)) error {
	// A reader's view of the journal's outcome: the writer looks at the
	// refs on disk.
	f.setOverlay(nil)
	if err := f.dropPackedLock(warn); err != nil {
		return err
	}
	if err := f.dropPackRefsLocks(); err != nil { // packrefs.go
		return err
	}
	if err := f.dropIntent(); err != nil {
		return err
	}
	data, err := os.ReadFile(f.journalPath())
	if notExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", journalName, err)
	}
	updates, err := parseJournal(data)
	if err != nil {
		// The journal is written whole through a rename, so this is not
		// cad's: leave it for a person to look at.
		return fmt.Errorf("%s: %w", journalName, err)
	}
	var todo []RefUpdate
	for _, u := range updates {
		lock := f.refPath(u.Name) + ".lock"
		cur, _, err := f.Ref(u.Name)
		damaged := IsDamaged(err)
		if damaged {
			// transact never damages a ref, so something else did after
			// the commit point; cad committed to this value, and the
			// journal completes the write it promised.
			cur, err = plumbing.ZeroHash, nil
		}
		if err != nil {
			return err
		}
		switch {
		case cur == u.New:
			_ = os.Remove(lock)
			continue
		case cur != u.Old && !damaged:
			if warn != nil {
				warn("ref changed by another program during an interrupted write; left as it is", "ref", u.Name.String(), "expected", HashOrNone(u.Old), "found", HashOrNone(cur))
			}
			_ = os.Remove(lock)
			continue
		}
		if !u.New.IsZero() {
			if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
				return err
			}
			if err := f.writeSynced(lock, []byte(u.New.String()+"\n")); err != nil {
				return err
			}
		}
		todo = append(todo, u)
	}
	if err := f.apply(todo); err != nil {
		return fmt.Errorf("complete interrupted write: %w", err)
	}
	return nil
}

// lockRef creates the lock file of ref name exclusively and returns its
// path.
func (f *FSRefs) lockRef(name plumbing.ReferenceName) (string, error) {
	p := f.refPath(name) + ".lock"
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("lock ref %s: %w", name, err)
	}
	fl, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("%w: %w: %s exists", ErrRetry, errRefLocked, filepath.Base(p))
		}
		return "", fmt.Errorf("lock ref %s: %w", name, err)
	}
	return p, fl.Close()
}

// journalBytes returns the journal of updates.
func journalBytes(updates []RefUpdate) []byte {
	var b bytes.Buffer
	b.WriteString(journalHead + "\n")
	for _, u := range updates {
		fmt.Fprintf(&b, "%s %s %s\n", u.Old, u.New, u.Name)
	}
	return b.Bytes()
}

// dropIntent undoes a transaction that died before its commit point: it
// removes the lock files the intent's transaction made (empty, or holding
// the value it meant to write; a lock file holding anything else is
// another program's) and the intent.
func (f *FSRefs) dropIntent() error {
	data, err := os.ReadFile(f.intentPath())
	if notExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// An intent cut short by the crash is read as far as it goes.
	updates, _ := parseJournal(data)
	for _, u := range updates {
		lock := f.refPath(u.Name) + ".lock"
		b, err := os.ReadFile(lock)
		if err != nil {
			continue
		}
		if s := strings.TrimSpace(string(b)); s == "" || s == u.New.String() {
			if err := os.Remove(lock); err != nil && !notExist(err) {
				return err
			}
		}
	}
	if err := os.Remove(f.intentPath()); err != nil && !notExist(err) {
		return err
	}
	return f.syncDir(f.GitDir)
}

// parseJournal reads what journalBytes wrote. On an error it returns
// the updates before the bad line.
func parseJournal(data []byte) ([]RefUpdate, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 4096), 1<<20)
	if !sc.Scan() || sc.Text() != journalHead {
		return nil, errors.New("not a cad journal")
	}
	var out []RefUpdate
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || !plumbing.IsHash(fields[0]) || !plumbing.IsHash(fields[1]) || !strings.HasPrefix(fields[2], "refs/") || strings.Contains(fields[2], "..") {
			return out, fmt.Errorf("bad line %q", sc.Text())
		}
		out = append(out, RefUpdate{Name: plumbing.ReferenceName(fields[2]), Old: plumbing.NewHash(fields[0]), New: plumbing.NewHash(fields[1])})
	}
	return out, sc.Err()
}

// rewritePacked removes the refs of deletes from packed-refs, when it
// holds any of them, by writing packed-refs.lock, syncing and renaming it
// as git does.
func (f *FSRefs) rewritePacked(deletes []RefUpdate) error {
	// Most deletions are of loose refs (a proposal, a draft): the parsed,
	// cached packed-refs says so without reading the file again.
	names, hashes, err := f.packed()
	if err != nil {
		return err
	}
	inPacked := false
	for _, u := range deletes {
		if _, ok := packedLookup(names, hashes, string(u.Name)); ok {
			inPacked = true
		}
	}
	if !inPacked {
		return nil
	}
	p := filepath.Join(f.GitDir, "packed-refs")
	data, err := os.ReadFile(p)
	if notExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	drop := map[string]bool{}
	for _, u := range deletes {
		drop[string(u.Name)] = true
	}
	var out bytes.Buffer
	changed, skipping := false, false
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue
		}
		if line[0] == '^' { // the peeled value of the ref above
			if !skipping {
				out.WriteString(line)
			}
			continue
		}
		skipping = false
		if line[0] != '#' {
			if _, name, ok := strings.Cut(strings.TrimRight(line, "\n"), " "); ok && drop[name] {
				skipping, changed = true, true
				continue
			}
		}
		out.WriteString(line)
	}
	if !changed {
		return nil
	}
	// The new content is written to cad's own file, then linked as
	// packed-refs.lock: taking the lock is then atomic as with O_EXCL,
	// and a lock left by a dead process is cad's exactly when it is the
	// same file as cad's (dropPackedLock); one held by git is never
	// removed.
	lock, mine := p+".lock", f.packedTmpPath()
	fl, err := os.OpenFile(mine, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		os.Remove(mine)
		return err
	}
	if _, err := fl.Write(out.Bytes()); err != nil {
		fl.Close()
		return fail(err)
	}
	if err := f.syncFile(fl); err != nil {
		fl.Close()
		return fail(err)
	}
	if err := fl.Close(); err != nil {
		return fail(err)
	}
	fault("packed-written")
	if err := os.Link(mine, lock); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fail(fmt.Errorf("%w: %w: packed-refs.lock exists", ErrRetry, errRefLocked))
		}
		return fail(fmt.Errorf("lock packed-refs: %w", err))
	}
	fault("packed-locked")
	if err := os.Rename(lock, p); err != nil {
		os.Remove(lock)
		return fail(err)
	}
	fault("packed-renamed")
	return fail(nil) // packed-refs is the only name left of the new content
}

// packedTmpPath returns the file in which cad writes a new packed-refs
// before it links it as packed-refs.lock. Only the holder of the exclusive
// cad.lock writes it.
func (f *FSRefs) packedTmpPath() string { return filepath.Join(f.GitDir, "cad-packed-refs.tmp") }

// dropPackedLock removes what a dead cad writer left of a rewrite of
// packed-refs: its new content, and packed-refs.lock when that is the
// same file (the writer had linked it). Any other packed-refs.lock is
// another program's, such as a running git pack-refs: it is left, and
// reported through warn when set. The caller holds the exclusive lock.
func (f *FSRefs) dropPackedLock(warn func(msg string, args ...any)) error {
	mine, err := os.Lstat(f.packedTmpPath())
	if notExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	lock := filepath.Join(f.GitDir, "packed-refs.lock")
	if fi, err := os.Lstat(lock); err == nil {
		if os.SameFile(fi, mine) {
			if err := os.Remove(lock); err != nil && !notExist(err) {
				return err
			}
		} else if warn != nil {
			warn("packed-refs.lock is held by another program; left as it is", "path", lock)
		}
	}
	if err := os.Remove(f.packedTmpPath()); err != nil && !notExist(err) {
		return err
	}
	return nil
}

// refPath returns the file of ref name.
func (f *FSRefs) refPath(name plumbing.ReferenceName) string {
	return filepath.Join(f.GitDir, filepath.FromSlash(string(name)))
}

// pruneDirs removes the empty directories above p, up to refs/.
func (f *FSRefs) pruneDirs(p string) {
	stop := filepath.Join(f.GitDir, "refs")
	for dir := filepath.Dir(p); len(dir) > len(stop) && strings.HasPrefix(dir, stop); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			return // not empty
		}
	}
}

// writeSynced writes data to the file p, creating or truncating it, and
// syncs it to disk.
func (f *FSRefs) writeSynced(p string, data []byte) error {
	fl, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := fl.Write(data); err != nil {
		fl.Close()
		return err
	}
	if err := f.syncFile(fl); err != nil {
		fl.Close()
		return err
	}
	return fl.Close()
}

// syncFile syncs fl to disk, unless f.sync is SyncNone.
func (f *FSRefs) syncFile(fl *os.File) error {
	if f.Sync == SyncNone {
		return nil
	}
	return fl.Sync()
}

// syncDir syncs the directory entries of dir, so that a rename or
// removal in it survives a power loss, when f.sync is SyncAll.
func (f *FSRefs) syncDir(dir string) error {
	if f.Sync != SyncAll {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && runtime.GOOS != "windows" {
		return err // Windows cannot sync a directory: its entries reach the disk in time
	}
	return nil
}

// syncObjects syncs the loose object files of objects, and their
// directories, so that they are on disk before a ref names them. Objects
// in packs were synced when the pack was written; loose objects this
// process already synced are skipped (synced.go).
func (f *FSRefs) syncObjects(objects []plumbing.Hash) error {
	if f.Sync == SyncNone {
		return nil
	}
	dirs := map[string]bool{}
	for _, h := range objects {
		hex := h.String()
		dir := filepath.Join(f.GitDir, "objects", hex[:2])
		p := filepath.Join(dir, hex[2:])
		if f.durable.synced(h, p) {
			continue
		}
		fl, err := os.Open(p)
		if err != nil {
			if notExist(err) {
				continue
			}
			return err
		}
		err = fl.Sync()
		if err == nil {
			f.durable.add(h, fl)
		}
		fl.Close()
		if err != nil {
			return err
		}
		dirs[dir] = true
	}
	for d := range dirs {
		if err := f.syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// SyncMode says what a write to a repository on disk flushes to the disk
// before it counts as done (Options.Sync). Every mode is safe against a
// process killed at any moment: that needs only the order of renames and
// the journal. The modes differ on a power loss or a kernel crash.
type SyncMode int

const (
	// SyncFiles, the default, syncs every file a write creates before it
	// is renamed into place: the new loose objects, the journal and each
	// ref. It is what git does with core.fsync=committed and
	// core.fsyncMethod=fsync. On file systems that order metadata (ext4
	// with data=ordered, xfs) it survives a power loss.
	SyncFiles SyncMode = iota
	// SyncAll also syncs every directory whose entries changed (a rename
	// or removal), so that a write survives a power loss on any POSIX file
	// system. It costs several times SyncFiles on most disks.
	SyncAll
	// SyncNone syncs nothing: a write is still all or nothing when the
	// process dies, but a power loss may lose or damage recent writes.
	// For tests and repositories on tmpfs.
	SyncNone
)
