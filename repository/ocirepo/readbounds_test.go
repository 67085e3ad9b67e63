package ocirepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/configasdata/cad/internal/peakmem"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// envBoundsRegistry names, for the child processes of peakmem.Measure,
// the registry (host/prefix) the parent filled: it serves from the
// parent, so that what the child measures is only its own reading.
const envBoundsRegistry = "CAD_TEST_OCI_BOUNDS_REGISTRY"

// peakMarker starts the line printPeak writes.
const peakMarker = "ocirepo-test: peak rss "

// printPeak writes the process's own peak resident bytes (VmHWM), for
// ownGrowth: the peak peakmem.Result reports is the rusage of the child,
// which on linux also counts the parent's resident memory at the fork
// (the child shares the parent's memory until it execs), and these tests'
// parents hold the registry's manifests.
func printPeak() {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			fmt.Printf("%s%d\n", peakMarker, kb<<10)
		}
	}
}

// ownGrowth returns the child's growth from printPeak's line, or
// res.Growth() when there is none.
func ownGrowth(res peakmem.Result) int64 {
	for _, l := range strings.Split(res.Output, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), peakMarker); ok {
			if n, err := strconv.ParseInt(rest, 10, 64); err == nil {
				return n - res.StartRSS
			}
		}
	}
	return res.Growth()
}

// boundsFixture starts a registry with the draft p@good (a Kptfile and a
// ConfigMap) and, for each of sizes, a draft of package p whose manifest
// is padded to that many bytes by its message annotation, at workspaces
// big1, big2, ...; it returns the registry's host/prefix.
func boundsFixture(t *testing.T, sizes ...int) string {
	t.Helper()
	ctx := context.Background()
	reg := inProcessRegistry(t) + "/" + uniquePrefix()
	w := mustOpen(t, ociSpec(reg), nil)
	defer w.Close()
	files := revision.MustFiles(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n", "cm.yaml": "kind: ConfigMap\n"})
	d, err := w.CreateDraft(ctx, revision.Key{Package: "p", Workspace: "good"}, repository.CreateDraftOptions{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	repo, _ := w.repoOf("p")
	enc, err := encodeLayer(files)
	if err != nil {
		t.Fatal(err)
	}
	for i, size := range sizes {
		ws := "big" + string(rune('1'+i))
		spec := manifestSpec{tag: workspaceTag(ws), pkg: "p", workspace: ws, lifecycle: revision.LifecycleDraft,
			config: enc.configDesc, layer: enc.layerDesc, message: "@PAD@"}
		raw, err := spec.build()
		if err != nil {
			t.Fatal(err)
		}
		// Padded by copying, not by encoding (which the race detector
		// makes slow at 50 MB).
		raw = bytes.Replace(raw, []byte("@PAD@"), bytes.Repeat([]byte("x"), size), 1)
		if err := w.pusher().Put(ctx, repo.Tag(workspaceTag(ws)), rawManifest(raw)); err != nil {
			t.Fatal(err)
		}
		raw = nil
		runtime.GC()
	}
	return reg
}

// listAndRead lists reg, reads p@good, and checks that the padded drafts
// are left out of the list, named by its *repository.DamageError, and
// that reading one fails with ErrLimit.
func listAndRead(t *testing.T, reg string, padded int) {
	ctx := context.Background()
	r := mustOpen(t, ociSpec(reg), nil)
	defer r.Close()
	revs, err := r.List(ctx, repository.ListOptions{})
	d := repository.Damage(err)
	if !errors.Is(err, repository.ErrDamaged) || d == nil || len(d.Damaged) != padded {
		t.Fatalf("List: %v, want the damage of %d tags", err, padded)
	}
	for i, e := range d.Damaged {
		if tag := "ws.big" + string(rune('1'+i)); !errors.Is(e, revision.ErrLimit) || !strings.Contains(e.Error(), tag) {
			t.Fatalf("damage %d: %v, want ErrLimit naming %s", i, e, tag)
		}
	}
	if len(revs) != 1 || revs[0].Meta().Key.Workspace != "good" {
		var keys []string
		for _, pr := range revs {
			keys = append(keys, pr.Meta().Key.String())
		}
		t.Fatalf("List = %v, want p@good only", keys)
	}
	f, err := revs[0].Files(ctx)
	if err != nil || !f.Has("cm.yaml") {
		t.Fatalf("Files of p@good: %v", err)
	}
	for i := range padded {
		k := revision.Key{Package: "p", Workspace: "big" + string(rune('1'+i))}
		_, err := r.Get(ctx, k)
		var le *revision.LimitError
		if !errors.Is(err, revision.ErrLimit) || !errors.As(err, &le) || le.Limit != "ocirepo.Options.MaxManifestBytes" {
			t.Fatalf("Get(%s) = %v, want a *revision.LimitError of MaxManifestBytes", k, err)
		}
		if !strings.Contains(err.Error(), k.Workspace) {
			t.Errorf("Get(%s): %q does not name the tag", k, err)
		}
	}
}

// A manifest over MaxManifestBytes beside a good revision: the registry
// lists (without it) and the good revision reads, and reading it fails
// with ErrLimit from the HEAD's size, never fetching it.
func TestManifestOverBound(t *testing.T) {
	if !peakmem.InChild() {
		t.Setenv(envBoundsRegistry, boundsFixture(t, 20<<20))
	}
	reg := os.Getenv(envBoundsRegistry)
	res := peakmem.Measure(t, 256<<20, func(t *testing.T) { listAndRead(t, reg, 1); printPeak() })
	growth := ownGrowth(res)
	t.Logf("peak RSS growth %d MiB", growth>>20)
	if res.Killed || growth > 48<<20 {
		t.Errorf("listing grew the process by %d MiB (killed: %v), want under 48 MiB", growth>>20, res.Killed)
	}
}

// Five manifests of 50 MB do not grow a lister's memory by their size:
// each is refused from its HEAD.
func TestLargeManifestsDoNotGrowALister(t *testing.T) {
	if testing.Short() {
		t.Skip("pushes 250 MB of manifests")
	}
	if !peakmem.InChild() {
		const mb50 = 50 << 20
		t.Setenv(envBoundsRegistry, boundsFixture(t, mb50, mb50, mb50, mb50, mb50))
	}
	reg := os.Getenv(envBoundsRegistry)
	res := peakmem.Measure(t, 512<<20, func(t *testing.T) { listAndRead(t, reg, 5); printPeak() })
	growth := ownGrowth(res)
	t.Logf("peak RSS growth %d MiB", growth>>20)
	if res.Killed || growth > 64<<20 {
		t.Errorf("listing grew the process by %d MiB (killed: %v), want under 64 MiB", growth>>20, res.Killed)
	}
}

// The cache of manifests is bounded by their bytes: manifests of 1 MiB
// each, over a cache of 4 MiB, leave at most 4 MiB of them cached.
func TestManifestCacheBytes(t *testing.T) {
	reg := boundsFixture(t, 1<<20, 1<<20, 1<<20, 1<<20, 1<<20, 1<<20, 1<<20, 1<<20)
	r := mustOpen(t, ociSpec(reg), &Options{ManifestCacheBytes: 4 << 20})
	defer r.Close()
	revs, err := r.List(context.Background(), repository.ListOptions{})
	if err != nil || len(revs) != 9 {
		t.Fatalf("List = %d revisions, %v; want 9", len(revs), err)
	}
	if c := r.manifests.Cost(); c > 4<<20 || r.manifests.Len() == 0 {
		t.Errorf("cache holds %d manifests costing %d bytes, want some, under 4 MiB", r.manifests.Len(), c)
	}
}

// A layer whose blob is not the size its descriptor declares is refused
// after reading at most the declared size plus one byte; a file over
// MaxFileBytes is refused from its tar header with an error matching
// ErrLimit.
func TestLayerSizeMustMatch(t *testing.T) {
	ctx := context.Background()
	r := mustOpen(t, ociSpec(inProcessRegistry(t)+"/pk"), &Options{MaxFileBytes: 1 << 10})
	repo, _ := r.repoOf("p")
	files := revision.MustFiles(map[string]string{"Kptfile": "k", "big.txt": strings.Repeat("y", 2<<10)})
	enc, err := encodeLayer(files)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ensureBlob(ctx, repo, enc.layer, types.OCILayer); err != nil {
		t.Fatal(err)
	}
	if err := r.ensureBlob(ctx, repo, enc.config, types.OCIConfigJSON); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ws    string
		delta int64
		want  string
		limit bool
	}{
		{"smaller", -10, "holds more than", false},
		{"larger", 10, "holds less than", false},
		{"exact", 0, "over the cap of 1024 bytes per file", true},
	} {
		l := enc.layerDesc
		l.Size += tc.delta
		spec := manifestSpec{tag: workspaceTag(tc.ws), pkg: "p", workspace: tc.ws, lifecycle: revision.LifecycleDraft, config: enc.configDesc, layer: l}
		raw, err := spec.build()
		if err != nil {
			t.Fatal(err)
		}
		if err := r.pusher().Put(ctx, repo.Tag(workspaceTag(tc.ws)), rawManifest(raw)); err != nil {
			t.Fatal(err)
		}
		pr, err := r.Get(ctx, revision.Key{Package: "p", Workspace: tc.ws})
		if err != nil {
			t.Fatal(err)
		}
		_, err = pr.Files(ctx)
		var le *LayerError
		if !errors.As(err, &le) || !errors.Is(err, repository.ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: Files = %v, want a *LayerError saying %q", tc.ws, err, tc.want)
		}
		if errors.Is(err, revision.ErrLimit) != tc.limit {
			t.Errorf("%s: errors.Is(%v, ErrLimit) = %v, want %v", tc.ws, err, !tc.limit, tc.limit)
		}
	}
}

// decodeLayer refuses, from the tar headers, a file over maxFile and
// files over maxExpanded in all, with a *LayerError matching ErrLimit
// that names the bound and the entry.
func TestDecodeLayerBounds(t *testing.T) {
	lim := limits{maxExpanded: 100, maxFile: 60, maxFiles: 3}
	for name, tc := range map[string]struct {
		layer []byte
		limit string
		entry string
	}{
		"file":     {craft(t, reg("a", strings.Repeat("x", 61))), "ocirepo.Options.MaxFileBytes", "a"},
		"package":  {craft(t, reg("a", strings.Repeat("x", 50)), reg("b", strings.Repeat("x", 51))), "ocirepo.Options.MaxExpandedSize", "b"},
		"entries":  {craft(t, reg("a", "1"), reg("b", "2"), reg("c", "3"), reg("d", "4")), "ocirepo.Options.MaxFiles", ""},
		"in range": {craft(t, reg("a", strings.Repeat("x", 50)), reg("b", strings.Repeat("x", 50))), "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodeLayer(bytes.NewReader(tc.layer), "sha256:test", lim)
			if tc.limit == "" {
				if err != nil {
					t.Fatalf("decodeLayer = %v", err)
				}
				return
			}
			var le *LayerError
			if !errors.As(err, &le) || le.Limit != tc.limit || le.Entry != tc.entry || !errors.Is(err, revision.ErrLimit) || !errors.Is(err, repository.ErrInvalidInput) {
				t.Fatalf("decodeLayer = %v, want a *LayerError of %s on %q matching ErrLimit", err, tc.limit, tc.entry)
			}
		})
	}
}
