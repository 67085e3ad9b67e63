package gitrepo_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// The package trees a list leaves to the first reads are found the same
// by many goroutines reading the listed revisions at once, in different
// orders, as by lists that look every tree up, on both layouts; and the
// next process finds them in cad-paths.
func TestDeferredTreesConcurrentReads(t *testing.T) {
	ctx := context.Background()
	for _, s := range []porchShape{{Packages: 30, Revisions: 300, Dirs: 1}, {Packages: 30, Revisions: 300, Dirs: 3}} {
		t.Run(s.String(), func(t *testing.T) {
			dir := copyDir(t, porchFixture(t, s))
			digests := func(t *testing.T, readers int) map[revision.Key]string {
				os.Remove(filepath.Join(dir, "cad-paths"))
				r := mustOpen(t, benchSpec(dir), nil)
				defer r.Close()
				revs, err := r.List(ctx, repository.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				revs = slices.DeleteFunc(revs, func(pr revision.PackageRevision) bool { return pr.Meta().Key.Revision <= 0 })
				if len(revs) != s.Revisions {
					t.Fatalf("%d published revisions listed, want %d", len(revs), s.Revisions)
				}
				var mu sync.Mutex
				out := map[revision.Key]string{}
				var wg sync.WaitGroup
				for g := range readers {
					wg.Go(func() {
						for k := range revs {
							// Each reader its own order: from its own start, every
							// g+1-th first.
							pr := revs[(k*(g+1)+g*37)%len(revs)]
							if g%2 == 1 {
								pr = revs[len(revs)-1-k]
							}
							files, err := pr.Files(ctx)
							if err != nil {
								t.Errorf("files of %s: %v", pr.Meta().Key, err)
								return
							}
							d := digestFiles(files)
							mu.Lock()
							if old, ok := out[pr.Meta().Key]; ok && old != d {
								t.Errorf("%s read two ways", pr.Meta().Key)
							}
							out[pr.Meta().Key] = d
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				return out
			}
			got := digests(t, 8)
			// What the reads found is in cad-paths for the next process.
			sorted, _ := gitrepo.PathsCount(dir)
			if n := int64(sorted) + gitrepo.PathsTail(dir)/gitrepo.PathsRecordSize; n < int64(s.Revisions) {
				t.Fatalf("%d records in cad-paths after reading %d revisions", n, s.Revisions)
			}
			restore := gitrepo.SetDeferTrees(false)
			want := digests(t, 1)
			restore()
			if len(got) != len(want) {
				t.Fatalf("%d revisions read, want %d", len(got), len(want))
			}
			for k, d := range want {
				if got[k] != d {
					t.Fatalf("%s: the files read differ", k)
				}
			}
		})
	}
}
