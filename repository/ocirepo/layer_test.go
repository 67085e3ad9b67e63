package ocirepo

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// craft returns a gzip tar of hdrs, each with content of its Size (zeros
// unless body is set).
func craft(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := e.hdr
		if e.body != "" {
			h.Size = int64(len(e.body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			data := []byte(e.body)
			if e.body == "" {
				data = make([]byte, h.Size)
			}
			if _, err := tw.Write(data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type entry struct {
	hdr  tar.Header
	body string
}

func reg(name, body string) entry {
	return entry{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg}, body: body}
}

func TestDecodeLayerRefuses(t *testing.T) {
	lim := limits{maxExpanded: 1 << 20, maxFile: 1 << 20, maxFiles: 100}
	many := make([]entry, 101)
	for i := range many {
		many[i] = reg("f"+strings.Repeat("x", i%5)+string(rune('a'+i%26))+string(rune('a'+i/26)), "x")
	}
	cases := map[string][]byte{
		"absolute":         craft(t, reg("/etc/passwd", "x")),
		"dotdot":           craft(t, reg("a/../../x", "x")),
		"leading dotdot":   craft(t, reg("../x", "x")),
		"symlink":          craft(t, reg("Kptfile", "x"), entry{hdr: tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}),
		"hardlink":         craft(t, reg("Kptfile", "x"), entry{hdr: tar.Header{Name: "hard", Typeflag: tar.TypeLink, Linkname: "Kptfile"}}),
		"char device":      craft(t, entry{hdr: tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}),
		"block device":     craft(t, entry{hdr: tar.Header{Name: "sda", Typeflag: tar.TypeBlock}}),
		"fifo":             craft(t, entry{hdr: tar.Header{Name: "pipe", Typeflag: tar.TypeFifo}}),
		"git dir":          craft(t, reg(".git/config", "x")),
		"backslash":        craft(t, reg("a\\b", "x")),
		"control char":     craft(t, reg("a\nb", "x")),
		"duplicate":        craft(t, reg("a", "1"), reg("a", "2")),
		"file and dir":     craft(t, reg("a", "1"), reg("a/b", "2")),
		"expands past cap": craft(t, entry{hdr: tar.Header{Name: "big", Typeflag: tar.TypeReg, Size: 2 << 20}}),
		"too many files":   craft(t, many...),
		"not gzip":         []byte("plain text"),
		"not tar":          gz(t, []byte("this is not a tar archive, just some bytes padded out to be long enough to matter......................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................")),
	}
	for name, layer := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeLayer(bytes.NewReader(layer), "sha256:test", lim)
			if !errors.Is(err, repository.ErrInvalidInput) {
				t.Fatalf("decodeLayer = %v, want ErrInvalidInput", err)
			}
			var le *LayerError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is not a *LayerError", err)
			}
		})
	}
}

func gz(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

func TestDecodeLayerAccepts(t *testing.T) {
	layer := craft(t, entry{hdr: tar.Header{Name: "dir/", Typeflag: tar.TypeDir, Mode: 0o755}}, reg("dir/a.yaml", "a: 1\n"), reg("Kptfile", "k"))
	f, err := decodeLayer(bytes.NewReader(layer), "sha256:test", limits{maxExpanded: 100, maxFile: 100, maxFiles: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Paths(); len(got) != 2 || got[0] != "Kptfile" || got[1] != "dir/a.yaml" {
		t.Fatalf("paths %v", got)
	}
	// What encodeLayer writes, decodeLayer reads back.
	want := revision.MustFiles(map[string]string{"Kptfile": "k", "x/y/z.yaml": "z: 1\n", "empty": ""})
	enc, err := encodeLayer(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeLayer(bytes.NewReader(enc.layer), "d", limits{maxExpanded: 1 << 20, maxFile: 1 << 20, maxFiles: 10})
	if err != nil || !got.Equal(want) {
		t.Fatalf("round trip: %v %v", got.Paths(), err)
	}
	again, _ := encodeLayer(want)
	if again.layerDesc.Digest != enc.layerDesc.Digest {
		t.Fatal("encodeLayer is not deterministic")
	}
}

// TestHostileLayerInRegistry writes a well-formed manifest whose layer is
// hostile: listing and Get work (they read manifests only), reading the
// files fails with a *LayerError, and so does OpenDraft.
func TestHostileLayerInRegistry(t *testing.T) {
	ctx := context.Background()
	r := mustOpen(t, ociSpec(inProcessRegistry(t)+"/pk"), &Options{MaxExpandedSize: 1 << 20})
	repo, _ := r.repoOf("evil")
	layers := map[string][]byte{
		"symlink": craft(t, entry{hdr: tar.Header{Name: "Kptfile", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}),
		"dotdot":  craft(t, reg("../../etc/cron.d/x", "boom")),
		"bomb":    craft(t, entry{hdr: tar.Header{Name: "zeros", Typeflag: tar.TypeReg, Size: 8 << 20}}),
	}
	for ws, layer := range layers {
		l := descriptor(layer, types.OCILayer)
		if err := r.ensureBlob(ctx, repo, layer, types.OCILayer); err != nil {
			t.Fatal(err)
		}
		if err := r.ensureBlob(ctx, repo, emptyConfig, types.OCIConfigJSON); err != nil {
			t.Fatal(err)
		}
		spec := manifestSpec{tag: workspaceTag(ws), pkg: "evil", workspace: ws, lifecycle: revision.LifecycleDraft, config: descriptor(emptyConfig, types.OCIConfigJSON), layer: l}
		raw, err := spec.build()
		if err != nil {
			t.Fatal(err)
		}
		if err := r.pusher().Put(ctx, repo.Tag(workspaceTag(ws)), rawManifest(raw)); err != nil {
			t.Fatal(err)
		}
		k := revision.Key{Package: "evil", Workspace: ws}
		pr, err := r.Get(ctx, k)
		if err != nil {
			t.Fatalf("Get of a hostile revision's metadata: %v", err)
		}
		_, err = pr.Files(ctx)
		var le *LayerError
		if !errors.Is(err, repository.ErrInvalidInput) || !errors.As(err, &le) {
			t.Fatalf("%s: Files = %v, want a *LayerError matching ErrInvalidInput", ws, err)
		}
		_, err = r.OpenDraft(ctx, k)
		if !errors.Is(err, repository.ErrInvalidInput) {
			t.Fatalf("%s: OpenDraft = %v, want ErrInvalidInput", ws, err)
		}
	}
	revs, err := r.List(ctx, repository.ListOptions{})
	if err != nil || len(revs) != len(layers) {
		t.Fatalf("List = %d revisions, %v", len(revs), err)
	}
}

// TestLayerSizeCap refuses a layer whose compressed size is over the cap
// before downloading it.
func TestLayerSizeCap(t *testing.T) {
	ctx := context.Background()
	host := inProcessRegistry(t)
	w := mustOpen(t, ociSpec(host+"/pk"), nil)
	big := map[string]string{"Kptfile": "k"}
	var sb strings.Builder
	for i := range 20000 {
		sb.WriteString(strings.Repeat(string(rune('a'+i%26)), 1+i%7))
	}
	big["data.txt"] = sb.String()
	d, err := w.CreateDraft(ctx, revision.Key{Package: "p", Workspace: "ws"}, repository.CreateDraftOptions{Files: revision.MustFiles(big)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, ociSpec(host+"/pk"), &Options{MaxLayerSize: 100})
	pr, err := r.Get(ctx, revision.Key{Package: "p", Workspace: "ws"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pr.Files(ctx); !errors.Is(err, repository.ErrInvalidInput) {
		t.Fatalf("Files of a layer over MaxLayerSize = %v, want ErrInvalidInput", err)
	}
}
