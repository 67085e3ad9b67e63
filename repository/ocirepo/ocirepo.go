package ocirepo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/configasdata/cad/internal/lru"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Defaults of [Options].
const (
	DefaultMaxLayerSize    = 64 << 20  // compressed bytes of one package layer
	DefaultMaxExpandedSize = 256 << 20 // uncompressed bytes of one package
	// DefaultMaxFileBytes bounds one file of a layer, uncompressed: 32 MiB,
	// revision.DefaultYAMLMaxBytes and gitrepo.DefaultMaxFileBytes, so a
	// package reads the same in either backend.
	DefaultMaxFileBytes = 32 << 20
	// DefaultMaxManifestBytes bounds a manifest read from the registry:
	// 4 MiB. A manifest cad writes is a few KiB (its annotations carry
	// the revision's metadata), and go-containerregistry's own bound is
	// 100 MiB, which a lister would otherwise read for every such tag.
	DefaultMaxManifestBytes = 4 << 20
	// DefaultManifestCacheBytes bounds the cache of manifests read, by
	// their size: 64 MiB, the manifests of some 20,000 revisions.
	DefaultManifestCacheBytes = 64 << 20
	DefaultMaxFiles           = 10000
	DefaultPollInterval       = time.Second
	DefaultLockTTL            = 30 * time.Second
	DefaultLockTimeout        = 15 * time.Second
)

// Options configure [Open]. The zero value, and nil, mean the defaults.
type Options struct {
	// Keychain resolves credentials per registry, such as
	// authn.DefaultKeychain; default none (anonymous), unless Auth is set.
	Keychain authn.Keychain
	// Auth is used for every request when set, for instance
	// &authn.Basic{Username: u, Password: p}. It takes precedence over
	// Keychain.
	Auth authn.Authenticator
	// Insecure makes every request plain http, for loopback and test
	// registries. Default false: https, except where ggcr itself picks
	// plain http (localhost, loopback and *.local names and RFC 1918
	// private addresses); do not send credentials to such a registry over
	// an untrusted network.
	Insecure bool
	// MaxLayerSize caps the compressed size of a package layer read from
	// the registry; default DefaultMaxLayerSize.
	MaxLayerSize int64
	// MaxExpandedSize caps the total uncompressed size of a package's
	// files read from a layer; default DefaultMaxExpandedSize.
	MaxExpandedSize int64
	// MaxFiles caps the number of entries of a layer; default
	// DefaultMaxFiles.
	MaxFiles int
	// MaxFileBytes caps the uncompressed size of one file of a layer, as
	// its tar header declares it, before it is read; default
	// DefaultMaxFileBytes.
	MaxFileBytes int64
	// MaxManifestBytes caps the size of a manifest, checked from the
	// registry's answer to a HEAD before it is fetched: List leaves such
	// a tag out (with a warning), and reading its revision fails with a
	// *revision.LimitError. Default DefaultMaxManifestBytes.
	MaxManifestBytes int64
	// ManifestCacheBytes bounds the memory of the cache of the manifests
	// read (by digest, immutable), as estimated from their sizes; default
	// DefaultManifestCacheBytes.
	ManifestCacheBytes int64
	// Logger receives debug lines about registry writes; nil is silent.
	// Credentials are never logged.
	Logger *slog.Logger
	// Clock returns the current time, recorded as the creation and
	// publication time and used for lock leases; default time.Now.
	Clock func() time.Time
	// PollInterval is how often Watch lists the registry; default
	// DefaultPollInterval.
	PollInterval time.Duration
	// LockTTL is the lease of a package write lock (see
	// repository/ocirepo/DESIGN.md, "Concurrency"): a lock older than this is considered abandoned.
	// Default DefaultLockTTL.
	LockTTL time.Duration
	// LockTimeout bounds how long a write waits for another process's
	// lock on the same package before failing with ErrConflict; default
	// DefaultLockTimeout.
	LockTimeout time.Duration
	// AuthorEmail is recorded as PublishedBy when an approval names no
	// author; default "".
	AuthorEmail string
	// RemoteOptions are passed to every ggcr remote call after cad's own
	// (transport, user agent, page size, ...). Do not pass
	// remote.WithContext: every call takes its context.
	RemoteOptions []remote.Option
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.MaxLayerSize <= 0 {
		out.MaxLayerSize = DefaultMaxLayerSize
	}
	if out.MaxExpandedSize <= 0 {
		out.MaxExpandedSize = DefaultMaxExpandedSize
	}
	if out.MaxFiles <= 0 {
		out.MaxFiles = DefaultMaxFiles
	}
	if out.MaxFileBytes <= 0 {
		out.MaxFileBytes = DefaultMaxFileBytes
	}
	if out.MaxManifestBytes <= 0 {
		out.MaxManifestBytes = DefaultMaxManifestBytes
	}
	if out.ManifestCacheBytes <= 0 {
		out.ManifestCacheBytes = DefaultManifestCacheBytes
	}
	if out.Clock == nil {
		out.Clock = time.Now
	}
	if out.PollInterval <= 0 {
		out.PollInterval = DefaultPollInterval
	}
	if out.LockTTL <= 0 {
		out.LockTTL = DefaultLockTTL
	}
	if out.LockTimeout <= 0 {
		out.LockTimeout = DefaultLockTimeout
	}
	if out.Logger == nil {
		out.Logger = slog.New(discardHandler{})
	}
	return out
}

type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (d discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discardHandler) WithGroup(string) slog.Handler           { return d }

// Repository is a package repository in an OCI registry. It is safe for
// concurrent use by many goroutines, and any number of Repository values,
// in this or other processes, may share one registry (see the package
// documentation, and repository/ocirepo/DESIGN.md, "Concurrency", for
// what is guaranteed).
type Repository struct {
	name     string
	spec     repository.Spec
	registry name.Registry
	prefix   string // repository path prefix, "" or "a/b"
	opts     Options
	nameOpts []name.Option
	puller   *remote.Puller
	// pushers holds the Pusher of uploads and manifest writes, replaced
	// every uploadsPerPusher uploads (see ensureBlob); pusherOpts make a
	// new one.
	pushers          atomic.Pointer[remote.Pusher]
	pusherOpts       []remote.Option
	uploads          atomic.Int64
	uploadsPerPusher int64
	deleter          *remote.Pusher // no retry of 5xx: see deleteRef
	// noTagDelete is set once the registry refused a delete by tag that
	// by digest then did (the distribution registry).
	noTagDelete atomic.Bool
	secrets     []string

	locks [64]chan struct{} // in-process write serialisation, by package hash

	mu        sync.Mutex
	closed    bool
	manifests *lru.Cache[string, *record] // by manifest digest; immutable content
}

var (
	_ repository.Repository     = (*Repository)(nil)
	_ repository.Watcher        = (*Repository)(nil)
	_ repository.Versioner      = (*Repository)(nil)
	_ repository.MetadataWriter = (*Repository)(nil)
	_ repository.Specified      = (*Repository)(nil)
)

// Open returns the repository that spec describes. spec.Type must be oci
// and spec.OCI.Registry the image prefix, "host[:port][/path]"; package
// p lives in the image repository "<prefix>/p". Open does no I/O and
// starts no goroutine: a registry that cannot be reached fails the first
// call with ErrUnavailable. It returns an error matching ErrInvalidInput
// for a bad spec or options.
func Open(ctx context.Context, spec repository.Spec, opts *Options) (*Repository, error) {
	if err := ctx.Err(); err != nil {
		return nil, &repository.Error{Op: "open", Repository: spec.Name, Err: err}
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Type != repository.TypeOCI {
		return nil, repository.Errorf("open", spec.Name, revision.Key{}, repository.ErrInvalidInput, "ocirepo needs a repository of type oci, not %q", spec.Type)
	}
	o := opts.withDefaults()
	host, prefix, _ := strings.Cut(strings.TrimSuffix(spec.OCI.Registry, "/"), "/")
	var nameOpts []name.Option
	if o.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	reg, err := name.NewRegistry(host, nameOpts...)
	if err != nil {
		return nil, repository.Errorf("open", spec.Name, revision.Key{}, repository.ErrInvalidInput, "oci.registry %q: %w", spec.OCI.Registry, err)
	}
	if prefix != "" {
		if _, err := name.NewRepository(host+"/"+prefix, nameOpts...); err != nil {
			return nil, repository.Errorf("open", spec.Name, revision.Key{}, repository.ErrInvalidInput, "oci.registry %q: %w", spec.OCI.Registry, err)
		}
	}
	ropts := []remote.Option{remote.WithUserAgent("cad-ocirepo"), remote.WithJobs(4)}
	var secrets []string
	switch {
	case o.Auth != nil:
		ropts = append(ropts, remote.WithAuth(o.Auth))
		if cfg, err := o.Auth.Authorization(); err == nil && cfg != nil {
			secrets = append(secrets, cfg.Password, cfg.Auth, cfg.IdentityToken, cfg.RegistryToken)
		}
	case o.Keychain != nil:
		ropts = append(ropts, remote.WithAuthFromKeychain(o.Keychain))
	}
	ropts = append(ropts, o.RemoteOptions...)
	puller, err := remote.NewPuller(ropts...)
	if err != nil {
		return nil, repository.Errorf("open", spec.Name, revision.Key{}, repository.ErrInvalidInput, "remote options: %w", err)
	}
	pusherOpts := append(slices.Clip(ropts), remote.Reuse(puller))
	pusher, err := remote.NewPusher(pusherOpts...)
	if err != nil {
		return nil, repository.Errorf("open", spec.Name, revision.Key{}, repository.ErrInvalidInput, "remote options: %w", err)
	}
	deleter, err := remote.NewPusher(append(ropts, remote.WithRetryStatusCodes(http.StatusTooManyRequests))...)
	if err != nil {
		return nil, repository.Errorf("open", spec.Name, revision.Key{}, repository.ErrInvalidInput, "remote options: %w", err)
	}
	r := &Repository{
		deleter:          deleter,
		name:             spec.Name,
		spec:             spec,
		registry:         reg,
		prefix:           prefix,
		opts:             o,
		nameOpts:         nameOpts,
		puller:           puller,
		pusherOpts:       pusherOpts,
		uploadsPerPusher: uploadsPerPusher,
		manifests:        lru.New[string, *record](o.ManifestCacheBytes, 0),
	}
	for _, s := range secrets {
		if len(s) >= 4 {
			r.secrets = append(r.secrets, s)
		}
	}
	r.pushers.Store(pusher)
	for i := range r.locks {
		r.locks[i] = make(chan struct{}, 1)
	}
	return r, nil
}

// Name returns the repository's name, spec.Name.
func (r *Repository) Name() string { return r.name }

// uploadsPerPusher is how many blob uploads a Repository makes through one
// remote.Pusher before it replaces it with a new one. A Pusher remembers,
// for as long as it lives, every digest it uploaded to each image
// repository (so as not to upload it again), which would otherwise grow
// with every write of a long-lived process; a new Pusher checks each blob
// with one HEAD request again.
const uploadsPerPusher = 10000

// Close marks the repository closed; later calls return ErrClosed. Locks
// are never held between calls, so nothing is left in the registry.
func (r *Repository) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.manifests.Clear()
	return nil
}

func (r *Repository) enter(ctx context.Context, op string, key revision.Key) error {
	if err := ctx.Err(); err != nil {
		return r.errorf(op, key, err, "%w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.errorf(op, key, repository.ErrClosed, "repository is closed")
	}
	return nil
}

func (r *Repository) errorf(op string, key revision.Key, sentinel error, format string, args ...any) error {
	if key.Package != "" {
		key.Repository = r.name
	}
	return repository.Errorf(op, r.name, key, sentinel, format, args...)
}

// wrap turns a native ggcr or transport error into a *repository.Error
// with the matching sentinel and the credentials scrubbed from its text.
func (r *Repository) wrap(op string, key revision.Key, err error) error {
	if err == nil {
		return nil
	}
	var re *repository.Error
	if errors.As(err, &re) {
		return err
	}
	sentinel := repository.ErrUnavailable
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		sentinel = nil
		if errors.Is(err, context.Canceled) {
			sentinel = context.Canceled
		} else {
			sentinel = context.DeadlineExceeded
		}
	case errors.Is(err, repository.ErrDamaged):
		sentinel = repository.ErrDamaged
	case isNotFound(err):
		sentinel = repository.ErrNotFound
	case errors.Is(err, revision.ErrInvalid):
		sentinel = repository.ErrInvalidInput
	}
	return r.errorf(op, key, sentinel, "%w", redacted{err: err, secrets: r.secrets})
}

// redacted hides secrets from an error's text but keeps its chain.
type redacted struct {
	err     error
	secrets []string
}

func (e redacted) Error() string {
	s := e.err.Error()
	for _, sec := range e.secrets {
		s = strings.ReplaceAll(s, sec, "<redacted>")
	}
	return s
}

func (e redacted) Unwrap() error { return e.err }

func isNotFound(err error) bool {
	var te *transport.Error
	if errors.As(err, &te) {
		if te.StatusCode == http.StatusNotFound {
			return true
		}
		for _, d := range te.Errors {
			switch d.Code {
			case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode:
				return true
			}
		}
	}
	return false
}

// repoOf returns the image repository of package pkg.
func (r *Repository) repoOf(pkg string) (name.Repository, error) {
	p := pkg
	if r.prefix != "" {
		p = r.prefix + "/" + pkg
	}
	return name.NewRepository(r.registry.Name()+"/"+p, r.nameOpts...)
}

func (r *Repository) tagRef(repo name.Repository, tag string) name.Tag {
	return repo.Tag(tag)
}

func digestRef(repo name.Repository, d string) name.Digest {
	return repo.Digest(d)
}

// packageOf returns the package path of a catalog entry, or "" when the
// entry is not under the prefix or not a valid package path.
func (r *Repository) packageOf(entry string) string {
	pkg := entry
	if r.prefix != "" {
		var ok bool
		pkg, ok = strings.CutPrefix(entry, r.prefix+"/")
		if !ok {
			return ""
		}
	}
	if revision.ValidatePackagePath(pkg) != nil {
		return ""
	}
	return pkg
}

func nonce() string {
	var b [8]byte
	_, _ = io.ReadFull(rand.Reader, b[:])
	return hex.EncodeToString(b[:])
}

func (r *Repository) logDebug(msg string, args ...any) {
	r.opts.Logger.Debug(msg, append([]any{"repository", r.name}, args...)...)
}

// pusher returns the current Pusher (see uploadsPerPusher).
func (r *Repository) pusher() *remote.Pusher { return r.pushers.Load() }

// Spec returns the spec the repository was opened with (see
// repository.Specified).
func (r *Repository) Spec() repository.Spec {
	s := r.spec
	if s.OCI != nil {
		o := *s.OCI
		s.OCI = &o
	}
	if s.Git != nil {
		g := *s.Git
		s.Git = &g
	}
	return s
}
