package engine

import (
	"context"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// HelmUpstream is a Helm chart as an upstream: a chart in a chart
// repository (an http(s) URL serving index.yaml) or an OCI registry
// (oci://host/path, the chart being path/Chart:Version), rendered at a
// version with values into the package's resources (see
// [CloneSource].Helm and [Ref].Helm).
type HelmUpstream struct {
	// Repo is the chart repository URL or the oci:// registry repository.
	Repo string
	// Chart is the chart's name.
	Chart string
	// Version is an exact version or a semver constraint ("^1.2"); empty
	// means the newest for a clone, and the locked version for an
	// upgrade's Ref.Helm.
	Version string
	// ReleaseName and Namespace are the release's (.Release.Name,
	// .Release.Namespace); empty means the renderer's defaults.
	ReleaseName string
	Namespace   string
	// Values are the values rendered over the chart's defaults, as
	// helm template --values takes them. They are recorded in the
	// package's upstream as data (so keep secrets out of them). In an
	// upgrade's Ref.Helm, nil means the values the local package recorded.
	Values map[string]any
	// Auth is the credentials for Repo (helmfn.Charts takes a user name
	// and password). Nil means none. They are never written to the
	// package.
	Auth *repository.Credentials
}

// ChartRenderer renders a Helm chart into package files for Clone and
// Upgrade. helmfn.Charts (module github.com/configasdata/cad/helmfn)
// implements it with Helm's SDK; the engine itself speaks no Helm.
// Implementations must be safe for concurrent use.
type ChartRenderer interface {
	// Render resolves up.Version to one chart version, renders the chart
	// as helm template does with up's release name, namespace and values,
	// and returns the rendered resources as package files, the exact
	// version rendered and the digest of the chart archive (see
	// revision.HelmLock). Errors should match repository.ErrNotFound for
	// an unknown chart or a version that no version satisfies.
	Render(ctx context.Context, up HelmUpstream) (files revision.Files, version, digest string, err error)
}

// ChartLister lists the versions of a Helm chart for
// [Engine.DiscoverHelmUpgrades]. helmfn.Charts implements it.
// Implementations must be safe for concurrent use.
type ChartLister interface {
	// Versions returns every version of up.Chart in up.Repo, in any
	// order. Errors should match repository.ErrNotFound for an unknown
	// chart.
	Versions(ctx context.Context, up HelmUpstream) ([]string, error)
}

// fetchHelm renders up with r and returns the origin that records it.
func fetchHelm(ctx context.Context, op string, key revision.Key, up HelmUpstream, r ChartRenderer) (revision.Files, origin, error) {
	switch {
	case r == nil:
		return revision.Files{}, origin{}, invalid(op, key, "a Helm chart upstream needs a ChartRenderer (CloneOptions.Charts, UpgradeOptions.Charts)")
	case up.Repo == "" || up.Chart == "":
		return revision.Files{}, origin{}, invalid(op, key, "a Helm chart upstream needs a repo and a chart")
	}
	files, version, digest, err := r.Render(ctx, up)
	if err != nil {
		return revision.Files{}, origin{}, wrap(op, key, err)
	}
	if version == "" {
		return revision.Files{}, origin{}, repository.Errorf(op, key.Repository, key, repository.ErrInvalidInput,
			"chart renderer returned no version for chart %s of %s", up.Chart, up.Repo)
	}
	if files.Has(revision.KptfileName) || files.Has(revision.PackageFileName) {
		return revision.Files{}, origin{}, repository.Errorf(op, key.Repository, key, repository.ErrInvalidInput,
			"chart %s %s rendered a file named %s or %s", up.Chart, version, revision.KptfileName, revision.PackageFileName)
	}
	return files, origin{helm: &helmOrigin{
		upstream: revision.Helm{Repo: up.Repo, Chart: up.Chart, Version: up.Version, ReleaseName: up.ReleaseName,
			Namespace: up.Namespace, Values: revision.CloneValues(up.Values)},
		lock: revision.HelmLock{Repo: up.Repo, Chart: up.Chart, Version: version, Digest: digest},
	}}, nil
}

// helmOrigin is a rendered chart as the package's upstream and lock
// record it.
type helmOrigin struct {
	upstream revision.Helm
	lock     revision.HelmLock
}

func (h *helmOrigin) records(strategy revision.UpdateStrategy) (*revision.Upstream, *revision.UpstreamLock) {
	up, lock := h.upstream, h.lock
	up.Values = revision.CloneValues(up.Values)
	if up.Version == "" {
		up.Version = lock.Version
	}
	return &revision.Upstream{Type: revision.HelmOrigin, Helm: &up, UpdateStrategy: strategy},
		&revision.UpstreamLock{Type: revision.HelmOrigin, Helm: &lock}
}

// helmRefs completes the Helm upstreams of an upgrade of localFiles
// (revision localKey) from what the local package recorded: in a Ref.Helm,
// an empty Repo, Chart, ReleaseName or Namespace is the recorded one, an
// empty Version the locked version, nil Values the recorded values; a zero
// oldUpstream beside a Helm newUpstream is the locked chart version with
// the recorded values (and newUpstream's Auth). Refs without Helm are
// returned as they are. lock is the local package's Helm lock, nil when
// it has none or no Ref is Helm.
func helmRefs(op string, localKey revision.Key, localFiles revision.Files, oldUpstream, newUpstream Ref) (_, _ Ref, _ *revision.HelmLock, _ error) {
	if oldUpstream.Helm == nil && newUpstream.Helm == nil {
		return oldUpstream, newUpstream, nil, nil
	}
	info, err := revision.InfoFromFiles(localFiles)
	if err != nil {
		return Ref{}, Ref{}, nil, invalid(op, localKey, "local package: %v", err)
	}
	var rec revision.Helm
	if info.Upstream != nil && info.Upstream.Helm != nil {
		rec = *info.Upstream.Helm
	}
	var lock revision.HelmLock
	var locked *revision.HelmLock
	if info.UpstreamLock != nil && info.UpstreamLock.Helm != nil {
		lock = *info.UpstreamLock.Helm
		locked = &lock
	}
	complete := func(h HelmUpstream) *HelmUpstream {
		fill := func(s *string, vals ...string) {
			for _, v := range vals {
				if *s == "" {
					*s = v
				}
			}
		}
		fill(&h.Repo, rec.Repo, lock.Repo)
		fill(&h.Chart, rec.Chart, lock.Chart)
		fill(&h.Version, lock.Version)
		fill(&h.ReleaseName, rec.ReleaseName)
		fill(&h.Namespace, rec.Namespace)
		if h.Values == nil {
			h.Values = revision.CloneValues(rec.Values)
		}
		return &h
	}
	if newUpstream.Helm != nil {
		newUpstream.Helm = complete(*newUpstream.Helm)
		if oldUpstream == (Ref{}) {
			if lock.Version == "" {
				return Ref{}, Ref{}, nil, invalid(op, localKey, "local package has no Helm upstream lock to upgrade from; name the old upstream")
			}
			oldUpstream.Helm = complete(HelmUpstream{Repo: lock.Repo, Chart: lock.Chart, Auth: newUpstream.Helm.Auth})
		}
	}
	if oldUpstream.Helm != nil {
		oldUpstream.Helm = complete(*oldUpstream.Helm)
	}
	return oldUpstream, newUpstream, locked, nil
}

// checkLockedChart logs a warning when the chart rendered as an upgrade's
// original is the locked version but not the locked archive (a chart
// republished under the same version): the merge then takes what changed
// since as a local edit's base.
func (e *Engine) checkLockedChart(ctx context.Context, key revision.Key, lock *revision.HelmLock, from origin) {
	if lock == nil || lock.Digest == "" || from.helm == nil {
		return
	}
	got := from.helm.lock
	if got.Repo == lock.Repo && got.Chart == lock.Chart && got.Version == lock.Version && got.Digest != "" && got.Digest != lock.Digest {
		e.opts.Logger.WarnContext(ctx, "the locked chart version was republished: the upgrade's original is the chart as it is now",
			"key", key.String(), "chart", lock.Chart, "version", lock.Version, "lockedDigest", lock.Digest, "digest", got.Digest)
	}
}
