package refstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Packing loose refs (package gitrepo's maintenance), as git pack-refs
// does. See the package documentation, "Packing refs".

// packRefsList is the file that lists the loose refs a packing is
// removing, so that the lock files it holds on them can be found after a
// crash.
const packRefsList = "cad-pack-refs"

// packRefsMark is what the lock files of a packing hold: they are cad's
// exactly when they hold it.
const packRefsMark = "cad pack-refs\n"

// PackRefs moves the loose refs want picks (by name and modification
// time) into packed-refs and returns how many it moved. peel returns what an
// annotated tag points at, through every level (ok false for an object
// that is not a tag): the lines packed-refs gives a ref's peeled value,
// when the file says it holds them.
//
// The steps, each a state git and cad read (the loose file and its line
// in packed-refs hold the same value until the loose file goes):
//
//  1. packed-refs' new content, its lines and the loose refs' sorted, is
//     written and synced to cad-packed-refs.tmp, linked as
//     packed-refs.lock (as a deletion's rewrite does, so that Recover
//     knows it for cad's) and renamed over packed-refs;
//  2. the refs to remove are listed, synced, in cad-pack-refs;
//  3. each loose ref is locked as git locks it (<ref>.lock, created
//     exclusively, holding a mark), read again, and removed when it still
//     holds the packed value, then its lock is removed;
//  4. cad-pack-refs is removed.
//
// A crash leaves at worst a lock file with the mark, which the next
// writer's Recover (or PackRefs) removes through the list. A loose ref
// that is damaged, or locked by another program, stays loose; nothing is
// packed when packed-refs holds a damaged line (git refuses such a file;
// it is for a person to repair, see DamagedRefError). The caller holds
// the exclusive lock.
func (f *FSRefs) PackRefs(want func(name string, mod time.Time) bool, peel func(plumbing.Hash) (plumbing.Hash, bool, error)) (int, error) {
	if err := f.dropPackRefsLocks(); err != nil {
		return 0, err
	}
	_, _, bad, err := f.packedAll()
	if err != nil {
		return 0, err
	}
	if len(bad) > 0 {
		return 0, &DamagedRefError{Ref: "packed-refs", Reason: fmt.Sprintf("line %d holds %q: not packing refs into a damaged file", bad[0].line, bad[0].text)}
	}
	loose := map[string]plumbing.Hash{}
	err = f.walkLoose("refs/", func(name string, _ fs.DirEntry) error {
		fi, err := os.Lstat(f.refPath(plumbing.ReferenceName(name)))
		if err != nil || !fi.Mode().IsRegular() || !want(name, fi.ModTime()) {
			return nil
		}
		h, ok, err := f.loose(name)
		if err != nil || !ok || !validRefName(name) {
			return nil // damaged, or symbolic: left loose
		}
		loose[name] = h
		return nil
	}, nil)
	if err != nil {
		return 0, err
	}
	if len(loose) == 0 {
		return 0, nil
	}
	p := filepath.Join(f.GitDir, "packed-refs")
	data, err := os.ReadFile(p)
	if err != nil && !notExist(err) {
		return 0, err
	}
	content, err := mergePacked(data, loose, peel)
	if err != nil {
		return 0, err
	}
	if err := f.replacePacked(content); err != nil {
		return 0, err
	}

	// The loose files go, each under git's lock.
	names := make([]string, 0, len(loose))
	for name := range loose {
		names = append(names, name)
	}
	slices.Sort(names)
	var list bytes.Buffer
	for _, name := range names {
		list.WriteString(name + "\n")
	}
	if err := f.writeSynced(filepath.Join(f.GitDir, packRefsList), list.Bytes()); err != nil {
		return 0, err
	}
	fault("maint-refs-listed")
	moved := 0
	dirs := map[string]bool{}
	for _, name := range names {
		rp := f.refPath(plumbing.ReferenceName(name))
		fl, err := os.OpenFile(rp+".lock", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			continue // another program's lock: left loose
		}
		_, werr := fl.WriteString(packRefsMark)
		fl.Close()
		if werr == nil {
			if h, ok, err := f.loose(name); err == nil && ok && h == loose[name] {
				if err := os.Remove(rp); err == nil {
					moved++
					dirs[filepath.Dir(rp)] = true
				}
			}
		}
		fault("maint-ref-packed " + name)
		if err := os.Remove(rp + ".lock"); err != nil && !notExist(err) {
			return moved, err
		}
	}
	for d := range dirs {
		if err := f.syncDir(d); err != nil && !notExist(err) {
			return moved, err
		}
	}
	if err := os.Remove(filepath.Join(f.GitDir, packRefsList)); err != nil && !notExist(err) {
		return moved, err
	}
	for d := range dirs {
		f.pruneDirs(filepath.Join(d, "x"))
	}
	return moved, nil
}

// packedLine is a ref of packed-refs with its peeled line, if any.
type packedLine struct {
	name   string
	line   string // "<hash> <name>\n"
	peeled string // "^<hash>\n" or ""
}

// mergePacked returns packed-refs' content data with the refs of loose
// set to their values (added, or replaced), sorted, with a header saying
// so. Peeled lines are kept, and written for the refs of loose, when the
// old header says the file holds them (or there was no file).
func mergePacked(data []byte, loose map[string]plumbing.Hash, peel func(plumbing.Hash) (plumbing.Hash, bool, error)) ([]byte, error) {
	traits := []string{"peeled", "fully-peeled"}
	var refs []packedLine
	at := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	first := true
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if first && strings.HasPrefix(line, "# pack-refs with:") {
			var keep []string
			for _, t := range traits {
				if slices.Contains(strings.Fields(line), t) {
					keep = append(keep, t)
				}
			}
			traits = keep
		}
		first = false
		switch {
		case line == "" || line[0] == '#':
		case line[0] == '^':
			if len(refs) > 0 {
				refs[len(refs)-1].peeled = line + "\n"
			}
		default:
			_, name, _ := strings.Cut(line, " ")
			if i, ok := at[name]; ok {
				refs[i] = packedLine{name: name, line: line + "\n"} // the last wins
				continue
			}
			at[name] = len(refs)
			refs = append(refs, packedLine{name: name, line: line + "\n"})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	peeling := slices.Contains(traits, "peeled")
	for name, h := range loose {
		pl := packedLine{name: name, line: h.String() + " " + name + "\n"}
		if peeling {
			to, ok, err := peel(h)
			if err != nil {
				return nil, fmt.Errorf("peel %s: %w", name, err)
			}
			if ok {
				pl.peeled = "^" + to.String() + "\n"
			}
		}
		if i, ok := at[name]; ok {
			refs[i] = pl
			continue
		}
		at[name] = len(refs)
		refs = append(refs, pl)
	}
	slices.SortFunc(refs, func(a, b packedLine) int { return strings.Compare(a.name, b.name) })
	var out bytes.Buffer
	out.WriteString("# pack-refs with: " + strings.Join(append(traits, "sorted"), " ") + " \n")
	for _, r := range refs {
		out.WriteString(r.line)
		out.WriteString(r.peeled)
	}
	return out.Bytes(), nil
}

// replacePacked replaces packed-refs with content: written and synced to
// cad's own file, linked as packed-refs.lock (failing with ErrRetry when
// another program holds that lock) and renamed over packed-refs, as
// rewritePacked does.
func (f *FSRefs) replacePacked(content []byte) error {
	p := filepath.Join(f.GitDir, "packed-refs")
	lock, mine := p+".lock", f.packedTmpPath()
	if err := f.writeSynced(mine, content); err != nil {
		os.Remove(mine)
		return err
	}
	fault("maint-packed-written")
	defer os.Remove(mine)
	if err := os.Link(mine, lock); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %w: packed-refs.lock exists", ErrRetry, errRefLocked)
		}
		return fmt.Errorf("lock packed-refs: %w", err)
	}
	fault("maint-packed-locked")
	if err := os.Rename(lock, p); err != nil {
		os.Remove(lock)
		return err
	}
	fault("maint-packed-renamed")
	return f.syncDir(f.GitDir)
}

// dropPackRefsLocks removes the lock files a packing that died left on
// the refs it was removing (those holding its mark, or empty: it died
// between creating one and writing it), and its list.
func (f *FSRefs) dropPackRefsLocks() error {
	lp := filepath.Join(f.GitDir, packRefsList)
	data, err := os.ReadFile(lp)
	if notExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, name := range strings.Split(string(data), "\n") {
		if !validRefName(name) {
			continue
		}
		lock := f.refPath(plumbing.ReferenceName(name)) + ".lock"
		if b, err := os.ReadFile(lock); err == nil && (string(b) == packRefsMark || len(b) == 0) {
			if err := os.Remove(lock); err != nil && !notExist(err) {
				return err
			}
		}
	}
	if err := os.Remove(lp); err != nil && !notExist(err) {
		return err
	}
	return nil
}
