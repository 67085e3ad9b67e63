package gitrepo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// porchHistory builds, with git fast-import, a bare repository as Porch
// leaves it after creating, editing and approving revisions: the creation
// task is only on each revision's first commit; its later commits
// ("Intermediate commit", "Rendering package") and its approval (a merge
// of main and the proposal) carry a kpt: annotation without a task; an
// approval of another package sits between them on main; a third revision
// is still a draft, edited after its creation; and a revision approved
// before annotations carried a workspace names only its revision number.
func porchHistory(t *testing.T) string {
	t.Helper()
	dir := newBare(t)
	var in strings.Builder
	mark := 0
	blob := func(data string) int {
		mark++
		fmt.Fprintf(&in, "blob\nmark :%d\ndata %d\n%s\n", mark, len(data), data)
		return mark
	}
	at := 1767225600
	commit := func(ref, msg string, from int, merge int, files ...string) int {
		mark++
		at += 60
		fmt.Fprintf(&in, "commit %s\nmark :%d\nauthor Porch User <user@example.com> %d +0000\ncommitter Package Orchestration Service <porch@kpt.dev> %d +0000\ndata %d\n%s\n", ref, mark, at, at, len(msg), msg)
		if from > 0 {
			fmt.Fprintf(&in, "from :%d\n", from)
		}
		if merge > 0 {
			fmt.Fprintf(&in, "merge :%d\n", merge)
		}
		for _, f := range files {
			in.WriteString(f + "\n")
		}
		in.WriteString("\n")
		return mark
	}
	ann := func(pkg, ws, rev, task string) string {
		s := fmt.Sprintf(`kpt:{"package":%q,"workspaceName":%q,"revision":%q`, pkg, ws, rev)
		if ws == "" {
			s = fmt.Sprintf(`kpt:{"package":%q,"revision":%q`, pkg, rev)
		}
		if task != "" {
			s += `,"task":` + task
		}
		return s + "}\n"
	}
	kpt := blob("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n")
	other := blob("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: other\n")
	cm := func(v string) string {
		return fmt.Sprintf("M 100644 :%d app/cm.yaml", blob("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: "+v+"\n"))
	}
	readme := fmt.Sprintf("M 100644 :%d README.md", blob("Created by porch\n"))
	main := commit("refs/heads/main", "Initial commit: Creating main branch\n", 0, 0, readme)

	// ws1: init, two edits, approved as v1.
	init := `{"type":"init","init":{"description":"the app"}}`
	d := commit("refs/heads/drafts/app/ws1", "Creating new empty revision\n\n"+ann("app", "ws1", "0", init), main, 0, fmt.Sprintf("M 100644 :%d app/Kptfile", kpt), cm("a"))
	d = commit("refs/heads/drafts/app/ws1", "Intermediate commit\n\n"+ann("app", "ws1", "0", ""), d, 0, cm("b"))
	d = commit("refs/heads/drafts/app/ws1", "Rendering package\n\n"+ann("app", "ws1", "0", ""), d, 0)
	// Another package approved on main meanwhile, its task on its commit.
	o := commit("refs/heads/drafts/other/o1", "Creating new empty revision\n\n"+ann("other", "o1", "0", `{"type":"init","init":{"description":"other"}}`), main, 0, fmt.Sprintf("M 100644 :%d other/Kptfile", other))
	main = commit("refs/heads/main", "Approving package revision other/1\n\n"+ann("other", "o1", "1", ""), main, o, fmt.Sprintf("M 100644 :%d other/Kptfile", other))
	fmt.Fprintf(&in, "reset refs/tags/other/v1\nfrom :%d\n\n", main)
	main = commit("refs/heads/main", "Approving package revision app/1\n\n"+ann("app", "ws1", "1", ""), main, d, fmt.Sprintf("M 100644 :%d app/Kptfile", kpt), cm("b"))
	fmt.Fprintf(&in, "reset refs/tags/app/v1\nfrom :%d\n\n", main)

	// ws2: copied from v1, edited, approved as v2.
	edit := `{"type":"edit","edit":{"sourceRef":{"name":"porch.app.ws1"}}}`
	d = commit("refs/heads/drafts/app/ws2", "Creating new revision by copying previous revision\n\n"+ann("app", "ws2", "0", edit), main, 0, cm("c"))
	d = commit("refs/heads/drafts/app/ws2", "Intermediate commit\n\n"+ann("app", "ws2", "0", ""), d, 0, cm("d"))
	main = commit("refs/heads/main", "Approving package revision app/2\n\n"+ann("app", "ws2", "2", ""), main, d, cm("d"))
	fmt.Fprintf(&in, "reset refs/tags/app/v2\nfrom :%d\n\n", main)

	// v3: approved by a Porch that wrote no workspace, only revisions.
	d = commit("refs/heads/drafts/app/v3", "Creating new revision by copying previous revision\n\n"+ann("app", "", "3", `{"type":"edit","edit":{"sourceRef":{"name":"porch.app.ws2"}}}`), main, 0, cm("e"))
	d = commit("refs/heads/drafts/app/v3", "Intermediate commit\n\n"+ann("app", "", "3", `{"type":"render"}`), d, 0, cm("f"))
	main = commit("refs/heads/main", "Approving package revision app/3\n\n"+ann("app", "", "3", ""), main, d, cm("f"))
	fmt.Fprintf(&in, "reset refs/tags/app/v3\nfrom :%d\n\n", main)

	// ws4: a clone still in draft, edited after its creation.
	clone := `{"type":"clone","clone":{"upstreamRef":{"type":"git","git":{"repo":"https://example.com/up.git","ref":"up/v1","directory":"up"}}}}`
	d = commit("refs/heads/drafts/app/ws4", "Creating new revision by cloning\n\n"+ann("app", "ws4", "0", clone), main, 0, cm("g"))
	commit("refs/heads/drafts/app/ws4", "Intermediate commit\n\n"+ann("app", "ws4", "0", ""), d, 0, cm("h"))
	in.WriteString("done\n")
	cmd := exec.Command("git", "fast-import", "--quiet", "--done")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fast-import: %v\n%s", err, out)
	}
	// Porch deletes a proposal's branch when it approves it.
	for _, b := range []string{"drafts/app/ws1", "drafts/app/ws2", "drafts/app/v3", "drafts/other/o1"} {
		git(t, dir, "update-ref", "-d", "refs/heads/"+b)
	}
	return dir
}

// A revision Porch created, edited and approved has the creation task of
// its first commit, found through its history, as Porch finds it; another
// package's approval in between does not lend it its task.
func TestCreationTaskThroughHistory(t *testing.T) {
	ctx := context.Background()
	dir := porchHistory(t)
	r := mustOpen(t, repository.Spec{Name: "porch", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: dir}}, nil)
	defer r.Close()
	revs, err := r.List(ctx, repository.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, pr := range revs {
		m := pr.Meta()
		c := "none"
		if m.Creation != nil {
			c = string(m.Creation.Op)
			switch {
			case m.Creation.Description != "":
				c += " " + m.Creation.Description
			case m.Creation.Source != nil:
				c += " " + m.Creation.Source.Workspace
			case m.Creation.Git != nil:
				c += " " + m.Creation.Git.Ref
			}
		}
		got[fmt.Sprintf("%s/%s/%d", m.Key.Package, m.Key.Workspace, m.Key.Revision)] = c
	}
	want := map[string]string{
		"app/ws1/1":     "init the app",
		"app/ws2/2":     "edit ws1",
		"app/v3/3":      "edit ws2",
		"app/ws4/0":     "clone up/v1",
		"app/main/-1":   "none",
		"other/o1/1":    "init other",
		"other/main/-1": "none",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("creation tasks\n got %v\nwant %v", got, want)
	}
	// Get finds the same, and cad's approval of Porch's draft writes the
	// task on the approval commit, where any reader finds it.
	key := revision.Key{Package: "app", Workspace: "ws4"}
	if _, err := r.UpdateLifecycle(ctx, key, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pub, err := r.UpdateLifecycle(ctx, key, revision.LifecyclePublished, repository.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := pub.Meta().Creation; c == nil || c.Op != revision.CreatedByClone || c.Git == nil || c.Git.Ref != "up/v1" {
		t.Fatalf("approved clone's creation %+v", c)
	}
	if msg := git(t, dir, "log", "-1", "--format=%B", "app/v4"); !strings.Contains(msg, `"task":{"type":"clone"`) {
		t.Fatalf("approval message without the task:\n%s", msg)
	}
	pr, err := r.Get(ctx, revision.Key{Package: "app", Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c := pr.Meta().Creation; c == nil || c.Description != "the app" {
		t.Fatalf("v1's creation %+v", c)
	}
	// A fresh reader (no cache) finds the same.
	r2 := mustOpen(t, repository.Spec{Name: "porch", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: dir}}, nil)
	defer r2.Close()
	pr, err = r2.Get(ctx, revision.Key{Package: "app", Revision: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c := pr.Meta().Creation; c == nil || c.Op != revision.CreatedByCopy || c.Source == nil || c.Source.Workspace != "ws1" {
		t.Fatalf("v2's creation %+v", c)
	}
}

// With RemoteReadMaxAge, reads of a remote repository within that time of
// the last fetch use the mirror without a request; writes still fetch
// first, and a read after the window sees another writer's change.
func TestRemoteReadMaxAge(t *testing.T) {
	ctx := context.Background()
	srv := gitServer(t, t.TempDir(), "", "")
	url := srv.InitBare(t, "r.git")
	spec := gitSpec(url)
	spec.Git.CreateBranch = true
	writer := mustOpen(t, spec, nil)
	defer writer.Close()
	reader := mustOpen(t, spec, &gitrepo.Options{RemoteReadMaxAge: 3 * time.Second})
	defer reader.Close()
	key := revision.Key{Package: "app", Workspace: "ws1"}
	d, err := writer.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: kptPkg("app", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	// Opening fetched just now: the draft is not seen yet, and ten reads
	// make no request.
	before := srv.Requests()
	for range 10 {
		revs, err := reader.List(ctx, repository.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(revs) != 0 {
			t.Fatalf("a read within the window saw %d revisions", len(revs))
		}
	}
	if n := srv.Requests() - before; n != 0 {
		t.Fatalf("%d requests for reads within the window", n)
	}
	time.Sleep(3100 * time.Millisecond)
	if _, err := reader.Get(ctx, key); err != nil {
		t.Fatalf("a read after the window: %v", err)
	}
	if n := srv.Requests() - before; n == 0 {
		t.Fatal("a read after the window made no request")
	}
	// A write always fetches first: it sees the draft and refuses a
	// second one in its workspace.
	if _, err := reader.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: kptPkg("app", nil)}); !errors.Is(err, repository.ErrAlreadyExists) {
		t.Fatalf("creating the same draft again: %v", err)
	}
}

// A read after the RemoteReadMaxAge window that asks the remote for its
// refs and finds the mirror holds them all (nothing to fetch) starts a new
// window: the reads after it ask the remote nothing.
func TestRemoteReadMaxAgeAfterCurrentCheck(t *testing.T) {
	ctx := context.Background()
	srv := gitServer(t, t.TempDir(), "", "")
	url := srv.InitBare(t, "r.git")
	spec := gitSpec(url)
	spec.Git.CreateBranch = true
	const window = time.Second
	reader := mustOpen(t, spec, &gitrepo.Options{RemoteReadMaxAge: window})
	defer reader.Close()
	time.Sleep(window + 100*time.Millisecond)
	before := srv.Requests()
	if _, err := reader.List(ctx, repository.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests() - before; n != 1 {
		t.Fatalf("%d requests for a read after the window of a current mirror, want 1 (the refs)", n)
	}
	before = srv.Requests()
	for range 10 {
		if _, err := reader.List(ctx, repository.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Requests() - before; n != 0 {
		t.Fatalf("%d requests for reads within the window the check started", n)
	}
}
