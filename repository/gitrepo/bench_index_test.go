package gitrepo_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// indexConfig is a set of persistent indexes turned off, by name.
type indexConfig struct {
	name string
	off  gitrepo.IndexOff
}

var (
	indexesOn   = indexConfig{"all", gitrepo.IndexOff{}}
	noPaths     = indexConfig{"no-paths", gitrepo.IndexOff{Paths: true}}
	noWSRecords = indexConfig{"no-ws-records", gitrepo.IndexOff{Workspaces: true}}
	indexesOff  = indexConfig{"none", gitrepo.IndexOff{Paths: true, Workspaces: true}}
)

// indexShapes are the repositories the list benchmarks of
// BenchmarkIndexCost read (the first, every package at the root as in
// Porch's flat layout, with drafts and proposals, is the one the get and
// approve benchmarks read too) and the one package of many revisions its
// draft benchmark writes to.
func indexShapes() (lists []porchShape, draft porchShape) {
	if *scale {
		return []porchShape{
			{Packages: 2000, Revisions: 10000, Dirs: 1, Drafts: 100, Proposals: 100},
			{Packages: 2000, Revisions: 10000, Dirs: 20, Drafts: 100, Proposals: 100},
			{Packages: 10000, Revisions: 50000, Dirs: 1, Drafts: 500, Proposals: 500},
		}, porchShape{Packages: 1, Revisions: 5000}
	}
	return []porchShape{{Packages: 250, Revisions: 1000, Dirs: 1, Drafts: 25, Proposals: 25}}, porchShape{Packages: 1, Revisions: 500}
}

// indexedCopy returns a copy of the fixture of shape s without index
// files, for config c.
func indexedCopy(b *testing.B, s porchShape) string {
	dir := copyDir(b, porchFixture(b, s))
	dropIndexes(dir)
	return dir
}

// dropIndexes removes the index files of the repository at dir.
func dropIndexes(dir string) {
	for _, f := range []string{"cad-paths"} {
		os.RemoveAll(filepath.Join(dir, f))
	}
}

// BenchmarkIndexCost measures what each persistent index of the git
// backend buys: the operations it serves, each in a new Repository (a
// process's first operation), with every index on (all) and with one or
// all turned off (gitrepo.SetIndexOff: no-paths for cad-paths' path
// records, no-ws-records for its workspace records,
// none). Each configuration runs on its own copy of the fixture, which
// one untimed operation leaves with the files that configuration keeps.
//
//	go test -run '^$' -bench IndexCost -count 6 ./repository/gitrepo/ -args -scale
//
// list-cold lists every revision; list-first lists a repository no list
// has seen (the index files written then are part of the cost); get-cold
// reads one published revision's files (Get and Files); draft-cold
// creates and commits a draft of a package of thousands of revisions
// (its workspace checked free against every tag); approve publishes a
// proposal (the write that appends to cad-paths).
func BenchmarkIndexCost(b *testing.B) {
	ctx := context.Background()
	shapes, ds := indexShapes()
	ls := shapes[0]
	list := func(b *testing.B, dir string) {
		r := mustOpen(b, benchSpec(dir), nil)
		defer r.Close()
		revs, err := r.List(ctx, repository.ListOptions{})
		if err != nil || len(revs) < 1000 {
			b.Fatalf("list: %d revisions, %v", len(revs), err)
		}
	}
	// run runs fn with c's indexes off; fn times its operations with
	// the cpu func it is passed, which reports the CPU time they took
	// (cpu-ns/op: steadier than the wall time on a shared machine).
	run := func(b *testing.B, c indexConfig, fn func(b *testing.B, cpu func(func()))) {
		defer gitrepo.SetIndexOff(c.off)()
		var total time.Duration
		fn(b, func(op func()) {
			start := cpuTime()
			op()
			total += cpuTime() - start
		})
		b.ReportMetric(float64(total)/float64(b.N), "cpu-ns/op")
	}
	for _, ls := range shapes {
		for _, c := range []indexConfig{indexesOn, noPaths, indexesOff} {
			b.Run(fmt.Sprintf("list-cold/%s/%s", ls, c.name), func(b *testing.B) {
				run(b, c, func(b *testing.B, cpu func(func())) {
					dir := indexedCopy(b, ls)
					list(b, dir)
					for b.Loop() {
						cpu(func() { list(b, dir) })
					}
				})
			})
		}
		for _, c := range []indexConfig{indexesOn, indexesOff} {
			b.Run(fmt.Sprintf("list-first/%s/%s", ls, c.name), func(b *testing.B) {
				run(b, c, func(b *testing.B, cpu func(func())) {
					dir := indexedCopy(b, ls)
					for b.Loop() {
						b.StopTimer()
						dropIndexes(dir)
						b.StartTimer()
						cpu(func() { list(b, dir) })
					}
				})
			})
		}
	}
	// A revision in the middle, at its last number.
	key := revision.Key{Package: ls.pkg(ls.Packages / 2), Revision: ls.Revisions / ls.Packages}
	for _, c := range []indexConfig{indexesOn, noPaths, indexesOff} {
		b.Run(fmt.Sprintf("get-cold/%s/%s", ls, c.name), func(b *testing.B) {
			run(b, c, func(b *testing.B, cpu func(func())) {
				dir := indexedCopy(b, ls)
				list(b, dir) // cad-paths as a list leaves it
				get := func() {
					r := mustOpen(b, benchSpec(dir), nil)
					defer r.Close()
					pr, err := r.Get(ctx, key)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := pr.Files(ctx); err != nil {
						b.Fatal(err)
					}
				}
				get() // records what it read
				for b.Loop() {
					cpu(get)
				}
			})
		})
	}
	for _, c := range []indexConfig{indexesOn, noWSRecords, indexesOff} {
		b.Run(fmt.Sprintf("draft-cold/%s/%s", ds, c.name), func(b *testing.B) {
			run(b, c, func(b *testing.B, cpu func(func())) {
				dir := indexedCopy(b, ds)
				pkg := ds.pkg(0)
				n := 0
				create := func() {
					n++
					r := mustOpen(b, benchSpec(dir), nil)
					defer r.Close()
					k := revision.Key{Package: pkg, Workspace: fmt.Sprintf("bench%d", n)}
					d, err := r.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: kptPkg(pkg, map[string]string{"ws.yaml": "ws: x\n"})})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				create() // records what the check read
				for b.Loop() {
					cpu(create)
				}
			})
		})
	}
	for _, c := range []indexConfig{indexesOn, indexesOff} {
		b.Run(fmt.Sprintf("approve/%s/%s", ls, c.name), func(b *testing.B) {
			run(b, c, func(b *testing.B, cpu func(func())) {
				dir := indexedCopy(b, ls)
				list(b, dir)
				r := mustOpen(b, benchSpec(dir), &gitrepo.Options{})
				defer r.Close()
				pkg := ls.pkg(ls.Packages / 2)
				n := 0
				publish := func() {
					n++
					ws := fmt.Sprintf("bench%d", n)
					b.StopTimer()
					propose(b, r, pkg, ws)
					b.StartTimer()
					cpu(func() {
						if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: pkg, Workspace: ws}, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
							b.Fatalf("approve: %v", err)
						}
					})
				}
				publish()
				for b.Loop() {
					publish()
				}
			})
		})
	}
}
