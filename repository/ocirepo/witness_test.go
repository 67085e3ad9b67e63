package ocirepo

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// witness reads a registry with plain HTTP calls to the distribution API.
type witness struct {
	t    *testing.T
	base string // http://host/v2/
}

func (w witness) get(path, accept string) []byte {
	w.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, w.base+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		w.t.Fatalf("GET %s: %s %s", path, resp.Status, b)
	}
	return b
}

func (w witness) tags(repo string) []string {
	w.t.Helper()
	var out struct{ Tags []string }
	if err := json.Unmarshal(w.get(repo+"/tags/list", ""), &out); err != nil {
		w.t.Fatal(err)
	}
	slices.Sort(out.Tags)
	return out.Tags
}

type witnessManifest struct {
	MediaType   string            `json:"mediaType"`
	Annotations map[string]string `json:"annotations"`
	Layers      []struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
	} `json:"layers"`
}

func (w witness) manifest(repo, ref string) witnessManifest {
	w.t.Helper()
	var m witnessManifest
	if err := json.Unmarshal(w.get(repo+"/manifests/"+ref, "application/vnd.oci.image.manifest.v1+json"), &m); err != nil {
		w.t.Fatal(err)
	}
	return m
}

// files returns the names and contents in a layer blob.
func (w witness) files(repo, digest string) map[string]string {
	w.t.Helper()
	zr, err := gzip.NewReader(strings.NewReader(string(w.get(repo+"/blobs/"+digest, ""))))
	if err != nil {
		w.t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			w.t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = string(b)
	}
}

func TestWitnessInProcess(t *testing.T)    { testWitness(t, inProcessRegistry(t)) }
func TestWitnessDistribution(t *testing.T) { testWitness(t, startDistribution(t).host) }

func testWitness(t *testing.T, host string) {
	ctx := context.Background()
	prefix := uniquePrefix()
	r := mustOpen(t, ociSpec(host+"/"+prefix), nil)
	w := witness{t: t, base: "http://" + host + "/v2/"}
	repo := prefix + "/net/istio"
	files := revision.MustFiles(map[string]string{
		"Kptfile":  "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: istio\nupstreamLock:\n  type: git\n  git:\n    repo: https://example.com/r\n    directory: istio\n    ref: v1\n    commit: abc\n",
		"a/b.yaml": "x: 1\n",
	})
	d, err := r.CreateDraft(ctx, revision.Key{Package: "net/istio", Workspace: "ws1"}, repository.CreateDraftOptions{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{Message: "first"}); err != nil {
		t.Fatal(err)
	}
	k := revision.Key{Package: "net/istio", Workspace: "ws1"}
	if _, err := r.UpdateLifecycle(ctx, k, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := w.manifest(repo, "ws.ws1").Annotations[AnnotationLifecycle]; got != "Proposed" {
		t.Fatalf("ws.ws1 lifecycle annotation %q, want Proposed", got)
	}
	pub, err := r.UpdateLifecycle(ctx, k, revision.LifecyclePublished, repository.UpdateOptions{AuthorEmail: "me@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.tags(repo); !slices.Equal(got, []string{"v1", "ws.ws1"}) {
		t.Fatalf("tags after approval %v, want [v1 ws.ws1] (no lock left behind)", got)
	}
	m := w.manifest(repo, "v1")
	want := map[string]string{
		AnnotationPackage: "net/istio", AnnotationWorkspace: "ws1", AnnotationRevision: "1",
		AnnotationLifecycle: "Published", AnnotationTag: "v1", AnnotationPublishedBy: "me@example.com",
	}
	for k, v := range want {
		if m.Annotations[k] != v {
			t.Errorf("v1 annotation %s = %q, want %q", k, m.Annotations[k], v)
		}
	}
	if !strings.Contains(m.Annotations[AnnotationUpstreamLock], `"commit":"abc"`) {
		t.Errorf("upstream lock annotation %q", m.Annotations[AnnotationUpstreamLock])
	}
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || len(m.Layers) != 1 || m.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Fatalf("v1 manifest %+v, want one OCI gzip layer", m)
	}
	if got := w.files(repo, m.Layers[0].Digest); !maps(got, files.Strings()) {
		t.Fatalf("layer holds %v", got)
	}
	if pub.Meta().Version == "" || !strings.HasPrefix(pub.Meta().Version, "sha256:") {
		t.Fatalf("Version %q is not the manifest digest", pub.Meta().Version)
	}
	// Propose deletion: a marker, published content untouched.
	if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "net/istio", Revision: 1}, revision.LifecycleDeletionProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := w.tags(repo); !slices.Equal(got, []string{"v1", "v1.deletion-proposed", "ws.ws1"}) {
		t.Fatalf("tags after proposing deletion %v", got)
	}
	mk := w.manifest(repo, "v1.deletion-proposed")
	if mk.Annotations[AnnotationLifecycle] != "DeletionProposed" || mk.Layers[0].Digest != m.Layers[0].Digest {
		t.Fatalf("marker %+v", mk)
	}
	if again := w.manifest(repo, "v1"); again.Annotations[AnnotationLifecycle] != "Published" {
		t.Fatal("proposing deletion rewrote v1")
	}
	if err := r.Delete(ctx, revision.Key{Package: "net/istio", Revision: 1}, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := w.tags(repo); len(got) != 0 {
		t.Fatalf("tags after delete %v, want none", got)
	}
	// Listing pages through the tags list with Link headers.
	small := mustOpen(t, ociSpec(host+"/"+prefix), &Options{RemoteOptions: []remote.Option{remote.WithPageSize(2)}})
	for i := range 5 {
		d, err := r.CreateDraft(ctx, revision.Key{Package: "paged", Workspace: fmt.Sprintf("ws%d", i)}, repository.CreateDraftOptions{Files: files})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	revs, err := small.List(ctx, repository.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != 5 {
		t.Fatalf("paged List found %d revisions, want 5", len(revs))
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
