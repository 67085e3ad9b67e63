package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
	"github.com/configasdata/cad/repository/gitrepo/internal/tmpfile"
	"github.com/configasdata/cad/revision"
)

// Maintenance of a repository on disk: see repository/gitrepo/DESIGN.md,
// "Maintenance".

// Defaults of the automatic maintenance (Options.AutoMaintainPacks and
// AutoMaintainLoose): git gc --auto's gc.autoPackLimit and gc.auto.
const (
	DefaultAutoMaintainPacks = 50
	DefaultAutoMaintainLoose = 6700
)

// autoCheckEvery: the automatic maintenance looks at the repository's
// shape after the first write of a Repository and then every this many
// (a variable for the tests).
var autoCheckEvery int64 = 16

// MaintainOptions configure a maintenance run (Repository.Maintain). The
// zero value is the run the automatic maintenance makes.
type MaintainOptions struct {
	// Full merges every pack (but those git keeps, with a .keep file) and
	// every loose object into one pack, as git gc does. Default: the
	// geometric rollup (see Factor).
	Full bool
	// Factor is the geometric factor: after a run, each pack holds at
	// least Factor times as many objects as all the smaller ones
	// together, so a repository of n objects keeps at most log_Factor(n)
	// packs, as git repack --geometric=2 leaves it. Default 2; values
	// below 2 are 2.
	Factor int
	// NoRefs leaves loose refs loose. Default: the loose tags
	// (refs/tags/, the published revisions, written once) are packed
	// into packed-refs, and so are drafts and proposals (the other
	// branches under refs/heads/) not written for IdleRefAge. The
	// registered branch and refs/cad/* move with every write and stay
	// loose, as git pack-refs without --all leaves branches.
	NoRefs bool
	// IdleRefAge is how long a draft's or proposal's loose ref must not
	// have been written for it to be packed: a packed ref that is then
	// deleted (an approval deletes its proposal) costs a rewrite of
	// packed-refs, a loose one lookups in every list. Default 1 hour;
	// negative: never.
	IdleRefAge time.Duration
}

// MaintainStats is what a maintenance run did.
type MaintainStats struct {
	// Skipped: another maintenance run (in this or another process)
	// holds the repository; this one did nothing.
	Skipped bool
	// PacksBefore and PacksAfter count the packs in objects/pack.
	PacksBefore, PacksAfter int
	// PacksMerged counts the packs merged into the new one and removed.
	PacksMerged int
	// LooseBefore counts the loose objects found; LoosePacked those
	// packed and removed.
	LooseBefore, LoosePacked int
	// ObjectsWritten counts the objects of the new pack.
	ObjectsWritten int
	// RefsPacked counts the loose refs moved into packed-refs.
	RefsPacked int
	// BytesBefore and BytesAfter are the sizes of the packs and loose
	// objects.
	BytesBefore, BytesAfter int64
	// Took is how long the run took.
	Took time.Duration
}

// Maintain packs the repository's objects and refs, as git maintenance
// and git repack --geometric do (see repository/gitrepo/DESIGN.md,
// "Maintenance"): small packs and the loose objects are merged into one
// new pack so that the packs stay few (a geometric progression of their
// sizes, or one pack with opts.Full), and loose tags are moved into
// packed-refs. Objects are never removed but those copied into the new
// pack, so nothing any ref, draft, proposal or write under way needs is
// lost; unreachable objects stay (git gc prunes them). It is safe beside
// reads and writes of this and other processes, and a crash at any step
// leaves a repository git fsck accepts and cad reads whole.
//
// Writes run it by themselves when the repository needs it (see
// Options.NoAutoMaintain); a caller that schedules maintenance (a
// server's timer) calls it. A repository in memory, or a remote's
// mirror in memory, has nothing to maintain: the zero stats. When
// another run holds the repository, Maintain waits for it, until ctx is
// done. Errors: repository.ErrClosed, ctx's error,
// repository.ErrNotSupported where writes to a repository on disk are
// (off unix), the file system's.
func (r *Repository) Maintain(ctx context.Context, opts MaintainOptions) (MaintainStats, error) {
	if err := r.enter(ctx, "maintain", revision.Key{}); err != nil {
		return MaintainStats{}, err
	}
	st, err := r.maintain(ctx, opts, false)
	if err != nil {
		return st, r.wrapErr("maintain", revision.Key{}, err)
	}
	return st, nil
}

var _ repository.Maintainer = (*Repository)(nil)

// MaintainStorage is Maintain with the zero MaintainOptions (the
// geometric rollup and packing idle refs, the run writes make by
// themselves), for callers that schedule maintenance of any backend
// (repository.Maintain). It returns Maintain's errors.
func (r *Repository) MaintainStorage(ctx context.Context) error {
	_, err := r.Maintain(ctx, MaintainOptions{})
	return err
}

// maintain is Maintain; with try, it returns Skipped at once when
// another run holds the maintenance lock.
func (r *Repository) maintain(ctx context.Context, opts MaintainOptions, try bool) (MaintainStats, error) {
	var stats MaintainStats
	gitDir := r.st.gitDir
	if gitDir == "" {
		return stats, nil
	}
	if !refstore.CrossProcessLock {
		return stats, fmt.Errorf("%w: maintaining a git directory on disk (%s) needs a cross-process file lock", repository.ErrNotSupported, gitDir)
	}
	start := time.Now()
	lock := refstore.NewFileLock(gitDir, refstore.RoleMaintain)
	defer lock.Close()
	lctx := ctx
	if try {
		c, cancel := context.WithCancel(ctx)
		cancel() // one attempt
		lctx = c
	}
	if err := lock.Lock(lctx, true); err != nil {
		if try && ctx.Err() == nil {
			stats.Skipped = true
			return stats, nil
		}
		return stats, err
	}
	defer lock.Unlock()
	removeStaleFiles(gitDir)
	if err := r.repackObjects(ctx, opts, &stats); err != nil {
		return stats, err
	}
	if !opts.NoRefs {
		err := r.st.write(ctx, func() error {
			n, err := r.st.fsrefs.PackRefs(r.packRefFilter(opts), r.peel)
			stats.RefsPacked = n
			return err
		})
		if refstore.IsDamaged(err) || errors.Is(err, refstore.ErrRetry) {
			// A damaged packed-refs is for a person to repair, a lock
			// is another program's: the objects are packed all the same.
			r.log.Warn("maintenance left the loose refs loose", "error", err)
			err = nil
		}
		if err != nil {
			return stats, err
		}
	}
	stats.Took = time.Since(start)
	r.log.Debug("maintained", "packsBefore", stats.PacksBefore, "packsAfter", stats.PacksAfter, "loosePacked", stats.LoosePacked, "refsPacked", stats.RefsPacked, "took", stats.Took)
	return stats, nil
}

// removeStaleFiles removes what dead writers and older versions of cad
// left in gitDir: the temporary files whose writers are gone, by the one
// rule of tmpfile.RemoveStale, in the git directory, objects/pack and
// each objects/?? directory (see DESIGN.md, "Temporary files"); and the
// files of indexes older versions of cad kept, which this version neither
// reads nor writes: cad-workspaces, the workspace summaries of cad
// v0.1.0, and cad-index, the object index lists loaded until it was
// found not to pay its way. Errors are ignored: what it cannot remove is
// tried again by the next run.
func removeStaleFiles(gitDir string) {
	_ = os.RemoveAll(filepath.Join(gitDir, "cad-workspaces"))
	_ = os.Remove(filepath.Join(gitDir, "cad-index"))
	objDir := filepath.Join(gitDir, "objects")
	tmpfile.RemoveStale(gitDir)
	tmpfile.RemoveStale(filepath.Join(objDir, "pack"))
	entries, _ := os.ReadDir(objDir)
	for _, e := range entries {
		if n := e.Name(); e.IsDir() && len(n) == 2 && strings.Trim(n, "0123456789abcdef") == "" {
			tmpfile.RemoveStale(filepath.Join(objDir, n))
		}
	}
}

// repackObjects merges the packs the geometric rule (or opts.Full)
// selects and every loose object into one new pack, then removes what
// it merged.
func (r *Repository) repackObjects(ctx context.Context, opts MaintainOptions, stats *MaintainStats) error {
	gitDir := r.st.gitDir
	packDir := filepath.Join(gitDir, "objects", "pack")
	objDir := filepath.Join(gitDir, "objects")
	packs, err := gitobj.ListPacks(gitDir)
	if err != nil {
		return err
	}
	var loose []plumbing.Hash
	var looseBytes int64
	err = gitobj.WalkLoose(objDir, func(h plumbing.Hash) error {
		loose = append(loose, h)
		s := h.String()
		if fi, err := os.Stat(filepath.Join(objDir, s[:2], s[2:])); err == nil {
			looseBytes += fi.Size()
		}
		return nil
	})
	if err != nil {
		return err
	}
	stats.PacksBefore, stats.PacksAfter, stats.LooseBefore = len(packs), len(packs), len(loose)
	for _, p := range packs {
		stats.BytesBefore += p.Bytes
	}
	stats.BytesBefore += looseBytes
	stats.BytesAfter = stats.BytesBefore
	merge := selectPacks(packs, len(loose), opts)
	if len(merge) == 0 && len(loose) == 0 {
		return nil
	}
	var bases []string
	for _, p := range merge {
		bases = append(bases, p.Base)
	}
	res, err := gitobj.Repack(ctx, gitDir, gitobj.RepackInput{
		Packs:    bases,
		Loose:    loose,
		Resolve:  func(h plumbing.Hash) (plumbing.ObjectType, []byte, error) { return r.resolveObject(ctx, h) },
		SyncFile: r.st.fsrefs.SyncFile,
		Fault:    refstore.Fault,
	})
	if err != nil {
		return err
	}
	if res.Base == "" {
		return nil
	}
	// The new pack is in place (and on disk) before anything goes.
	if r.opts.Sync != SyncNone {
		if err := syncDir(packDir); err != nil {
			return err
		}
	}
	r.st.packs.Rescan()
	refstore.Fault("maint-pack-synced")
	// A multi-pack-index (git maintenance writes one) may name the packs
	// that go: it goes first, and git and cad read the packs without it
	// (git repack does the same). When no pack goes (only loose objects
	// were packed) it stays: it names packs that are all there, and the
	// new pack is read through its .idx.
	if slices.ContainsFunc(merge, func(p gitobj.PackInfo) bool { return p.Base != res.Base }) {
		if err := os.Remove(filepath.Join(packDir, "multi-pack-index")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, p := range merge {
		if p.Base == res.Base {
			continue
		}
		if err := gitobj.RemovePack(p.Base); err != nil {
			return err
		}
		stats.PacksMerged++
		refstore.Fault("maint-pack-removed " + filepath.Base(p.Base))
	}
	for i, h := range res.Loose {
		if err := gitobj.RemoveLoose(objDir, h); err != nil {
			return err
		}
		if i == 0 {
			refstore.Fault("maint-loose-removing")
		}
	}
	stats.LoosePacked = len(res.Loose)
	refstore.Fault("maint-loose-removed")
	// Readers of this process close the packs that went.
	r.st.packs.Rescan()
	stats.ObjectsWritten = res.Objects
	stats.PacksAfter = stats.PacksBefore - stats.PacksMerged
	if _, err := os.Stat(res.Base + ".idx"); err == nil && !slices.ContainsFunc(packs, func(p gitobj.PackInfo) bool { return p.Base == res.Base }) {
		stats.PacksAfter++
	}
	after := stats.BytesBefore - looseBytes + res.Bytes
	for _, p := range merge {
		if p.Base != res.Base {
			after -= p.Bytes
		}
	}
	stats.BytesAfter = after
	return nil
}

// selectPacks returns the packs to merge (with the loose objects, nloose
// of them): every one with opts.Full; else, sorted by object count, the
// smallest ones as git repack --geometric does: the largest prefix
// after which every pack holds at least Factor times the one before,
// then every next pack holding fewer than Factor times all the objects
// merged so far. Packs git must keep (.keep, .promisor) and those with an
// older index are never merged. A single pack and no loose objects is
// nothing to merge.
func selectPacks(packs []gitobj.PackInfo, nloose int, opts MaintainOptions) []gitobj.PackInfo {
	var cand []gitobj.PackInfo
	for _, p := range packs {
		if p.V2 && !p.Keep {
			cand = append(cand, p)
		}
	}
	if opts.Full {
		if len(cand) <= 1 && nloose == 0 {
			return nil
		}
		return cand
	}
	factor := uint64(max(opts.Factor, 2))
	slices.SortStableFunc(cand, func(a, b gitobj.PackInfo) int { return int(a.Objects) - int(b.Objects) })
	split := 0
	for i := len(cand) - 1; i > 0; i-- {
		if uint64(cand[i-1].Objects)*factor > uint64(cand[i].Objects) {
			split = i // cand[i-1] and cand[i] break it; the loop below takes cand[i]
			break
		}
	}
	total := uint64(nloose)
	for _, p := range cand[:split] {
		total += uint64(p.Objects)
	}
	for split < len(cand) && total*factor > uint64(cand[split].Objects) {
		total += uint64(cand[split].Objects)
		split++
	}
	if split == 1 && nloose == 0 {
		return nil
	}
	return cand[:split]
}

// resolveObject reads object h whole, under the read lock (the repack
// holds none: it must not keep writers waiting).
func (r *Repository) resolveObject(ctx context.Context, h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	var t plumbing.ObjectType
	var data []byte
	err := r.st.read(ctx, func() error {
		var err error
		t, data, err = r.newView().raw(plumbing.AnyObject, h)
		data = bytes.Clone(data)
		return err
	})
	return t, data, err
}

// peel returns what the object h peels to when it is an annotated tag,
// through every level; ok is false for another object. The caller holds
// the write lock.
func (r *Repository) peel(h plumbing.Hash) (plumbing.Hash, bool, error) {
	v := r.newView()
	cur, ok := h, false
	for range 16 {
		t, data, err := v.raw(plumbing.AnyObject, cur)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if t != plumbing.TagObject {
			return cur, ok, nil
		}
		line, _, _ := bytes.Cut(data, []byte("\n"))
		target, found := bytes.CutPrefix(line, []byte("object "))
		if !found || !plumbing.IsHash(string(target)) {
			return plumbing.ZeroHash, false, fmt.Errorf("%w: tag %s: no object line", repository.ErrCorrupt, cur)
		}
		cur, ok = plumbing.NewHash(string(target)), true
	}
	return plumbing.ZeroHash, false, fmt.Errorf("%w: tag %s: nested too deep", repository.ErrCorrupt, h)
}

// syncDir syncs the entries of dir.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// needsMaintenance reports whether the repository's shape calls for a
// maintenance run, looking at two directories as git gc --auto does: as
// many packs as Options.AutoMaintainPacks, or an estimate of the loose
// objects (objects/17, times 256) of Options.AutoMaintainLoose; or a
// packing of refs that died.
func (r *Repository) needsMaintenance() bool {
	gitDir := r.st.gitDir
	if lim := r.opts.AutoMaintainPacks; lim > 0 {
		if entries, err := os.ReadDir(filepath.Join(gitDir, "objects", "pack")); err == nil {
			n := 0
			for _, e := range entries {
				if filepath.Ext(e.Name()) == ".idx" {
					n++
				}
			}
			if n >= lim {
				return true
			}
		}
	}
	if lim := r.opts.AutoMaintainLoose; lim > 0 && gitobj.EstimateLoose(filepath.Join(gitDir, "objects")) >= lim {
		return true
	}
	_, err := os.Lstat(filepath.Join(gitDir, "cad-pack-refs"))
	return err == nil
}

// autoMaintain runs maintenance after a write of this Repository, in
// the writer's goroutine, when the repository needs it (needsMaintenance,
// looked at after the first write and every autoCheckEvery) and no other
// run holds it. A failure is logged: the write succeeded.
func (r *Repository) autoMaintain(ctx context.Context) {
	if r.opts.NoAutoMaintain || r.st.gitDir == "" || !refstore.CrossProcessLock {
		return
	}
	if n := r.autoWrites.Add(1); (n-1)%autoCheckEvery != 0 && !r.forceCheck.Swap(false) {
		return
	}
	if !r.needsMaintenance() || !r.maintaining.CompareAndSwap(false, true) {
		return
	}
	defer r.maintaining.Store(false)
	stats, err := r.maintain(ctx, MaintainOptions{}, true)
	if err != nil {
		r.log.Warn("automatic maintenance failed", "error", err)
		return
	}
	if !stats.Skipped {
		r.log.Debug("automatic maintenance", "packsBefore", stats.PacksBefore, "packsAfter", stats.PacksAfter, "loosePacked", stats.LoosePacked, "refsPacked", stats.RefsPacked, "took", stats.Took)
	}
}

// afterFetch runs the automatic maintenance after a read of a remote
// whose fetch added a pack to the mirror: a mirror only read from
// gains a pack with each fetch, and no write of its own looks at it.
func (r *Repository) afterFetch(ctx context.Context) {
	if r.remote.landed.Swap(false) {
		r.forceCheck.Store(true)
		r.autoMaintain(ctx)
	}
}

// packRefFilter picks the loose refs a run packs: tags, and the other
// branches under refs/heads/ (drafts, proposals) idle for
// opts.IdleRefAge.
func (r *Repository) packRefFilter(opts MaintainOptions) func(name string, mod time.Time) bool {
	age := opts.IdleRefAge
	if age == 0 {
		age = time.Hour
	}
	branch := "refs/heads/" + r.branch
	now := time.Now()
	return func(name string, mod time.Time) bool {
		switch {
		case strings.HasPrefix(name, "refs/tags/"):
			return true
		case strings.HasPrefix(name, "refs/heads/") && name != branch:
			return age > 0 && now.Sub(mod) >= age
		}
		return false
	}
}
