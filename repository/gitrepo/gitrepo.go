package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/go-git/go-billy/v5/osfs"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
	"github.com/configasdata/cad/revision"
)

// Porch's identity, the committer of every commit cad writes and the
// default author.
const (
	DefaultCommitterName  = "Package Orchestration Service"
	DefaultCommitterEmail = "porch@kpt.dev"
)

// DefaultCacheBytes is the default bound of the cache of immutable
// objects, per Repository: 8 MiB, as Porch bounds go-git's object cache
// per repository (down from go-git's 96 MB).
const DefaultCacheBytes = 8 << 20

// DefaultMaxFileBytes is the default bound of one file of a package
// revision as read (Options.MaxFileBytes): 32 MiB, the bound
// revision.DefaultYAMLMaxBytes puts on a YAML file, so that a file cad
// would refuse to parse is not inflated first. It is checked against the
// size in the object's header before anything is inflated.
const DefaultMaxFileBytes = 32 << 20

// DefaultMaxPackageBytes is the default bound of the total size of the
// files of one package revision as read (Options.MaxPackageBytes):
// 256 MiB, eight files at the per-file bound. A package revision is read
// whole into memory (its Files), so this is what one read of it may
// cost; Porch's own default for a package's resources in one request is
// of the same order, and no package of KRM configuration comes near it.
const DefaultMaxPackageBytes = 256 << 20

// MemoryURL is the git.repo value that selects a fresh repository in
// memory (or the one in Options.Storage). "mem://<anything>" works too.
const MemoryURL = "mem://"

// Options configure Open. The zero value, like a nil *Options, means every
// default.
type Options struct {
	// Auth authenticates to a remote: a *http.BasicAuth (user and
	// password, or any user and a token as password), *http.TokenAuth, or
	// an ssh auth method such as *ssh.PublicKeys, all from go-git's
	// plumbing/transport packages. Default: the credentials embedded in
	// the URL, if any, else none. Credentials never appear in an error
	// or a log line.
	Auth transport.AuthMethod
	// Storage is go-git storage to keep the repository in. For a
	// "mem://" repository it is the repository itself, so that several
	// Opens on one memory.Storage share it; for a remote it is the local
	// clone. It must be nil for a local path. Default: a new
	// memory.NewStorage().
	Storage storage.Storer
	// CacheDir, for a remote, keeps the local clone in this directory (a
	// bare repository, created when missing) instead of in memory.
	// Default: in memory. Off unix, where there is no cross-process file
	// lock, a clone on disk cannot be written (see Sync), so a remote with
	// a CacheDir fails with repository.ErrNotSupported there.
	CacheDir string
	// CommitterName and CommitterEmail are the committer of every commit
	// and the author when neither the spec nor the call names one.
	// Default: "Package Orchestration Service" <porch@kpt.dev>.
	CommitterName, CommitterEmail string
	// Logger receives debug and warning messages. Default: silent.
	Logger *slog.Logger
	// CacheBytes bounds the memory of the cache of immutable objects
	// (trees, commits, package lists and contents, and the delta bases
	// met reading packs), in bytes, as estimated from their sizes plus a
	// fixed cost per entry. Default DefaultCacheBytes (8 MiB); negative
	// disables the cache. A repository on disk also keeps go-git's cache
	// of loose objects, bounded to 8 MiB, and maps its pack indexes
	// (pages the kernel can drop at will).
	CacheBytes int64
	// Clock gives commit times. Default: time.Now.
	Clock func() time.Time
	// PollInterval is how often Watch re-reads the refs. Default: 1s.
	PollInterval time.Duration
	// RemoteReadMaxAge is, for a remote repository, how old the local
	// mirror may be for a read (Get, List, Range, Version, ...): a read
	// within this time of the last fetch (or of a read that asked for the
	// refs and found the mirror had them all) reads the mirror as it is,
	// without asking the remote anything. Writes always fetch first
	// and push with the expected old values, so a stale read never makes
	// a write wrong; it only delays seeing other writers' changes. Default
	// 0: every read fetches.
	RemoteReadMaxAge time.Duration
	// Sync says what a write to a repository on disk (a local path, or
	// CacheDir) flushes to the disk; see SyncMode. Default: SyncFiles.
	// Writes to a repository on disk need a cross-process file lock
	// (a record lock on cad.lock): off unix there is none, and such writes fail with
	// repository.ErrNotSupported (reads work).
	Sync SyncMode
	// MaxFileBytes bounds the size of one file of a package revision as
	// read (Files, Info, a draft's update): a larger blob is refused from
	// its object header, before it is inflated, with a
	// *revision.LimitError naming the file. Revision metadata blobs
	// (refs/cad/metadata) over it are ignored with a warning, as
	// unreadable ones are. Lists never read file contents, so they are
	// unaffected. Default DefaultMaxFileBytes (32 MiB); negative: no
	// bound.
	MaxFileBytes int64
	// MaxPackageBytes bounds the total size of the files of one package
	// revision as read, checked from the object headers before any file
	// is inflated; a *revision.LimitError when it is exceeded. Default
	// DefaultMaxPackageBytes (256 MiB); negative: no bound.
	MaxPackageBytes int64
	// NoAutoMaintain turns off the maintenance run that writes (and
	// fetches into a mirror on disk) make when the repository needs it
	// (see repository/gitrepo/DESIGN.md, "Maintenance"), for a caller that
	// schedules Repository.Maintain itself. Default: on.
	NoAutoMaintain bool
	// AutoMaintainPacks is the number of packs at which a write runs
	// maintenance. Default DefaultAutoMaintainPacks (50, git's
	// gc.autoPackLimit); negative: never for packs.
	AutoMaintainPacks int
	// AutoMaintainLoose is the estimated number of loose objects (from
	// objects/17, as git gc --auto estimates it) at which a write runs
	// maintenance. Default DefaultAutoMaintainLoose (6,700, git's
	// gc.auto); negative: never for loose objects.
	AutoMaintainLoose int
	// InsecureSkipTLS and CABundle configure TLS to an https remote.
	InsecureSkipTLS bool
	CABundle        []byte
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.CommitterName == "" {
		out.CommitterName = DefaultCommitterName
	}
	if out.CommitterEmail == "" {
		out.CommitterEmail = DefaultCommitterEmail
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	if out.CacheBytes == 0 {
		out.CacheBytes = DefaultCacheBytes
	}
	if out.MaxFileBytes == 0 {
		out.MaxFileBytes = DefaultMaxFileBytes
	}
	if out.MaxPackageBytes == 0 {
		out.MaxPackageBytes = DefaultMaxPackageBytes
	}
	if out.Clock == nil {
		out.Clock = time.Now
	}
	if out.AutoMaintainPacks == 0 {
		out.AutoMaintainPacks = DefaultAutoMaintainPacks
	}
	if out.AutoMaintainLoose == 0 {
		out.AutoMaintainLoose = DefaultAutoMaintainLoose
	}
	if out.PollInterval <= 0 {
		out.PollInterval = time.Second
	}
	return out
}

// validate reports options that cannot work.
func (o *Options) validate() error {
	if o.Sync < SyncFiles || o.Sync > SyncNone {
		return fmt.Errorf("Options.Sync %d is not a SyncMode", o.Sync)
	}
	return nil
}

// Repository is a package repository in git, in Porch's layout (see
// repository/gitrepo/DESIGN.md, "Layout"). It is safe for concurrent use by many
// goroutines, and many Repositories in many processes may share one
// repository: every write is a compare-and-swap of the refs it changes.
type Repository struct {
	*core
	// bt is the write batch this handle reads and writes through
	// (batch.go); nil for the Repository Open returns. A batch's handle
	// shares the core of the Repository it began on.
	bt *batch
}

// core is what every handle of one opened repository shares.
type core struct {
	name   string
	spec   repository.Spec
	dir    string // the spec's directory, "" for the root
	branch string
	opts   Options
	log    *slog.Logger

	st     *store
	remote *remote // nil for local and memory repositories
	cache  *gitobj.LRU
	// tagWS remembers the workspaces of package tags (see resolve).
	tagWS tagWorkspaces

	closed atomic.Bool

	// autoWrites counts the writes, maintaining is set while an
	// automatic maintenance runs, forceCheck makes the next write look
	// at the repository's shape (a fetch added a pack) (maintenance.go).
	autoWrites  atomic.Int64
	maintaining atomic.Bool
	forceCheck  atomic.Bool

	// version is the last token Version computed on disk with the
	// Stamp of the refs it read, reused while the Stamp holds (read.go).
	versionMu sync.Mutex
	version   versionStamp
	// memoKey is the key of a local repository's tokens in versionMemo
	// (versionmemo.go), "" for other repositories.
	memoKey string

	// wrote is closed (and replaced) after every write of this
	// Repository, so that its watches see their own writes at once.
	wroteMu sync.Mutex
	wrote   chan struct{}
}

// written wakes the watches after a write.
func (r *Repository) written() {
	r.wroteMu.Lock()
	if r.wrote != nil {
		close(r.wrote)
		r.wrote = nil
	}
	r.wroteMu.Unlock()
}

// Changed tells the repository that another writer changed it (a git
// server's push webhook names it): for a remote repository the next read
// asks the remote even within Options.RemoteReadMaxAge, and every watch
// of this Repository reads it at once instead of at its next poll. It
// does no I/O itself and is safe for concurrent use; on a closed
// Repository it does nothing.
func (r *Repository) Changed() {
	if r.remote != nil {
		r.remote.markChanged()
	}
	r.written()
}

// writes returns a channel closed at the next write.
func (r *Repository) writes() <-chan struct{} {
	r.wroteMu.Lock()
	defer r.wroteMu.Unlock()
	if r.wrote == nil {
		r.wrote = make(chan struct{})
	}
	return r.wrote
}

var (
	_ repository.Repository = (*Repository)(nil)
	_ repository.Versioner  = (*Repository)(nil)
	_ repository.Watcher    = (*Repository)(nil)
	_ repository.Specified  = (*Repository)(nil)
	_ repository.Notifiable = (*Repository)(nil)
)

// Open opens the git repository spec describes. spec.Type must be git and
// spec.Git.Repo one of:
//
//   - "mem://": a repository in memory (Options.Storage, or a new one);
//   - a local path or file:// URL of a bare or working repository;
//   - an http://, https:// or ssh:// URL, or scp-like user@host:path, of a
//     remote, kept in a local clone (Options.CacheDir or memory) that is
//     brought up to date on every read.
//
// When spec.Git.Branch (default "main") does not exist, Open creates it
// with Porch's initial commit if spec.Git.CreateBranch is set, and
// returns an error matching repository.ErrNotFound otherwise.
//
// Errors are *repository.Error matching repository.ErrInvalidInput for a
// bad spec or options, ErrNotFound for a missing local repository or
// branch, ErrNotSupported (wrapping a *FormatError) for a repository,
// mirror or remote in a format cad does not implement (see the package
// documentation, "Repository formats"), before anything is read or
// written there, ErrCorrupt for an alternate object directory that does
// not exist, ErrUnavailable for a remote that cannot be reached or
// refuses the credentials, and ctx's error when it is done.
func Open(ctx context.Context, spec repository.Spec, opts *Options) (*Repository, error) {
	o := opts.withDefaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Type != repository.TypeGit {
		return nil, repository.Errorf("open", spec.Name, revision.Key{}, repository.ErrInvalidInput, "type %q is not git", spec.Type)
	}
	if err := o.validate(); err != nil {
		return nil, repository.Errorf("open", spec.Name, revision.Key{}, repository.ErrInvalidInput, "%w", err)
	}
	spec = spec.Defaulted()
	r := &Repository{core: &core{
		name:   spec.Name,
		spec:   spec,
		dir:    spec.Git.Directory,
		branch: spec.Git.Branch,
		opts:   o,
		log:    o.Logger.With("repository", spec.Name),
		cache:  gitobj.NewLRU(o.CacheBytes),
	}}
	if err := validBranchName(r.branch); err != nil {
		return nil, r.errorf("open", revision.Key{}, repository.ErrInvalidInput, "git.branch %q: %v", r.branch, err)
	}
	if err := r.openStore(ctx); err != nil {
		return nil, err
	}
	if err := r.ensureBranch(ctx); err != nil {
		r.st.close()
		return nil, err
	}
	return r, nil
}

// openStore sets r.st and r.remote from the spec's URL.
func (r *Repository) openStore(ctx context.Context) error {
	u := r.spec.Git.Repo
	bad := func(format string, args ...any) error {
		return r.errorf("open", revision.Key{}, repository.ErrInvalidInput, format, args...)
	}
	switch kind := classifyURL(u); kind {
	case urlMemory:
		s := r.opts.Storage
		if s == nil {
			s = memory.NewStorage()
		}
		r.st = newStore(s, "", r.opts.Sync, r.log.Warn)
		return nil
	case urlLocal:
		if r.opts.Storage != nil {
			return bad("Options.Storage must be nil for a local repository")
		}
		p := strings.TrimPrefix(u, "file://")
		gitDir, err := findGitDir(p)
		if err != nil {
			return r.errorf("open", revision.Key{}, repository.ErrNotFound, "local repository %q: %w", p, err)
		}
		if err := r.checkDisk(gitDir); err != nil {
			return err
		}
		r.warnCheckedOut(p, gitDir)
		alts, err := alternates(gitDir)
		if err != nil {
			return r.wrapErr("open", revision.Key{}, err)
		}
		fs := filesystem.NewStorageWithOptions(osfs.New(gitDir), cache.NewObjectLRU(8*cache.MiByte), filesystem.Options{MaxOpenDescriptors: 32})
		r.st = newStore(fs, gitDir, r.opts.Sync, r.log.Warn)
		r.memoKey, _ = versionMemoKey(u, r.branch)
		if len(alts) > 0 {
			r.log.Debug("reading objects through alternates", "dirs", alts)
			r.st.alts = alts
			r.st.packs.AddAlternates(alts)
		}
		return nil
	case urlRemote:
		rm, err := newRemote(u, r.opts)
		if err != nil {
			return bad("git.repo: %v", err)
		}
		r.remote = rm
		s := r.opts.Storage
		gitDir := ""
		if s == nil && r.opts.CacheDir != "" {
			gitDir = r.opts.CacheDir
			// Checked before initBareDir, which would write into a
			// directory it does not take for a repository.
			if err := r.checkDisk(gitDir); err != nil {
				return err
			}
			if err := initBareDir(gitDir); err != nil {
				return r.errorf("open", revision.Key{}, repository.ErrInvalidInput, "cache directory: %w", err)
			}
			s = filesystem.NewStorageWithOptions(osfs.New(gitDir), cache.NewObjectLRU(8*cache.MiByte), filesystem.Options{MaxOpenDescriptors: 32})
		}
		if s == nil {
			s = memory.NewStorage()
		}
		r.st = newStore(s, gitDir, r.opts.Sync, r.log.Warn)
		r.log.Debug("opening remote", "url", rm.redactedURL)
		// Fetch once now, so that a bad URL or credentials fail here;
		// staged, so that other processes reading an on-disk mirror
		// (Options.CacheDir) are not kept waiting on the network.
		if _, err := r.remote.refresh(ctx, r.st, r.newView); err != nil {
			r.remote.stopFetches()
			r.st.close()
			return r.wrapErr("open", revision.Key{}, err)
		}
		return nil
	default:
		return bad("git.repo %q is not a supported URL", redactURL(u))
	}
}

// checkDisk refuses a git directory on disk whose format cad does not
// implement (checkFormat), before anything reads or writes there.
func (r *Repository) checkDisk(gitDir string) error {
	if err := checkFormat(gitDir); err != nil {
		var fe *FormatError
		if errors.As(err, &fe) {
			return r.errorf("open", revision.Key{}, repository.ErrNotSupported, "%w", err)
		}
		return r.errorf("open", revision.Key{}, repository.ErrUnavailable, "%w", err)
	}
	return nil
}

// warnCheckedOut warns when the registered branch is checked out in the
// working tree of the repository at p (git directory gitDir): cad moves
// the branch as a push does, never touching the index or the working
// tree, which then stay at the old commit (git status shows the
// branch's new changes as staged changes undoing them), as git's
// receive.denyCurrentBranch warns of.
func (r *Repository) warnCheckedOut(p, gitDir string) {
	if filepath.Clean(gitDir) == filepath.Clean(p) {
		return // bare
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil || strings.TrimSpace(string(head)) != "ref: "+branchRef(r.branch).String() {
		return
	}
	r.log.Warn("the registered branch is checked out in the repository's working tree: cad's writes to it leave the index and working tree at the old commit, as a push into a checked-out branch does", "branch", r.branch, "path", p)
}

// LocalPath says how Open reads the git.repo value u: for a repository on
// this host (a path or file:// URL) it returns its path and true; for
// memory and remote repositories "" and false. It returns an error
// matching repository.ErrInvalidInput for a URL scheme Open does not
// support. A server that confines local repositories to some directories
// checks the path it returns, so that it judges u exactly as Open does.
func LocalPath(u string) (string, bool, error) {
	switch classifyURL(u) {
	case urlLocal:
		return strings.TrimPrefix(u, "file://"), true, nil
	case urlUnknown:
		return "", false, fmt.Errorf("%w: git.repo %q is not a supported URL", repository.ErrInvalidInput, redactURL(u))
	}
	return "", false, nil
}

type urlKind int

const (
	urlUnknown urlKind = iota
	urlMemory
	urlLocal
	urlRemote
)

func classifyURL(u string) urlKind {
	switch {
	case strings.HasPrefix(u, "mem://"):
		return urlMemory
	case strings.HasPrefix(u, "file://"):
		return urlLocal
	case strings.HasPrefix(u, "http://"), strings.HasPrefix(u, "https://"), strings.HasPrefix(u, "ssh://"), strings.HasPrefix(u, "git://"):
		return urlRemote
	case strings.Contains(u, "://"):
		return urlUnknown
	case filepath.IsAbs(u) || strings.HasPrefix(u, "."):
		return urlLocal
	}
	// scp-like user@host:path, as git reads it: a colon before any slash.
	if i := strings.IndexByte(u, ':'); i > 0 && !strings.Contains(u[:i], "/") {
		return urlRemote
	}
	return urlLocal
}

// findGitDir returns the git directory of the repository at p: p/.git for
// a working repository, p for a bare one.
func findGitDir(p string) (string, error) {
	if fi, err := os.Stat(filepath.Join(p, ".git")); err == nil && fi.IsDir() {
		return filepath.Join(p, ".git"), nil
	}
	for _, need := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(p, need)); err != nil {
			return "", fmt.Errorf("not a git repository: %w", err)
		}
	}
	return p, nil
}

// initBareDir makes dir a bare repository when it is not one yet.
func initBareDir(dir string) error {
	if _, err := findGitDir(dir); err == nil {
		return nil
	}
	for _, d := range []string{"objects/pack", "objects/info", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config"), []byte("[core]\n\trepositoryformatversion = 0\n\tbare = true\n"), 0o644)
}

// Name returns the repository's name, spec.Name.
func (r *Repository) Name() string { return r.name }

// Close releases the repository's resources; the storage stays as it is.
// Later calls of other methods return an error matching
// repository.ErrClosed. Close is idempotent and returns nil.
func (r *Repository) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	if r.remote != nil {
		// A write's push and a read's fetch on the network end now, not
		// when they answer.
		r.remote.stopWrites()
		r.remote.stopFetches()
	}
	r.st.close()
	return nil
}

// enter checks that r is open and ctx live.
func (r *Repository) enter(ctx context.Context, op string, key revision.Key) error {
	if r.closed.Load() {
		return &repository.Error{Op: op, Repository: r.name, Key: key, Err: repository.ErrClosed}
	}
	if err := r.batchDone(op, key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return &repository.Error{Op: op, Repository: r.name, Key: key, Err: err}
	}
	return nil
}

// ensureBranch checks that the registered branch exists and creates it
// when the spec says so.
func (r *Repository) ensureBranch(ctx context.Context) error {
	var exists bool
	err := r.read(ctx, func(v *view) error {
		_, ok, err := v.ref(branchRef(r.branch))
		exists = ok
		return err
	})
	if refstore.IsDamaged(err) {
		// The branch exists, damaged: never create it anew over what is
		// on disk. Drafts, proposals and tags stay readable; what needs
		// the branch fails with the damaged-ref error.
		r.log.Warn("the registered branch is damaged", "error", err)
		return nil
	}
	if err != nil {
		return r.wrapErr("open", revision.Key{}, err)
	}
	if exists {
		return nil
	}
	if !r.spec.Git.CreateBranch {
		return r.errorf("open", revision.Key{}, repository.ErrNotFound, "branch %q does not exist (set git.createBranch to create it)", r.branch)
	}
	r.log.Info("creating branch", "branch", r.branch)
	err = r.update(ctx, func(v *view) (*txn, error) {
		if _, ok, err := v.ref(branchRef(r.branch)); err != nil || ok {
			return nil, err // created meanwhile (or damaged): nothing to do
		}
		blob, err := v.putBlob([]byte(initialFileContent))
		if err != nil {
			return nil, err
		}
		tree, err := v.putTree([]gitobj.TreeEntry{{Name: initialFileName, Mode: modeRegular, Hash: blob}})
		if err != nil {
			return nil, err
		}
		sig := r.committer()
		c, err := v.putCommit(tree, nil, sig, sig, initialCommitMessage)
		if err != nil {
			return nil, err
		}
		t := &txn{}
		t.set(branchRef(r.branch), plumbing.ZeroHash, c)
		return t, nil
	})
	if err != nil {
		return r.wrapErr("open", revision.Key{}, err)
	}
	return nil
}

// redactURL returns u without any user information.
func redactURL(u string) string {
	if pu, err := url.Parse(u); err == nil && pu.User != nil {
		pu.User = nil
		return pu.String()
	}
	return u
}

// splitURLCredentials returns u without user information and the basic
// auth it held, if any.
func splitURLCredentials(u string) (string, *githttp.BasicAuth) {
	pu, err := url.Parse(u)
	if err != nil || pu.User == nil || (pu.Scheme != "http" && pu.Scheme != "https") {
		return u, nil
	}
	pass, _ := pu.User.Password()
	auth := &githttp.BasicAuth{Username: pu.User.Username(), Password: pass}
	pu.User = nil
	return pu.String(), auth
}

// Spec returns the spec the repository was opened with, its git URL
// without credentials (see repository.Specified).
func (r *Repository) Spec() repository.Spec {
	s := r.spec
	if s.Git != nil {
		g := *s.Git
		g.Repo = redactURL(g.Repo)
		s.Git = &g
	}
	if s.OCI != nil {
		o := *s.OCI
		s.OCI = &o
	}
	return s
}
