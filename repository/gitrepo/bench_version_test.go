package gitrepo_test

import (
	"context"
	"testing"
	"time"

	"github.com/configasdata/cad/repository/gitrepo"
)

// BenchmarkVersion is a poll of an unchanged repository: Version on a
// repository of 1,000 tags (100 packages of 10 revisions), with its refs
// packed (as git gc and Maintain leave them) and loose (each ref in its
// own file, as writes leave them until maintenance packs them), in a
// Repository that computed it before. It reports the CPU per call
// (cpu-ns/op) beside the wall time.
//
// Before Version kept its token with a Stamp of the ref files (2026-12-07)
// it read every ref on each call. The cached/ and fresh/ cases are
// CachedVersion and a Repository opened anew and its first Version, on
// the same unchanged repository (before the memo, 2026-12-07, a fresh
// Repository read every ref).
func BenchmarkVersion(b *testing.B) {
	ctx := context.Background()
	packed := copyDir(b, fixture(b, 100, 10))
	loose := copyDir(b, packed)
	unpackRefs(b, loose, "refs/")
	// Files changed in the last seconds are not trusted to show the next
	// change (the racy window, internal/refstore): a repository polled is
	// one that was written longer ago.
	time.Sleep(4 * time.Second)
	for _, c := range []struct{ name, dir string }{{"1000-tags/packed", packed}, {"1000-tags/loose", loose}} {
		b.Run(c.name, func(b *testing.B) {
			r := mustOpen(b, benchSpec(c.dir), nil)
			defer r.Close()
			want, err := r.Version(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				v, err := r.Version(ctx)
				if err != nil || v != want {
					b.Fatalf("Version = %q, %v; want %q", v, err, want)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
	// A poll of a repository kept closed while idle: CachedVersion
	// answers from the memo Version left, and a Repository opened anew
	// (as a pool opens a closed one) starts from it.
	for _, c := range []struct{ name, dir string }{{"1000-tags/packed", packed}, {"1000-tags/loose", loose}} {
		spec := benchSpec(c.dir)
		r := mustOpen(b, spec, nil)
		want, err := r.Version(ctx)
		r.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.Run("cached/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				if v, ok := gitrepo.CachedVersion(spec); !ok || v != want {
					b.Fatalf("CachedVersion = %q, %v; want %q", v, ok, want)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
		b.Run("fresh/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				r := mustOpen(b, spec, nil)
				v, err := r.Version(ctx)
				r.Close()
				if err != nil || v != want {
					b.Fatalf("Version = %q, %v; want %q", v, err, want)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
