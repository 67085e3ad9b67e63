package engine

import (
	"context"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// UpstreamLister lists the refs of a git repository the Engine does not
// manage, for DiscoverGitUpgrades (see repository.UpstreamLister);
// repository/gitrepo.Fetcher implements it.
//
// Deprecated: use repository.UpstreamLister, the same type.
type UpstreamLister = repository.UpstreamLister

// GitUpgradeCandidate is a downstream package whose latest published
// revision was cloned from (or last upgraded to) a package in a git
// repository the Engine does not manage, with what it could be upgraded to.
type GitUpgradeCandidate struct {
	// Downstream is the latest published revision of the downstream
	// package.
	Downstream revision.Key
	// Upstream is the upstream as its lock records it: repo, directory and
	// ref; Commit is the locked commit.
	Upstream repository.GitUpstream
	Commit   string
	// Newer lists the refs to upgrade to, oldest first: for a locked ref
	// "<directory>/v<N>" or "v<N>", the tags of the same form with a
	// higher N; for any other ref (a branch, another tag), that ref when
	// it points at another commit than the locked one. Empty when the
	// downstream is up to date.
	Newer []string
}

// DiscoverGitUpgrades is [Engine.DiscoverUpgrades] for packages cloned from
// git repositories the Engine does not manage (CloneSource.Git): for the
// latest published revision of every package of the repositories named by
// repos (all when empty) whose upstream lock is a git lock not naming a
// repository of the Engine, it lists the upstream repository's refs with
// lister (once per repository URL) and reports the newer refs (see
// GitUpgradeCandidate). Upgrade one with [Engine.Upgrade] and Ref.Git
// upstreams. The result is sorted by downstream repository and package.
//
// Errors: repository.ErrInvalidInput without a lister;
// repository.ErrNotFound for an unknown repository name in repos; a
// repository's List or read error; the lister's error.
func (e *Engine) DiscoverGitUpgrades(ctx context.Context, repos []string, lister repository.UpstreamLister) ([]GitUpgradeCandidate, error) {
	const op = "discover git upgrades"
	if lister == nil {
		return nil, invalid(op, revision.Key{}, "an UpstreamLister is required")
	}
	all, err := e.opts.Repositories.Names(ctx)
	if err != nil {
		return nil, wrap(op, revision.Key{}, err)
	}
	if len(repos) == 0 {
		repos = all
	}
	byRef := e.repoIndex(ctx, all)
	listed := map[string]map[string]string{} // refs by repository URL
	var out []GitUpgradeCandidate
	err = e.eachLatestPublished(ctx, op, repos, func(k revision.Key, info revision.Info) error {
		if info.UpstreamLock == nil || info.UpstreamLock.Git == nil {
			return nil
		}
		if _, known := upstreamOf(info, byRef); known {
			return nil // a registered repository: DiscoverUpgrades
		}
		l := info.UpstreamLock.Git
		if l.Repo == "" || l.Ref == "" {
			return nil
		}
		refs, ok := listed[l.Repo]
		if !ok {
			var err error
			if refs, err = lister.Refs(ctx, repository.GitUpstream{Repo: l.Repo}); err != nil {
				return wrap(op, k, err)
			}
			listed[l.Repo] = refs
		}
		out = append(out, GitUpgradeCandidate{
			Downstream: k,
			Upstream:   repository.GitUpstream{Repo: l.Repo, Directory: l.Directory, Ref: l.Ref},
			Commit:     l.Commit,
			Newer:      newerRefs(refs, l.Directory, l.Ref, l.Commit),
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b GitUpgradeCandidate) int { return byRepoAndPackage(a.Downstream, b.Downstream) })
	return out, nil
}

// newerRefs returns the refs newer than ref (locked at commit) among refs,
// as GitUpgradeCandidate.Newer describes them. A locked "v<N>" also
// counts "<dir>/v<M>" tags, which Fetch resolves "v<M>" to first; the
// refs returned have the locked ref's form.
func newerRefs(refs map[string]string, dir, ref, commit string) []string {
	dir = strings.Trim(path.Clean("/"+dir), "/")
	var prefixes []string
	if dir != "" {
		prefixes = append(prefixes, dir+"/v")
	}
	prefixes = append(prefixes, "v")
	form := ""
	n := 0
	for _, p := range prefixes {
		if m, ok := versionOf(ref, p); ok {
			form, n = p, m
			break
		}
	}
	if form == "" {
		if h, ok := refs[ref]; ok && commit != "" && h != commit {
			return []string{ref}
		}
		return nil
	}
	if form != "v" {
		prefixes = prefixes[:1] // a package-scoped lock counts only its own tags
	}
	seen := map[int]bool{}
	for name := range refs {
		for _, p := range prefixes {
			if m, ok := versionOf(name, p); ok && m > n {
				seen[m] = true
			}
		}
	}
	var out []string
	for _, m := range slices.Sorted(maps.Keys(seen)) {
		out = append(out, form+strconv.Itoa(m))
	}
	return out
}

// versionOf returns N for s == prefix+N with N a positive integer.
func versionOf(s, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || rest == "" || rest[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// eachLatestPublished calls fn with the key and Info of the latest
// published revision of every package of the repositories named by repos,
// repository by repository. A revision whose Info does not read is
// skipped (its records do not parse: it names no upstream). It returns
// the first error of a repository or of fn.
func (e *Engine) eachLatestPublished(ctx context.Context, op string, repos []string, fn func(revision.Key, revision.Info) error) error {
	for _, name := range repos {
		r, err := e.repo(ctx, op, revision.Key{Repository: name})
		if err != nil {
			return err
		}
		revs, err := r.List(ctx, repository.ListOptions{Lifecycles: []revision.Lifecycle{revision.LifecyclePublished}})
		if err != nil {
			return wrap(op, revision.Key{Repository: name}, err)
		}
		var keys []revision.Key
		for _, pr := range revs {
			if k := pr.Meta().Key; k.Revision > 0 {
				keys = append(keys, k)
			}
		}
		for _, k := range latestPerPackage(keys) {
			pr, err := r.Get(ctx, k)
			if err != nil {
				return wrap(op, k, err)
			}
			info, err := pr.Info(ctx)
			if err != nil {
				continue
			}
			if err := fn(k, info); err != nil {
				return err
			}
		}
	}
	return nil
}
