package ocirepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sync/errgroup"

	"github.com/configasdata/cad/internal/porchtask"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// readConcurrency bounds the parallel manifest requests of one listing.
const readConcurrency = 16

// view is one revision as read: its meta and the record holding its
// content.
type view struct {
	meta revision.Meta
	rec  *record
	repo name.Repository
}

// listTags returns the tags of repo, following Link-header pagination; a
// repository that does not exist has none.
func (r *Repository) listTags(ctx context.Context, repo name.Repository) ([]string, error) {
	var tags []string
	err := retry(ctx, func() (err error) { tags, err = r.puller.List(ctx, repo); return err })
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return tags, nil
}

// fetch returns the record tag points at in repo, or nil when the tag does
// not exist or holds a manifest that is not ours. It asks for the tag's
// digest and size with a HEAD first: a manifest over
// Options.MaxManifestBytes is refused with a *revision.LimitError before
// it is read; else the manifest is taken from the cache (by digest), or
// fetched by digest with one GET.
func (r *Repository) fetch(ctx context.Context, repo name.Repository, tag string) (*record, error) {
	ref := r.tagRef(repo, tag)
	var desc *v1.Descriptor
	err := retry(ctx, func() (err error) { desc, err = r.puller.Head(ctx, ref); return err })
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if rec, ok := r.manifests.Get(desc.Digest.String()); ok {
		return rec, nil
	}
	if err := r.manifestBound(ref, desc); err != nil {
		return nil, err
	}
	return r.fetchManifest(ctx, digestRef(repo, desc.Digest.String()))
}

// manifestBound returns a *revision.LimitError when desc, what a HEAD of
// ref answered, is a manifest over Options.MaxManifestBytes.
func (r *Repository) manifestBound(ref name.Reference, desc *v1.Descriptor) error {
	if desc.Size <= r.opts.MaxManifestBytes {
		return nil
	}
	return &revision.LimitError{What: fmt.Sprintf("manifest %s of %q (%d bytes)", desc.Digest, ref, desc.Size),
		Limit: "ocirepo.Options.MaxManifestBytes", Max: r.opts.MaxManifestBytes}
}

// getManifest GETs the manifest ref names after a HEAD checked its size
// (manifestBound), by digest, and returns it; errors are the registry's
// or manifestBound's.
func (r *Repository) getManifest(ctx context.Context, ref name.Reference) (*remote.Descriptor, error) {
	var desc *v1.Descriptor
	if err := retry(ctx, func() (err error) { desc, err = r.puller.Head(ctx, ref); return err }); err != nil {
		return nil, err
	}
	if err := r.manifestBound(ref, desc); err != nil {
		return nil, err
	}
	var got *remote.Descriptor
	err := retry(ctx, func() (err error) {
		got, err = r.puller.Get(ctx, ref.Context().Digest(desc.Digest.String()))
		return err
	})
	return got, err
}

// fetchManifest GETs and caches the manifest ref names, a digest whose
// size a HEAD checked (the registry's GET is bounded only by
// go-containerregistry's 100 MiB, and the digest is verified).
func (r *Repository) fetchManifest(ctx context.Context, ref name.Reference) (*record, error) {
	var got *remote.Descriptor
	err := retry(ctx, func() (err error) { got, err = r.puller.Get(ctx, ref); return err })
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if int64(len(got.Manifest)) > r.opts.MaxManifestBytes {
		return nil, &revision.LimitError{What: fmt.Sprintf("manifest %s (%d bytes)", ref, len(got.Manifest)),
			Limit: "ocirepo.Options.MaxManifestBytes", Max: r.opts.MaxManifestBytes}
	}
	if descriptor(got.Manifest, got.MediaType).Digest != got.Digest {
		return nil, nil // not what the registry says it is: ignore
	}
	rec, ok := parseRecord(got.Digest, got.Manifest)
	if !ok {
		return nil, nil
	}
	r.cache(rec)
	return rec, nil
}

// cache keeps rec, at a cost of its raw manifest, its parsed form (about
// as large again) and a fixed overhead.
func (r *Repository) cache(rec *record) {
	r.manifests.Put(rec.digest.String(), rec, int64(2*len(rec.raw))+512)
}

// packageState is what a package's tags say.
type packageState struct {
	tags       []string
	published  map[int]*record // valid v<N>
	deletion   map[int]*record // valid markers of published[N]
	workspaces map[string]*record
	metadata   map[string]*record // valid meta.<workspace>
	maxNumber  int                // highest N of any v<N> or marker tag
	// damaged are the tags left out as unreadable (over a bound), one
	// error each naming the tag.
	damaged []error
}

// readPackage reads every revision record of pkg: one tags list, then a
// HEAD per tag (and a GET per manifest not yet cached), in parallel.
func (r *Repository) readPackage(ctx context.Context, pkg string, repo name.Repository) (*packageState, error) {
	tags, err := r.listTags(ctx, repo)
	if err != nil {
		return nil, err
	}
	st := &packageState{tags: tags, published: map[int]*record{}, deletion: map[int]*record{}, workspaces: map[string]*record{}, metadata: map[string]*record{}}
	// Numbered tags first; then only the workspace tags that are not the
	// alias of a published revision just read (a proposal being approved
	// has a workspace tag of its own lifecycle and is read too).
	var numbered, workspaces, metadata []string
	for _, tag := range tags {
		switch kind, n, _ := parseTag(tag); kind {
		case tagPublished, tagDeletion:
			st.maxNumber = max(st.maxNumber, n)
			numbered = append(numbered, tag)
		case tagWorkspace:
			workspaces = append(workspaces, tag)
		case tagMetadata:
			metadata = append(metadata, tag)
		}
	}
	if err := r.fetchAll(ctx, pkg, repo, append(numbered, metadata...), st); err != nil {
		return nil, err
	}
	aliased := map[string]bool{}
	for _, rec := range st.published {
		aliased[workspaceTag(rec.workspace)] = true
	}
	workspaces = slices.DeleteFunc(workspaces, func(t string) bool { return aliased[t] })
	if err := r.fetchAll(ctx, pkg, repo, workspaces, st); err != nil {
		return nil, err
	}
	for n, marker := range st.deletion {
		if p := st.published[n]; p == nil || marker.annotations[AnnotationMarks] != p.digest.String() {
			delete(st.deletion, n)
		}
	}
	return st, nil
}

// fetchAll reads tags into st, in parallel.
func (r *Repository) fetchAll(ctx context.Context, pkg string, repo name.Repository, tags []string, st *packageState) error {
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(readConcurrency)
	for _, tag := range tags {
		kind, n, ws := parseTag(tag)
		g.Go(func() error {
			rec, err := r.fetch(gctx, repo, tag)
			if errors.Is(err, revision.ErrLimit) {
				// A list never fails on one tag: reading it does, and
				// the list names it (repository.DamageError).
				r.opts.Logger.Warn("leaving out a tag over a bound", "tag", tag, "error", err.Error())
				mu.Lock()
				st.damaged = append(st.damaged, fmt.Errorf("tag %s of package %s left out: %w", tag, pkg, err))
				mu.Unlock()
				return nil
			}
			if err != nil {
				return err
			}
			if kind == tagMetadata {
				if rec.validMetadata(pkg, ws) {
					mu.Lock()
					st.metadata[ws] = rec
					mu.Unlock()
				}
				return nil
			}
			if !rec.valid(pkg, tag) {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			switch kind {
			case tagPublished:
				st.published[n] = rec
			case tagDeletion:
				st.deletion[n] = rec
			case tagWorkspace:
				st.workspaces[ws] = rec
			}
			return nil
		})
	}
	return g.Wait()
}

// views returns the revisions of st in no particular order, with their
// metadata.
func (r *Repository) views(pkg string, repo name.Repository, st *packageState) []view {
	var out []view
	publishedWS := map[string]bool{}
	for n, rec := range st.published {
		out = append(out, r.publishedView(pkg, repo, n, rec, st.deletion[n]))
		publishedWS[rec.workspace] = true
	}
	for ws, rec := range st.workspaces {
		if rec.lifecycle.IsPublished() || publishedWS[ws] {
			continue // an alias, or a proposal whose approval is being finished
		}
		out = append(out, r.draftView(pkg, repo, rec))
	}
	for i := range out {
		if md := st.metadata[out[i].meta.Key.Workspace]; md != nil {
			decorate(&out[i], *md.md)
		}
	}
	return out
}

func (r *Repository) publishedView(pkg string, repo name.Repository, n int, rec, marker *record) view {
	m := revision.Meta{
		Key:         revision.Key{Repository: r.name, Package: pkg, Workspace: rec.workspace, Revision: n},
		Lifecycle:   revision.LifecyclePublished,
		Version:     rec.digest.String(),
		Commit:      rec.digest.String(),
		PublishedBy: rec.publishedBy,
		PublishedAt: rec.publishedAt,
		Creation:    porchtask.Decode([]byte(rec.annotations[AnnotationTask])),
	}
	if marker != nil {
		m.Lifecycle = revision.LifecycleDeletionProposed
		m.Version = marker.digest.String()
	}
	return view{meta: m, rec: rec, repo: repo}
}

func (r *Repository) draftView(pkg string, repo name.Repository, rec *record) view {
	return view{meta: revision.Meta{
		Key:       revision.Key{Repository: r.name, Package: pkg, Workspace: rec.workspace},
		Lifecycle: rec.lifecycle,
		Version:   rec.digest.String(),
		Commit:    rec.digest.String(),
		Creation:  porchtask.Decode([]byte(rec.annotations[AnnotationTask])),
	}, rec: rec, repo: repo}
}

// packages lists the package paths of the repository from the registry
// catalog, following Link-header pagination.
func (r *Repository) packages(ctx context.Context) ([]string, error) {
	entries, err := r.puller.Catalog(ctx, r.registry)
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if pkg := r.packageOf(e); pkg != "" {
			out = append(out, pkg)
		}
	}
	return out, nil
}

// List returns the revisions opts selects, in repository.SortRevisions
// order. It reads the catalog (or only opts.Package's repository), the tag
// lists and manifests, never a layer. A tag whose manifest is over
// Options.MaxManifestBytes is left out, and List returns the other
// revisions with an *repository.Error wrapping a *repository.DamageError
// (matching repository.ErrDamaged) that names each such tag (its errors
// match revision.ErrLimit). Other errors, with no revisions: ErrClosed,
// ErrUnavailable when the registry fails or refuses the credentials,
// ctx's error.
func (r *Repository) List(ctx context.Context, opts repository.ListOptions) ([]revision.PackageRevision, error) {
	const op = "list"
	if err := r.enter(ctx, op, revision.Key{}); err != nil {
		return nil, err
	}
	views, damaged, err := r.listViews(ctx, opts.Package, opts.PackagePrefix)
	if err != nil {
		return nil, r.wrap(op, revision.Key{}, err)
	}
	if d := repository.NewDamageError(damaged); d != nil {
		err = r.wrap(op, revision.Key{}, d)
	}
	var out []revision.PackageRevision
	for _, v := range views {
		if opts.Matches(v.meta) {
			out = append(out, r.revisionOf(v))
		}
	}
	repository.SortRevisions(out)
	return out, err
}

// listViews reads every revision of pkg, or when pkg is empty of every
// package at or under prefix (every package for an empty prefix), and
// the tags it left out as damaged.
func (r *Repository) listViews(ctx context.Context, pkg, prefix string) ([]view, []error, error) {
	var pkgs []string
	if pkg != "" {
		if revision.ValidatePackagePath(pkg) != nil {
			return nil, nil, nil
		}
		pkgs = []string{pkg}
	} else {
		all, err := r.packages(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, p := range all {
			if prefix == "" || p == prefix || strings.HasPrefix(p, prefix+"/") {
				pkgs = append(pkgs, p)
			}
		}
	}
	var mu sync.Mutex
	var out []view
	var damaged []error
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, p := range pkgs {
		g.Go(func() error {
			repo, err := r.repoOf(p)
			if err != nil {
				return nil
			}
			st, err := r.readPackage(gctx, p, repo)
			if err != nil {
				return err
			}
			vs := r.views(p, repo, st)
			mu.Lock()
			out = append(out, vs...)
			damaged = append(damaged, st.damaged...)
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	slices.SortFunc(damaged, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return out, damaged, nil
}

// Get returns the revision key selects: by number a HEAD of v<N> and of
// its deletion marker, by workspace a HEAD of ws.<workspace> (plus the
// tag list when it is a proposal, to see an approval being finished), and
// a HEAD of meta.<workspace> for its metadata. It never reads more than one
// package. Errors: ErrInvalidInput for a key
// that selects nothing in particular, ErrNotFound, ErrClosed,
// ErrUnavailable.
func (r *Repository) Get(ctx context.Context, key revision.Key) (revision.PackageRevision, error) {
	const op = "get"
	if err := r.enter(ctx, op, key); err != nil {
		return nil, err
	}
	v, err := r.lookup(ctx, key)
	if err != nil {
		return nil, r.wrap(op, key, err)
	}
	return r.revisionOf(*v), nil
}

// lookup finds the revision key selects, with its metadata, or fails with
// an error matching ErrInvalidInput or ErrNotFound.
func (r *Repository) lookup(ctx context.Context, key revision.Key) (*view, error) {
	v, err := r.lookupRevision(ctx, key)
	if err != nil {
		return nil, err
	}
	md, err := r.metadataOf(ctx, v.meta.Key.Package, v.repo, v.meta.Key.Workspace)
	if err != nil {
		return nil, err
	}
	decorate(v, md)
	return v, nil
}

// lookupRevision is lookup without the metadata.
func (r *Repository) lookupRevision(ctx context.Context, key revision.Key) (*view, error) {
	if err := key.ValidateLookup(); err != nil {
		return nil, r.errorf("get", key, repository.ErrInvalidInput, "%w", err)
	}
	notFound := r.errorf("get", key, repository.ErrNotFound, "no revision matches")
	if key.Repository != "" && key.Repository != r.name {
		return nil, notFound
	}
	if key.Revision == revision.Placeholder || revision.ValidatePackagePath(key.Package) != nil {
		return nil, notFound
	}
	repo, err := r.repoOf(key.Package)
	if err != nil {
		return nil, notFound
	}
	if key.Revision > 0 {
		v, err := r.getPublished(ctx, key.Package, repo, key.Revision)
		if err != nil {
			return nil, err
		}
		if v == nil || !key.Matches(v.meta.Key) {
			return nil, notFound
		}
		return v, nil
	}
	rec, err := r.fetch(ctx, repo, workspaceTag(key.Workspace))
	if err != nil {
		return nil, err
	}
	if !rec.valid(key.Package, workspaceTag(key.Workspace)) {
		return nil, notFound
	}
	switch rec.lifecycle {
	case revision.LifecyclePublished:
		v, err := r.getPublished(ctx, key.Package, repo, rec.revision)
		if err != nil {
			return nil, err
		}
		if v == nil || v.meta.Key.Workspace != key.Workspace {
			return nil, notFound
		}
		return v, nil
	case revision.LifecycleProposed:
		// An approval writes v<N> before it turns the workspace tag into
		// an alias: the newest v<N> may already be this proposal.
		tags, err := r.listTags(ctx, repo)
		if err != nil {
			return nil, err
		}
		if n := maxNumber(tags); n > 0 {
			v, err := r.getPublished(ctx, key.Package, repo, n)
			if err != nil {
				return nil, err
			}
			if v != nil && v.meta.Key.Workspace == key.Workspace {
				return v, nil
			}
		}
	}
	v := r.draftView(key.Package, repo, rec)
	return &v, nil
}

func maxNumber(tags []string) int {
	n := 0
	for _, t := range tags {
		if kind, m, _ := parseTag(t); kind == tagPublished || kind == tagDeletion {
			n = max(n, m)
		}
	}
	return n
}

// getPublished reads published revision n of pkg, or nil.
func (r *Repository) getPublished(ctx context.Context, pkg string, repo name.Repository, n int) (*view, error) {
	var rec, marker *record
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		rec, err = r.fetch(gctx, repo, publishedTag(n))
		return err
	})
	g.Go(func() error {
		var err error
		marker, err = r.fetch(gctx, repo, deletionTag(n))
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if !rec.valid(pkg, publishedTag(n)) {
		return nil, nil
	}
	if !marker.valid(pkg, deletionTag(n)) || marker.annotations[AnnotationMarks] != rec.digest.String() {
		marker = nil
	}
	v := r.publishedView(pkg, repo, n, rec, marker)
	return &v, nil
}

// revisionOf returns the PackageRevision of v, whose files are read from
// its layer on first use.
func (r *Repository) revisionOf(v view) revision.PackageRevision {
	rec, repo := v.rec, v.repo
	return revision.New(v.meta, func(ctx context.Context) (revision.Files, error) {
		f, err := r.readLayer(ctx, repo, rec)
		if err != nil {
			return revision.Files{}, r.wrap("read files", v.meta.Key, err)
		}
		return f, nil
	})
}

// readLayer fetches and safely decodes rec's layer. The size its
// descriptor declares is bounded by Options.MaxLayerSize, and at most
// that many bytes of the blob are read: a blob of another size is
// refused, as is one whose digest is not the descriptor's.
func (r *Repository) readLayer(ctx context.Context, repo name.Repository, rec *record) (revision.Files, error) {
	d := rec.layer.Digest.String()
	size := rec.layer.Size
	if size < 0 {
		return revision.Files{}, &LayerError{Digest: d, Reason: "negative declared size " + strconv.FormatInt(size, 10)}
	}
	if size > r.opts.MaxLayerSize {
		return revision.Files{}, &LayerError{Digest: d, Limit: "ocirepo.Options.MaxLayerSize",
			Reason: "declared compressed size " + strconv.FormatInt(size, 10) + " exceeds the cap of " + strconv.FormatInt(r.opts.MaxLayerSize, 10)}
	}
	l, err := r.puller.Layer(ctx, digestRef(repo, d))
	if err != nil {
		return revision.Files{}, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return revision.Files{}, err
	}
	defer rc.Close()
	// Read the blob whole (at most its declared size) so that its digest
	// is verified before a byte of it is decoded.
	raw := make([]byte, 0, size+1)
	buf := bytes.NewBuffer(raw)
	if _, err := buf.ReadFrom(io.LimitReader(rc, size+1)); err != nil {
		return revision.Files{}, err
	}
	raw = buf.Bytes()
	if int64(len(raw)) != size {
		more := "less"
		if int64(len(raw)) > size {
			more = "more"
		}
		return revision.Files{}, &LayerError{Digest: d, Reason: "the blob holds " + more + " than the " + strconv.FormatInt(size, 10) + " bytes its descriptor declares"}
	}
	if got := descriptor(raw, rec.layer.MediaType).Digest; got != rec.layer.Digest {
		return revision.Files{}, &LayerError{Digest: d, Reason: "blob digest is " + got.String()}
	}
	return decodeLayer(bytes.NewReader(raw), d, limits{maxExpanded: r.opts.MaxExpandedSize, maxFile: r.opts.MaxFileBytes, maxFiles: r.opts.MaxFiles})
}
