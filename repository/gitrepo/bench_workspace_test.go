package gitrepo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// BenchmarkPorchWorkspaceLookup is the check every new draft makes: a Get
// of a workspace that no revision of the package holds (ErrNotFound), for
// a package with 10 revisions and with 500 (5,000 with -scale), and with
// -scale of a package among 2,000 (10,000 revisions in directories), in
// the same Repository (warm), in a new one each time (cold), and in a new
// one after packed-refs was written anew with the same refs
// (cold-repacked, as git pack-refs or a deletion of another packed ref
// leaves it).
func BenchmarkPorchWorkspaceLookup(b *testing.B) {
	ctx := context.Background()
	shapes := []porchShape{}
	for _, s := range draftShapes() {
		if s.Dirs == 0 {
			shapes = append(shapes, s)
		}
	}
	if *scale {
		shapes = append(shapes, porchShape{Packages: 2000, Revisions: 10000, Dirs: 20, Drafts: 100, Proposals: 100})
	}
	for _, s := range shapes {
		dir := copyDir(b, porchFixture(b, s))
		key := revision.Key{Package: s.pkg(0), Workspace: "free"}
		lookup := func(b *testing.B, r *gitrepo.Repository) {
			if _, err := r.Get(ctx, key); !errors.Is(err, repository.ErrNotFound) {
				b.Fatalf("Get of a free workspace: %v, want ErrNotFound", err)
			}
		}
		benchWarmCold(b, s.String(), dir, lookup)
	}
}

// benchWarmCold runs op as three benchmarks named after shape: in one
// Repository of the git directory dir that op ran in once before (warm),
// in a new Repository each time (cold), and in a new one after
// packed-refs was written anew with the same refs (cold-repacked, as git
// pack-refs or a deletion of another packed ref leaves it). Each reports
// the CPU per op (cpu-ns/op).
func benchWarmCold(b *testing.B, shape, dir string, op func(*testing.B, *gitrepo.Repository)) {
	b.Run(shape+"/warm", func(b *testing.B) {
		r := mustOpen(b, benchSpec(dir), nil)
		defer r.Close()
		op(b, r)
		cpu := cpuTime()
		for b.Loop() {
			op(b, r)
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	})
	b.Run(shape+"/cold", func(b *testing.B) {
		cpu := cpuTime()
		for b.Loop() {
			r := mustOpen(b, benchSpec(dir), nil)
			op(b, r)
			r.Close()
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	})
	b.Run(shape+"/cold-repacked", func(b *testing.B) {
		p := filepath.Join(dir, "packed-refs")
		var cpu time.Duration
		for b.Loop() {
			b.StopTimer()
			data, err := os.ReadFile(p)
			if err == nil {
				err = os.WriteFile(p+".new", data, 0o644)
			}
			if err == nil {
				err = os.Rename(p+".new", p)
			}
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := cpuTime()
			r := mustOpen(b, benchSpec(dir), nil)
			op(b, r)
			r.Close()
			cpu += cpuTime() - start
		}
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	})
}
