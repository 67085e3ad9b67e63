package gitrepo_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// The git CLI sees the metadata where the docs say it is, and a metadata
// blob another writer broke does not make the revision unreadable.
func TestMetadataWitness(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	spec := gitSpec(dir)
	spec.Git.Directory = "/blueprints/"
	r := mustOpen(t, spec, nil)
	defer r.Close()

	key := revision.Key{Package: "net/istio", Workspace: "ws1"}
	d, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: kptPkg("istio", nil)})
	if err != nil {
		t.Fatal(err)
	}
	md := revision.Metadata{Labels: map[string]string{"app": "istio"}, Annotations: map[string]string{"owner": "net-team"}}
	if _, err := d.Commit(ctx, revision.CommitOptions{Metadata: &md}); err != nil {
		t.Fatal(err)
	}
	const path = "refs/cad/metadata:blueprints/net/istio/ws1.json"
	if got, want := git(t, dir, "show", path), `{"labels":{"app":"istio"},"annotations":{"owner":"net-team"}}`; got != want {
		t.Fatalf("git show %s = %s, want %s", path, got, want)
	}
	if got := git(t, dir, "log", "-1", "--format=%s", "refs/cad/metadata"); got != "Update package revision metadata" {
		t.Fatalf("metadata commit message %q", got)
	}
	if _, err := r.UpdateLifecycle(ctx, key, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pub, err := r.UpdateLifecycle(ctx, key, revision.LifecyclePublished, repository.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Meta().Metadata.Equal(md) {
		t.Fatalf("published metadata %+v", pub.Meta().Metadata)
	}

	// Another writer breaks the blob: the revision still reads, without
	// metadata.
	broken := gitWithInput(t, dir, "not json", "hash-object", "-w", "--stdin")
	tree := gitWithInput(t, dir, "100644 blob "+broken+"\tws1.json\n", "mktree")
	for _, dirName := range []string{"istio", "net", "blueprints"} {
		tree = gitWithInput(t, dir, "040000 tree "+tree+"\t"+dirName+"\n", "mktree")
	}
	commit := git(t, dir, "commit-tree", tree, "-p", "refs/cad/metadata", "-m", "broken")
	git(t, dir, "update-ref", "refs/cad/metadata", commit)
	got, err := r.Get(ctx, revision.Key{Package: "net/istio", Revision: 1})
	if err != nil {
		t.Fatalf("Get with a broken metadata blob: %v", err)
	}
	if !got.Meta().Metadata.IsZero() {
		t.Fatalf("broken metadata read as %+v", got.Meta().Metadata)
	}
	// Deleting the revision removes its entry, broken or not, once it
	// has metadata again.
	if _, err := r.SetMetadata(ctx, got.Meta().Key, md, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UpdateLifecycle(ctx, got.Meta().Key, revision.LifecycleDeletionProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, got.Meta().Key, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := git(t, dir, "ls-tree", "-r", "--name-only", "refs/cad/metadata"); out != "" {
		t.Fatalf("metadata tree after delete: %q", out)
	}
}

// gitWithInput runs git in dir with stdin and returns its trimmed output.
func gitWithInput(t testing.TB, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Info reads only the Kptfile and agrees with InfoFromFiles; what it
// returns is the caller's own.
func TestInfoWithoutFiles(t *testing.T) {
	ctx := context.Background()
	r := mustOpen(t, gitSpec(newBare(t)), nil)
	defer r.Close()
	kf := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\nupstream:\n  type: git\n  git:\n    repo: https://example.com/r.git\n    directory: app\n    ref: app/v1\nupstreamLock:\n  type: git\n  git:\n    repo: https://example.com/r.git\n    directory: app\n    ref: app/v1\n    commit: abc\ninfo:\n  readinessGates:\n    - conditionType: Ready\nstatus:\n  conditions:\n    - type: Ready\n      status: \"True\"\n"
	key := revision.Key{Package: "app", Workspace: "ws"}
	d, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: revision.MustFiles(map[string]string{"Kptfile": kf, "big.yaml": "a: 1\n"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the second read comes from the cache
		pr, err := r.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		info, err := pr.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		files, err := pr.Files(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, err := revision.InfoFromFiles(files)
		if err != nil {
			t.Fatal(err)
		}
		if info.UpstreamLock == nil || info.UpstreamLock.Git.Commit != "abc" || info.Upstream.Git.Ref != "app/v1" ||
			len(info.ReadinessGates) != 1 || len(info.Conditions) != 1 ||
			*info.UpstreamLock.Git != *want.UpstreamLock.Git || info.ReadinessGates[0] != want.ReadinessGates[0] {
			t.Fatalf("Info %+v, want %+v", info, want)
		}
		info.UpstreamLock.Git.Commit = "changed by the caller"
		info.Conditions[0].Status = "False"
	}
}
