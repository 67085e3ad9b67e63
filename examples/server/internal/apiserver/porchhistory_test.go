package apiserver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

// A revision Porch created by cloning, edited and approved has its
// creation task in spec.tasks, found through its history (Porch writes it
// only on the first commit), which is what porchctl rpkg upgrade reads to
// find the revision's upstream.
func TestPorchApprovedRevisionKeepsItsTask(t *testing.T) {
	ts := startServer(t, "", nil)
	work := t.TempDir()
	g := func(args ...string) string {
		return runGit(t, work, append([]string{"-c", "user.name=Porch User", "-c", "user.email=user@example.com"}, args...)...)
	}
	g("init", "--quiet", "-b", "main")
	write := func(p, data string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(work, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		g("add", p)
	}
	write("README.md", "Created by porch\n")
	g("commit", "--quiet", "-m", "Initial commit: Creating main branch")
	g("checkout", "--quiet", "-b", "drafts/app/ws1")
	write("app/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n")
	g("commit", "--quiet", "-m", "Creating new revision by cloning\n\n"+
		`kpt:{"package":"app","workspaceName":"ws1","revision":"0","task":{"type":"clone","clone":{"upstreamRef":{"type":"git","git":{"repo":"https://example.com/up.git","ref":"up/v1","directory":"up","secretRef":{"name":""}}}}}}`)
	write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n")
	g("commit", "--quiet", "-m", "Intermediate commit\n\n\n"+`kpt:{"package":"app","workspaceName":"ws1","revision":"0"}`)
	g("checkout", "--quiet", "main")
	g("merge", "--quiet", "--no-ff", "drafts/app/ws1", "-m", "Approving package revision app/1\n\n"+`kpt:{"package":"app","workspaceName":"ws1","revision":"1"}`)
	g("tag", "app/v1")
	g("branch", "-D", "drafts/app/ws1")
	bare := filepath.Join(t.TempDir(), "porch.git")
	runGit(t, work, "clone", "--quiet", "--bare", work, bare)

	repo := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
		"metadata": map[string]any{"name": "porch"},
		"spec":     map[string]any{"type": "git", "git": map[string]any{"repo": bare, "branch": "main"}}}
	if code := ts.doJSON("POST", repoPath, repo, nil); code != 201 {
		t.Fatalf("create repository: %d", code)
	}
	var pr porchapi.PackageRevision
	if code := ts.doJSON("GET", prPath+"/porch.app.ws1", nil, &pr); code != 200 {
		t.Fatalf("get: %d %+v", code, pr)
	}
	if pr.Spec.Revision != 1 || len(pr.Spec.Tasks) != 1 || pr.Spec.Tasks[0].Clone == nil || pr.Spec.Tasks[0].Clone.Upstream.Git == nil ||
		pr.Spec.Tasks[0].Clone.Upstream.Git.Ref != "up/v1" {
		t.Fatalf("revision %d, tasks %+v", pr.Spec.Revision, pr.Spec.Tasks)
	}
	if pr.Status.PublishedBy != "user@example.com" {
		t.Fatalf("publishedBy %q", pr.Status.PublishedBy)
	}
}
