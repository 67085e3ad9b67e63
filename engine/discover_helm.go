package engine

import (
	"context"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/configasdata/cad/revision"
)

// HelmUpgradeCandidate is a downstream package whose latest published
// revision was cloned from (or last upgraded to) a Helm chart, with the
// chart versions it could be upgraded to.
type HelmUpgradeCandidate struct {
	// Downstream is the latest published revision of the downstream
	// package.
	Downstream revision.Key
	// Upstream is the chart as the package records it: repo, chart,
	// release name, namespace and values, with Version the locked
	// version. Upgrade with Ref{Helm: &HelmUpstream{Version: v}} (the
	// other fields default to the recorded ones), or a copy of Upstream
	// with another Version or other Values.
	Upstream HelmUpstream
	// Digest is the locked chart archive's digest.
	Digest string
	// Newer lists the chart versions above the locked one by semantic
	// versioning, oldest first. Prereleases are listed only when the
	// locked version is one; versions that are not semantic versions are
	// left out, and so is everything when the locked version is not one.
	// The recorded version constraint does not limit it. Empty when the
	// downstream is up to date.
	Newer []string
}

// DiscoverHelmUpgrades is [Engine.DiscoverUpgrades] for packages cloned
// from Helm charts (CloneSource.Helm): for the latest published revision
// of every package of the repositories named by repos (all when empty)
// whose upstream lock is a Helm lock, it lists the chart's versions with
// lister (once per repository and chart) and reports the newer ones (see
// HelmUpgradeCandidate). Upgrade one with [Engine.Upgrade] and a Ref.Helm
// new upstream. The result is sorted by downstream repository and package.
//
// Errors: repository.ErrInvalidInput without a lister;
// repository.ErrNotFound for an unknown repository name in repos; a
// repository's List or read error; the lister's error.
func (e *Engine) DiscoverHelmUpgrades(ctx context.Context, repos []string, lister ChartLister) ([]HelmUpgradeCandidate, error) {
	const op = "discover helm upgrades"
	if lister == nil {
		return nil, invalid(op, revision.Key{}, "a ChartLister is required")
	}
	if len(repos) == 0 {
		all, err := e.opts.Repositories.Names(ctx)
		if err != nil {
			return nil, wrap(op, revision.Key{}, err)
		}
		repos = all
	}
	type chartID struct{ repo, chart string }
	listed := map[chartID][]string{}
	var out []HelmUpgradeCandidate
	err := e.eachLatestPublished(ctx, op, repos, func(k revision.Key, info revision.Info) error {
		if info.UpstreamLock == nil || info.UpstreamLock.Helm == nil {
			return nil
		}
		l := info.UpstreamLock.Helm
		if l.Repo == "" || l.Chart == "" || l.Version == "" {
			return nil
		}
		up := HelmUpstream{Repo: l.Repo, Chart: l.Chart, Version: l.Version}
		if info.Upstream != nil && info.Upstream.Helm != nil {
			h := info.Upstream.Helm
			up.ReleaseName, up.Namespace, up.Values = h.ReleaseName, h.Namespace, revision.CloneValues(h.Values)
		}
		id := chartID{l.Repo, l.Chart}
		versions, ok := listed[id]
		if !ok {
			var err error
			if versions, err = lister.Versions(ctx, HelmUpstream{Repo: l.Repo, Chart: l.Chart}); err != nil {
				return wrap(op, k, err)
			}
			listed[id] = versions
		}
		out = append(out, HelmUpgradeCandidate{Downstream: k, Upstream: up, Digest: l.Digest, Newer: newerVersions(versions, l.Version)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b HelmUpgradeCandidate) int { return byRepoAndPackage(a.Downstream, b.Downstream) })
	return out, nil
}

// newerVersions returns the versions above locked, oldest first, as
// HelmUpgradeCandidate.Newer describes them.
func newerVersions(versions []string, locked string) []string {
	cur, err := semver.NewVersion(locked)
	if err != nil {
		return nil
	}
	type parsed struct {
		s string
		v *semver.Version
	}
	var newer []parsed
	seen := map[string]bool{}
	for _, s := range versions {
		v, err := semver.NewVersion(s)
		if err != nil || seen[s] || !v.GreaterThan(cur) || (v.Prerelease() != "" && cur.Prerelease() == "") {
			continue
		}
		seen[s] = true
		newer = append(newer, parsed{s, v})
	}
	slices.SortFunc(newer, func(a, b parsed) int {
		if c := a.v.Compare(b.v); c != 0 {
			return c
		}
		return strings.Compare(a.s, b.s)
	})
	out := make([]string, len(newer))
	for i, p := range newer {
		out[i] = p.s
	}
	return out
}
