package ocirepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Watch polls the registry every Options.PollInterval and calls handle for
// every revision opts selects that was added, changed (a new Version) or
// deleted since the previous poll, in List order. The first poll reports
// as added what was written (by the manifest's creation time) after Watch
// was called. Changes made and undone between two polls are not seen. It blocks until ctx is done (then it
// returns nil), handle returns an error (returned as is), or the
// repository is closed (ErrClosed). A failed poll is logged and retried at
// the next tick.
func (r *Repository) Watch(ctx context.Context, opts repository.ListOptions, handle func(repository.Event) error) error {
	const op = "watch"
	if err := r.enter(ctx, op, revision.Key{}); err != nil {
		return err
	}
	seen := map[revision.Key]revision.PackageRevision{}
	first := true
	started := r.opts.Clock()
	tick := time.NewTicker(r.opts.PollInterval)
	defer tick.Stop()
	for {
		revs, created, err := r.watchList(ctx, opts)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, repository.ErrClosed):
			return err
		case err != nil && repository.Damage(err) == nil:
			r.opts.Logger.Warn("watch poll failed", "repository", r.name, "error", err)
		default:
			damaged := err != nil
			if damaged {
				r.opts.Logger.Warn("watch poll left out damaged tags", "repository", r.name, "error", err)
			}
			now := map[revision.Key]revision.PackageRevision{}
			for _, pr := range revs {
				k := pr.Meta().Key
				now[k] = pr
				if first {
					// The first poll is the baseline, but what was written
					// after Watch was called, while it read, is news.
					if !created[k].Before(started) {
						if err := handle(repository.Event{Type: repository.Added, Revision: pr}); err != nil {
							return err
						}
					}
					continue
				}
				old, ok := seen[k]
				switch {
				case !ok:
					err = handle(repository.Event{Type: repository.Added, Revision: pr})
				case old.Meta().Version != pr.Meta().Version || old.Meta().Lifecycle != pr.Meta().Lifecycle:
					err = handle(repository.Event{Type: repository.Modified, Revision: pr})
				}
				if err != nil {
					return err
				}
			}
			if !first {
				var gone []revision.PackageRevision
				for k, pr := range seen {
					if _, ok := now[k]; !ok {
						if damaged {
							// Perhaps behind a damaged tag: kept as it was.
							now[k] = pr
							continue
						}
						gone = append(gone, pr)
					}
				}
				repository.SortRevisions(gone)
				for _, pr := range gone {
					if err := handle(repository.Event{Type: repository.Deleted, Revision: pr}); err != nil {
						return err
					}
				}
			}
			seen, first = now, false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// watchList is List that also returns when each revision's manifest was
// written.
func (r *Repository) watchList(ctx context.Context, opts repository.ListOptions) ([]revision.PackageRevision, map[revision.Key]time.Time, error) {
	if err := r.enter(ctx, "watch", revision.Key{}); err != nil {
		return nil, nil, err
	}
	views, damaged, err := r.listViews(ctx, opts.Package, opts.PackagePrefix)
	if err != nil {
		return nil, nil, r.wrap("watch", revision.Key{}, err)
	}
	if d := repository.NewDamageError(damaged); d != nil {
		// The others are listed: the caller reports no deletion.
		err = r.wrap("watch", revision.Key{}, d)
	}
	var out []revision.PackageRevision
	created := map[revision.Key]time.Time{}
	for _, v := range views {
		if !opts.Matches(v.meta) {
			continue
		}
		out = append(out, r.revisionOf(v))
		t, err := time.Parse(time.RFC3339Nano, v.rec.annotations[annotationCreated])
		if err != nil {
			t = time.Time{}
		}
		created[v.meta.Key] = t
	}
	repository.SortRevisions(out)
	return out, created, err
}

// Version returns a token of the whole repository's state: a hash of the
// key, lifecycle and manifest digest of every revision. It costs a List.
// Errors: ErrClosed, ErrUnavailable.
func (r *Repository) Version(ctx context.Context) (string, error) {
	const op = "version"
	if err := r.enter(ctx, op, revision.Key{}); err != nil {
		return "", err
	}
	views, damaged, err := r.listViews(ctx, "", "")
	if err != nil {
		return "", r.wrap(op, revision.Key{}, err)
	}
	lines := make([]string, 0, len(views)+len(damaged))
	for _, v := range views {
		lines = append(lines, fmt.Sprintf("%s\x00%s\x00%d\x00%s\x00%s", v.meta.Key.Package, v.meta.Key.Workspace, v.meta.Key.Revision, v.meta.Lifecycle, v.meta.Version))
	}
	for _, d := range damaged {
		// What is damaged is part of the state: a tag damaged or
		// repaired changes the Version.
		lines = append(lines, "damaged\x00"+d.Error())
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return "oci-" + hex.EncodeToString(sum[:16]), nil
}
