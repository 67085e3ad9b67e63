package variant

import (
	"context"

	"github.com/configasdata/cad/deps"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/revision"
)

// Engine is what a variant sync needs of the package engine: reading
// revisions and upstreams, creating downstream drafts (clone, copy,
// upgrade), editing them, and retiring them. *engine.Engine implements it;
// a caller may wrap one (to log, meter or authorize each call) or supply
// another implementation for tests. Each method behaves as the
// *engine.Engine method of the same name documents, errors included.
// Implementations must be safe for concurrent use.
type Engine interface {
	// Repositories resolves the repositories the engine may use.
	Repositories() engine.Repositories
	// YAMLLimits returns the bounds each YAML file the engine reads is
	// held to (nil for the defaults of revision.YAMLLimits); the sync
	// holds the files it parses (resources, the package context) to the
	// same bounds.
	YAMLLimits() *revision.YAMLLimits
	// Get returns the revision key in repo.
	Get(ctx context.Context, repo string, key revision.Key) (revision.PackageRevision, error)
	// Latest returns the latest published revision of pkg in repo.
	Latest(ctx context.Context, repo, pkg string) (revision.PackageRevision, error)
	// UpstreamOf returns the upstream a revision records.
	UpstreamOf(ctx context.Context, info revision.Info) (engine.Ref, bool, error)
	// Clone creates a draft in repo from src.
	Clone(ctx context.Context, repo string, key revision.Key, src engine.CloneSource, opts engine.CloneOptions) (revision.PackageRevision, error)
	// Copy creates a new draft revision of a published package.
	Copy(ctx context.Context, repo string, source revision.Key, workspace string, opts engine.CopyOptions) (revision.PackageRevision, error)
	// Update replaces a draft's files and renders it.
	Update(ctx context.Context, repo string, key revision.Key, files revision.Files, opts engine.UpdateOptions) (revision.PackageRevision, error)
	// Upgrade creates a draft of local upgraded from oldUpstream to
	// newUpstream.
	Upgrade(ctx context.Context, repo string, local revision.Key, oldUpstream, newUpstream engine.Ref, workspace string, opts engine.UpgradeOptions) (revision.PackageRevision, error)
	// UpgradeDraft upgrades an existing draft in place.
	UpgradeDraft(ctx context.Context, repo string, key revision.Key, oldUpstream, newUpstream engine.Ref, opts engine.UpgradeOptions) (revision.PackageRevision, error)
	// SetMetadata replaces a revision's labels and annotations.
	SetMetadata(ctx context.Context, repo string, key revision.Key, md revision.Metadata, version string) (revision.PackageRevision, error)
	// Reject returns a proposed revision to draft.
	Reject(ctx context.Context, repo string, key revision.Key, pre ...engine.Precondition) (revision.PackageRevision, error)
	// ProposeDelete proposes a published revision for deletion.
	ProposeDelete(ctx context.Context, repo string, key revision.Key, pre ...engine.Precondition) (revision.PackageRevision, error)
	// Delete deletes a revision.
	Delete(ctx context.Context, repo string, key revision.Key, pre ...engine.Precondition) error
	// CloneProviders clones the providers a revision's dependencies need.
	CloneProviders(ctx context.Context, repo string, key revision.Key, opts *engine.CloneProvidersOptions) ([]revision.PackageRevision, *deps.Result, error)
	// CheckDependencies resolves a revision's dependencies and records
	// the result as its readiness condition.
	CheckDependencies(ctx context.Context, repo string, key revision.Key, opts *engine.DependenciesOptions) (*deps.Result, revision.PackageRevision, error)
}

var _ Engine = (*engine.Engine)(nil)
