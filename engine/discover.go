package engine

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// UpgradeCandidate is a downstream package whose latest published revision
// was cloned from (or last upgraded to) a revision of a package in one of
// the Engine's repositories, with the newer published revisions of that
// upstream package it could be upgraded to.
type UpgradeCandidate struct {
	// Downstream is the latest published revision of the downstream
	// package.
	Downstream revision.Key
	// Upstream is the upstream revision its Kptfile's upstreamLock names.
	Upstream revision.Key
	// Newer lists the published revisions of the upstream package with a
	// higher revision number than Upstream, oldest first; empty when the
	// downstream is up to date.
	Newer []revision.Key
}

// Latest returns the newest revision of c.Newer, or the zero Key when
// there is none.
func (c UpgradeCandidate) Latest() revision.Key {
	if len(c.Newer) == 0 {
		return revision.Key{}
	}
	return c.Newer[len(c.Newer)-1]
}

// DiscoverUpgrades reports, for every package of the repositories named by
// repos (all of the Engine's Repositories when empty), whether its latest
// published revision has a newer upstream revision, as porchctl rpkg
// upgrade --discover does. A package is a candidate when its Kptfile's
// upstreamLock (else upstream) is a git lock whose repo is a repository of
// the Engine (by name, or by URL when the Repositories implement [URLer]),
// whose directory is a package there and whose ref is "<package>/v<N>";
// packages cloned from elsewhere, or with no upstream, are left out. The
// result is sorted by downstream repository and package.
//
// It reads every repository's published revisions and the Kptfile of each
// package's latest one. Errors: repository.ErrNotFound for an unknown
// repository name in repos; a repository's List or read error. A Kptfile
// that does not parse leaves its package out.
func (e *Engine) DiscoverUpgrades(ctx context.Context, repos []string) ([]UpgradeCandidate, error) {
	const op = "discover upgrades"
	all, err := e.opts.Repositories.Names(ctx)
	if err != nil {
		return nil, wrap(op, revision.Key{}, err)
	}
	if len(repos) == 0 {
		repos = all
	}
	byRef := e.repoIndex(ctx, all)
	published := map[string][]revision.Key{} // per repository, sorted
	listPublished := func(name string) ([]revision.Key, error) {
		if keys, ok := published[name]; ok {
			return keys, nil
		}
		r, err := e.repo(ctx, op, revision.Key{Repository: name})
		if err != nil {
			return nil, err
		}
		revs, err := r.List(ctx, repository.ListOptions{Lifecycles: []revision.Lifecycle{revision.LifecyclePublished}})
		if err != nil {
			return nil, wrap(op, revision.Key{Repository: name}, err)
		}
		keys := make([]revision.Key, 0, len(revs))
		for _, pr := range revs {
			if k := pr.Meta().Key; k.Revision > 0 {
				keys = append(keys, k)
			}
		}
		published[name] = keys
		return keys, nil
	}

	var out []UpgradeCandidate
	for _, name := range repos {
		keys, err := listPublished(name)
		if err != nil {
			return nil, err
		}
		r, err := e.repo(ctx, op, revision.Key{Repository: name})
		if err != nil {
			return nil, err
		}
		for _, k := range latestPerPackage(keys) {
			pr, err := r.Get(ctx, k)
			if err != nil {
				return nil, wrap(op, k, err)
			}
			info, err := pr.Info(ctx)
			if err != nil {
				if errors.Is(err, repository.ErrInvalidInput) {
					continue
				}
				return nil, wrap(op, k, err)
			}
			up, ok := upstreamOf(info, byRef)
			if !ok {
				continue
			}
			upKeys, err := listPublished(up.Repository)
			if err != nil {
				return nil, err
			}
			c := UpgradeCandidate{Downstream: k, Upstream: up}
			for _, uk := range upKeys {
				if uk.Package == up.Package && uk.Revision > up.Revision {
					c.Newer = append(c.Newer, uk)
				}
			}
			slices.SortFunc(c.Newer, func(a, b revision.Key) int { return a.Revision - b.Revision })
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b UpgradeCandidate) int { return byRepoAndPackage(a.Downstream, b.Downstream) })
	return out, nil
}

// byRepoAndPackage orders keys by repository, then package path.
func byRepoAndPackage(a, b revision.Key) int {
	if c := strings.Compare(a.Repository, b.Repository); c != 0 {
		return c
	}
	return strings.Compare(a.Package, b.Package)
}

// latestPerPackage returns the key with the highest revision of each
// package in keys.
func latestPerPackage(keys []revision.Key) []revision.Key {
	best := map[string]revision.Key{}
	for _, k := range keys {
		if b, ok := best[k.Package]; !ok || k.Revision > b.Revision {
			best[k.Package] = k
		}
	}
	out := make([]revision.Key, 0, len(best))
	for _, k := range best {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b revision.Key) int { return strings.Compare(a.Package, b.Package) })
	return out
}

// UpstreamOf returns the revision of a repository of the Engine that
// info's upstream lock (else its upstream) names: a git lock whose repo is
// the repository's name or, when the Repositories implement [URLer], its
// URL (with or without ".git"), whose directory is the package path and
// whose ref is "<package>/v<N>", as Clone and Upgrade write them. ok is
// false when it names nothing the Engine knows: no upstream, or a package
// cloned from an unregistered git repository. It does not check that the
// revision still exists. The error is the Repositories' Names error.
func (e *Engine) UpstreamOf(ctx context.Context, info revision.Info) (Ref, bool, error) {
	names, err := e.opts.Repositories.Names(ctx)
	if err != nil {
		return Ref{}, false, err
	}
	k, ok := upstreamOf(info, e.repoIndex(ctx, names))
	return Ref{Repository: k.Repository, Key: revision.Key{Package: k.Package, Revision: k.Revision}}, ok, nil
}

// repoIndex maps what an upstream lock's repo may say (a repository name,
// its URL with or without ".git", or the store id of a generic lock) to
// the repository's name.
func (e *Engine) repoIndex(ctx context.Context, names []string) map[string]string {
	byRef := make(map[string]string, 3*len(names))
	u, hasURL := e.opts.Repositories.(URLer)
	for _, name := range names {
		byRef[name] = name
		if id, generic := e.locate(ctx, name); generic {
			byRef[id] = name
		}
		if !hasURL {
			continue
		}
		if url := u.URL(name); url != "" {
			byRef[url] = name
			byRef[strings.TrimSuffix(url, ".git")] = name
		}
	}
	return byRef
}

// upstreamGit returns the upstream info records in git terms: its git
// lock, or its generic lock (store id as repo, resource id as ref), else
// its git upstream (commit empty then).
func upstreamGit(info revision.Info) (repo, dir, ref, commit string, ok bool) {
	switch {
	case info.UpstreamLock != nil && info.UpstreamLock.Git != nil:
		g := info.UpstreamLock.Git
		return g.Repo, g.Directory, g.Ref, g.Commit, true
	case info.UpstreamLock != nil && info.UpstreamLock.Generic != nil:
		// A lock the engine wrote for a repository that is not git:
		// resourceID "<package>/v<N>", resourceVersion the content id.
		g := info.UpstreamLock.Generic
		i := strings.LastIndex(g.ResourceID, "/v")
		if i <= 0 {
			return "", "", "", "", false
		}
		return g.StoreID, g.ResourceID[:i], g.ResourceID, g.ResourceVersion, true
	case info.Upstream != nil && info.Upstream.Git != nil:
		g := info.Upstream.Git
		return g.Repo, g.Directory, g.Ref, "", true
	}
	return "", "", "", "", false
}

// upstreamOf returns the registered upstream revision info names,
// resolving its repo through byRef (see UpstreamOf).
func upstreamOf(info revision.Info, byRef map[string]string) (revision.Key, bool) {
	repo, dir, ref, _, ok := upstreamGit(info)
	if !ok {
		return revision.Key{}, false
	}
	name, ok := byRef[repo]
	if !ok {
		if name, ok = byRef[strings.TrimSuffix(repo, ".git")]; !ok {
			return revision.Key{}, false
		}
	}
	pkg := strings.Trim(dir, "/")
	ver, ok := strings.CutPrefix(ref, pkg+"/v")
	if !ok {
		return revision.Key{}, false
	}
	n, err := strconv.Atoi(ver)
	if err != nil || n < 1 {
		return revision.Key{}, false
	}
	return revision.Key{Repository: name, Package: pkg, Revision: n}, true
}
