package variant_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
	"github.com/stretchr/testify/require"
)

// BenchmarkSyncSet fans a PackageVariantSet out to n downstream packages in
// one repository and syncs it once (every downstream created) and then
// again (every downstream unchanged). Metrics:
//
//   - ms/set: the first sync;
//   - us/downstream: the first sync per downstream;
//   - engine-us/downstream: that minus the time spent in the repository's
//     writes (draft commits and metadata writes), i.e. what the variant
//     package, the engine and the reads cost per downstream;
//   - resync-us/downstream: the second sync per downstream;
//   - remove-us/downstream: RemoveSet after them, per downstream;
//   - peak-MiB: the peak of live heap during the first sync.
//
// Rerun: go test ./variant -run '^$' -bench SyncSet -benchtime 1x
func BenchmarkSyncSet(b *testing.B) {
	type bench struct {
		name string
		open func(b *testing.B, name string) repository.Repository
	}
	benches := []bench{
		{"memrepo", func(b *testing.B, name string) repository.Repository { return memrepo.New(name, nil) }},
		{"gitrepo-disk", func(b *testing.B, name string) repository.Repository {
			if _, err := exec.LookPath("git"); err != nil {
				b.Skip("git CLI not found")
			}
			dir := filepath.Join(b.TempDir(), name+".git")
			if out, err := exec.Command("git", "init", "--quiet", "--bare", "-b", "main", dir).CombinedOutput(); err != nil {
				b.Fatalf("git init: %v\n%s", err, out)
			}
			r, err := gitrepo.Open(context.Background(), repository.Spec{Name: name, Type: repository.TypeGit,
				Git: &repository.GitSpec{Repo: dir, CreateBranch: true}}, nil)
			require.NoError(b, err)
			b.Cleanup(func() { r.Close() })
			return r
		}},
	}
	for _, be := range benches {
		for _, n := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("%s/n=%d", be.name, n), func(b *testing.B) {
				var first, second, remove, writes time.Duration
				var peak uint64
				for range b.N {
					b.StopTimer()
					up := &timedRepo{Repository: be.open(b, "blueprints")}
					down := &timedRepo{Repository: be.open(b, "deployments")}
					repos := engine.Repos{"blueprints": up.batching(), "deployments": down.batching()}
					e, err := engine.New(&engine.Options{Repositories: repos})
					require.NoError(b, err)
					v := &env{t: b, ctx: context.Background(), repos: repos, e: e}
					v.publish("blueprints", "bucket", upstreamFiles())
					names := make([]string, n)
					for i := range names {
						names[i] = fmt.Sprintf("pkg-%04d", i)
					}
					pvs := newSet("fan", variant.Target{
						Repositories: []variant.RepositoryTarget{{Name: "deployments", PackageNames: names}},
						Template: &variant.PackageVariantTemplate{
							PackageContext: &variant.PackageContextTemplate{DataExprs: []variant.MapExpr{{Key: ptr("pkg"), ValueExpr: ptr("packageDefault")}}},
						},
					})
					// One at a time, so that wall time minus the writes is what the
					// variant package and the engine cost.
					opts := &variant.Options{Repositories: repos, Concurrency: 1}
					runtime.GC()
					down.reset()
					stop := samplePeak(&peak)
					b.StartTimer()

					start := time.Now()
					res, err := variant.SyncSet(v.ctx, e, pvs, opts)
					first += time.Since(start)
					b.StopTimer()
					stop()
					require.NoError(b, err)
					require.Len(b, res.Results, n)
					writes += down.spent()
					b.StartTimer()

					start = time.Now()
					res, err = variant.SyncSet(v.ctx, e, pvs, opts)
					second += time.Since(start)
					require.NoError(b, err)
					for _, r := range res.Results {
						if r.Action != variant.ActionUnchanged {
							b.Fatalf("resync: %s", r)
						}
					}

					start = time.Now()
					res, err = variant.RemoveSet(v.ctx, e, pvs, opts)
					remove += time.Since(start)
					require.NoError(b, err)
					require.Len(b, res.Removed, n)
				}
				per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N*n) }
				b.ReportMetric(float64(first.Milliseconds())/float64(b.N), "ms/set")
				b.ReportMetric(per(first), "us/downstream")
				b.ReportMetric(per(first-writes), "engine-us/downstream")
				b.ReportMetric(per(second), "resync-us/downstream")
				b.ReportMetric(per(remove), "remove-us/downstream")
				b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
			})
		}
	}
}

// samplePeak records the peak of live heap objects into peak until the
// returned stop is called.
func samplePeak(peak *uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > *peak {
				*peak = v
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// timedRepo measures the time spent in a repository's writes.
type timedRepo struct {
	repository.Repository
	ns atomic.Int64
}

var _ repository.MetadataWriter = (*timedRepo)(nil)

func (r *timedRepo) reset()               { r.ns.Store(0) }
func (r *timedRepo) spent() time.Duration { return time.Duration(r.ns.Load()) }

func (r *timedRepo) since(t time.Time) { r.ns.Add(int64(time.Since(t))) }

func (r *timedRepo) CreateDraft(ctx context.Context, key revision.Key, opts repository.CreateDraftOptions) (revision.Draft, error) {
	d, err := r.Repository.CreateDraft(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	return &timedDraft{Draft: d, r: r}, nil
}

func (r *timedRepo) OpenDraft(ctx context.Context, key revision.Key) (revision.Draft, error) {
	d, err := r.Repository.OpenDraft(ctx, key)
	if err != nil {
		return nil, err
	}
	return &timedDraft{Draft: d, r: r}, nil
}

func (r *timedRepo) SetMetadata(ctx context.Context, key revision.Key, md revision.Metadata, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	defer r.since(time.Now())
	return repository.SetMetadata(ctx, r.Repository, key, md, opts)
}

func (r *timedRepo) Version(ctx context.Context) (string, error) {
	return repository.Version(ctx, r.Repository)
}

// batching returns r, as a repository.Batcher when the repository it
// wraps is one, so that SyncSet batches its writes as it does on that
// repository; a batch's commit counts among the writes.
func (r *timedRepo) batching() repository.Repository {
	if _, ok := r.Repository.(repository.Batcher); ok {
		return timedBatcher{r}
	}
	return r
}

// timedBatcher is a timedRepo over a repository.Batcher.
type timedBatcher struct{ *timedRepo }

func (r timedBatcher) BeginBatch(ctx context.Context) (repository.Batch, error) {
	b, err := r.Repository.(repository.Batcher).BeginBatch(ctx)
	if err != nil {
		return nil, err
	}
	return timedBatch{Batch: b, r: r.timedRepo}, nil
}

// timedBatch counts its Commit among its repository's writes (the writes
// through the batch are not timed one by one).
type timedBatch struct {
	repository.Batch
	r *timedRepo
}

func (b timedBatch) SetMetadata(ctx context.Context, key revision.Key, md revision.Metadata, opts repository.UpdateOptions) (revision.PackageRevision, error) {
	return repository.SetMetadata(ctx, b.Batch, key, md, opts)
}

func (b timedBatch) Commit(ctx context.Context) error {
	defer b.r.since(time.Now())
	return b.Batch.Commit(ctx)
}

type timedDraft struct {
	revision.Draft
	r *timedRepo
}

func (d *timedDraft) Commit(ctx context.Context, opts revision.CommitOptions) (revision.PackageRevision, error) {
	defer d.r.since(time.Now())
	return d.Draft.Commit(ctx, opts)
}
