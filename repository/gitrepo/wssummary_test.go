package gitrepo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// A package's workspace summary gives the same answers as a pass over
// every tag, on both layouts: CreateDraft (taken or free) and Get by
// workspace (which revision), each in a new Repository, compared with
// the answers with no summary at every step: the first check (which
// writes it), with it, with it damaged in any way, with another
// package's, with one of an older packed-refs, after the git CLI deleted,
// moved and added tags, after raw writes and removals of loose tags,
// after packed-refs was rewritten in place (same inode, same size) and
// after git pack-refs.
func TestWorkspaceSummarySameAnswers(t *testing.T) {
	defer gitrepo.SetWorkspaceSummaryMin(1)()
	for _, s := range []porchShape{{Packages: 2, Revisions: 24, Dirs: 1}, {Packages: 2, Revisions: 24, Dirs: 2}} {
		// Summaries written again after every change of the loose tags,
		// and after 8 (by default).
		for _, after := range []int{1, 8} {
			t.Run(fmt.Sprintf("%s/rewrite-after-%d", s, after), func(t *testing.T) {
				defer gitrepo.SetWorkspaceSummaryRewriteAfter(after)()
				testWorkspaceSummary(t, s)
			})
		}
	}
}

func testWorkspaceSummary(t *testing.T, s porchShape) {
	ctx := context.Background()
	dir := copyDir(t, porchFixture(t, s))
	pkg := s.pkg(0) // v1..v12, workspaces ws1..ws12
	sumPath := gitrepo.WorkspaceSummaryPath(dir, pkg)
	sums := filepath.Dir(sumPath)
	wss := []string{"ws1", "ws2", "ws3", "ws4", "ws5", "ws7", "ws9", "ws12", "ws13", "v3", "v13", "free", "new-a", "new-b", "new-c", "new-d"}
	// answers returns, for every workspace of wss, what CreateDraft and
	// Get say, and how many tags the lookups looked at.
	answers := func(t *testing.T) (map[string]string, int64) {
		t.Helper()
		var read int64
		out := map[string]string{}
		for _, ws := range wss {
			key := revision.Key{Package: pkg, Workspace: ws}
			r := mustOpen(t, benchSpec(dir), nil)
			_, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: kptPkg(pkg, nil)})
			read += r.WorkspaceTagsRead()
			r.Close()
			var a string
			switch {
			case err == nil:
				a = "free"
			case errors.Is(err, repository.ErrAlreadyExists):
				a = "taken"
			default:
				t.Fatalf("workspace %s: %v", ws, err)
			}
			r = mustOpen(t, benchSpec(dir), nil)
			pr, err := r.Get(ctx, key)
			read += r.WorkspaceTagsRead()
			r.Close()
			switch {
			case err == nil:
				a += fmt.Sprintf(", v%d", pr.Meta().Key.Revision)
			case errors.Is(err, repository.ErrNotFound):
				a += ", none"
			default:
				t.Fatalf("get workspace %s: %v", ws, err)
			}
			out[ws] = a
		}
		return out, read
	}
	// same checks that the answers with the summaries are those without
	// (the summaries moved away, none written), and returns them with
	// the tags the lookups with summaries looked at.
	same := func(t *testing.T) (map[string]string, int64) {
		t.Helper()
		with, read := answers(t)
		if err := os.Rename(sums, sums+".off"); err != nil {
			t.Fatal(err)
		}
		restore := gitrepo.SetWorkspaceSummaryMin(1 << 30)
		without, _ := answers(t)
		restore()
		if _, err := os.Stat(sums); !os.IsNotExist(err) {
			t.Fatalf("a summary was written with summaries off: %v", err)
		}
		if err := os.Rename(sums+".off", sums); err != nil {
			t.Fatal(err)
		}
		for _, ws := range wss {
			if with[ws] != without[ws] {
				t.Errorf("workspace %s: %s with the summary, %s without", ws, with[ws], without[ws])
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		return with, read
	}
	want := func(t *testing.T, got map[string]string, ws, answer string) {
		t.Helper()
		if got[ws] != answer {
			t.Fatalf("workspace %s: %s, want %s", ws, got[ws], answer)
		}
	}
	lookups := int64(2 * len(wss))
	summary := func() []byte {
		b, err := os.ReadFile(sumPath)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	gitIn := func(args ...string) string { return git(t, dir, args...) }
	// commitWithWorkspace makes a commit giving pkg workspace ws, on v12's tree.
	commitWithWorkspace := func(ws string, n int) string {
		msg := fmt.Sprintf("Approving package revision %s/%d\n\nkpt:{\"package\":%q,\"workspaceName\":%q,\"revision\":\"%d\"}\n", pkg, n, pkg, ws, n)
		return strings.TrimSpace(gitIn("commit-tree", "-m", msg, pkg+"/v12^{tree}"))
	}

	t.Run("first", func(t *testing.T) {
		got, _ := same(t)
		want(t, got, "ws5", "taken, v5")
		want(t, got, "free", "free, none")
		if !gitrepo.WorkspaceSummaryValid(dir, pkg) {
			t.Fatal("the first check wrote no summary")
		}
	})
	t.Run("current", func(t *testing.T) {
		_, read := same(t)
		// The tag of the workspace, if any, and no other.
		if read > lookups {
			t.Fatalf("%d lookups looked at %d tags", lookups, read)
		}
	})
	good := summary()
	damage := map[string]func(b []byte) []byte{
		"magic":     func(b []byte) []byte { b[0] ^= 1; return b },
		"path":      func(b []byte) []byte { b[12] ^= 1; return b },
		"identity":  func(b []byte) []byte { b[len(b)/4] ^= 1; return b },
		"middle":    func(b []byte) []byte { b[len(b)/2] ^= 0x80; return b },
		"crc":       func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"cut short": func(b []byte) []byte { return b[:len(b)/2] },
		"empty":     func(b []byte) []byte { return nil },
		"garbage":   func(b []byte) []byte { return []byte(strings.Repeat("cadwsum1 garbage ", 40)) },
		"a tag added": func(b []byte) []byte {
			return append(b[:len(b)-4:len(b)-4], 0, 0, 0, 0, 0, 0, 0, 0, 2, 'v', '1', 0, 0, 0, 0)
		},
	}
	for name, f := range damage {
		t.Run("damaged/"+name, func(t *testing.T) {
			if err := os.WriteFile(sumPath, f(append([]byte(nil), good...)), 0o644); err != nil {
				t.Fatal(err)
			}
			same(t)
			if !gitrepo.WorkspaceSummaryValid(dir, pkg) {
				t.Fatal("the damaged summary was not written again")
			}
		})
	}
	t.Run("another package's", func(t *testing.T) {
		r := mustOpen(t, benchSpec(dir), nil)
		_, err := r.CreateDraft(ctx, revision.Key{Package: s.pkg(1), Workspace: "x"}, repository.CreateDraftOptions{Files: kptPkg(s.pkg(1), nil)})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		other, err := os.ReadFile(gitrepo.WorkspaceSummaryPath(dir, s.pkg(1)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sumPath, other, 0o644); err != nil {
			t.Fatal(err)
		}
		same(t)
	})
	// rewritePacked writes packed-refs anew (another inode), as git
	// does, with edit applied to its content.
	rewritePacked := func(t *testing.T, edit func(string) string) {
		t.Helper()
		p := filepath.Join(dir, "packed-refs")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p+".new", []byte(edit(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".new", p); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("packed-refs rewritten, the same", func(t *testing.T) {
		rewritePacked(t, func(s string) string { return s })
		// The package's lines are the same: the summary holds.
		if _, read := same(t); read > lookups {
			t.Fatalf("%d lookups looked at %d tags", lookups, read)
		}
	})
	t.Run("packed-refs rewritten, another package's tag moved", func(t *testing.T) {
		other := "refs/tags/" + s.pkg(1) + "/v2"
		v2 := strings.TrimSpace(gitIn("rev-parse", other))
		v3 := strings.TrimSpace(gitIn("rev-parse", s.pkg(1)+"/v3"))
		rewritePacked(t, func(s string) string {
			if !strings.Contains(s, v2+" "+other+"\n") {
				t.Fatalf("no line of %s", other)
			}
			return strings.Replace(s, v2+" "+other+"\n", v3+" "+other+"\n", 1)
		})
		if _, read := same(t); read > lookups {
			t.Fatalf("%d lookups looked at %d tags", lookups, read)
		}
	})
	t.Run("packed-refs rewritten, this package's tag moved", func(t *testing.T) {
		name := "refs/tags/" + pkg + "/v1"
		v1 := strings.TrimSpace(gitIn("rev-parse", name))
		v2 := strings.TrimSpace(gitIn("rev-parse", pkg+"/v2"))
		rewritePacked(t, func(s string) string {
			if !strings.Contains(s, v1+" "+name+"\n") {
				t.Fatalf("no line of %s", name)
			}
			return strings.Replace(s, v1+" "+name+"\n", v2+" "+name+"\n", 1)
		})
		got, _ := same(t)
		want(t, got, "ws1", "free, none")
	})
	t.Run("an older packed-refs", func(t *testing.T) {
		old := summary()
		gitIn("tag", pkg+"/v13", pkg+"/v12")
		gitIn("pack-refs", "--all")
		if err := os.WriteFile(sumPath, old, 0o644); err != nil {
			t.Fatal(err)
		}
		same(t)
	})
	t.Run("tag deleted by git", func(t *testing.T) {
		gitIn("tag", "-d", pkg+"/v5")
		got, _ := same(t)
		want(t, got, "ws5", "free, none")
	})
	t.Run("tag moved by git", func(t *testing.T) {
		gitIn("tag", "-f", pkg+"/v7", pkg+"/v2")
		got, _ := same(t)
		want(t, got, "ws7", "free, none")
	})
	t.Run("tag added by git", func(t *testing.T) {
		gitIn("tag", pkg+"/v20", commitWithWorkspace("new-a", 20))
		got, _ := same(t)
		want(t, got, "new-a", "taken, v20")
	})
	loose := filepath.Join(dir, "refs", "tags", filepath.FromSlash(pkg), "v9")
	t.Run("raw loose write", func(t *testing.T) {
		if err := os.WriteFile(loose, []byte(commitWithWorkspace("new-b", 9)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		got, _ := same(t)
		want(t, got, "new-b", "taken, v9")
		want(t, got, "ws9", "free, none")
	})
	t.Run("raw loose removal", func(t *testing.T) {
		if err := os.Remove(loose); err != nil {
			t.Fatal(err)
		}
		got, _ := same(t)
		want(t, got, "new-b", "free, none")
		want(t, got, "ws9", "taken, v9")
	})
	t.Run("packed-refs rewritten in place", func(t *testing.T) {
		gitIn("pack-refs", "--all")
		same(t) // a summary of this packed-refs
		p := filepath.Join(dir, "packed-refs")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		v3 := strings.TrimSpace(gitIn("rev-parse", pkg+"/v3"))
		v4 := strings.TrimSpace(gitIn("rev-parse", pkg+"/v4"))
		line := v3 + " refs/tags/" + pkg + "/v3\n"
		if !strings.Contains(string(b), line) {
			t.Fatalf("packed-refs has no line %q", line)
		}
		b = []byte(strings.Replace(string(b), line, v4+" refs/tags/"+pkg+"/v3\n", 1))
		v11 := strings.TrimSpace(gitIn("rev-parse", pkg+"/v11"))
		line = v11 + " refs/tags/" + pkg + "/v11\n"
		if !strings.Contains(string(b), line) {
			t.Fatalf("packed-refs has no line %q", line)
		}
		b = []byte(strings.Replace(string(b), line, commitWithWorkspace("new-c", 11)+" refs/tags/"+pkg+"/v11\n", 1))
		time.Sleep(20 * time.Millisecond) // past the file system clock's tick
		before, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_WRONLY, 0) // the same inode, the same size
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(b, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		after, err := os.Stat(p)
		if err != nil || !os.SameFile(before, after) || after.Size() != before.Size() {
			t.Fatalf("packed-refs was not rewritten in place: %v", err)
		}
		got, _ := same(t)
		want(t, got, "ws3", "free, none")
		want(t, got, "ws4", "taken, v4")
		want(t, got, "new-c", "taken, v11")
	})
	t.Run("a damaged loose tag", func(t *testing.T) {
		bad := filepath.Join(dir, "refs", "tags", filepath.FromSlash(pkg), "v10")
		if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bad, []byte("not a hash\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		same(t)
		if err := os.Remove(bad); err != nil {
			t.Fatal(err)
		}
		same(t)
	})
	t.Run("approved by cad", func(t *testing.T) {
		r := mustOpen(t, benchSpec(dir), nil)
		propose(t, r, pkg, "new-d")
		_, err := r.UpdateLifecycle(ctx, revision.Key{Package: pkg, Workspace: "new-d"}, revision.LifecyclePublished, repository.UpdateOptions{})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := same(t)
		want(t, got, "new-d", "taken, v21")
	})
	t.Run("packed by git", func(t *testing.T) {
		gitIn("tag", pkg+"/v30", commitWithWorkspace("free", 30))
		same(t)
		gitIn("pack-refs", "--all")
		got, _ := same(t)
		want(t, got, "free", "taken, v30")
	})
}

// Workspace checks with summaries, racing approvals of the same package
// through other Repositories: a workspace published before a check
// started is taken, a new one is free, and after the race every
// published workspace is taken, in a new Repository.
func TestWorkspaceSummaryRace(t *testing.T) {
	defer gitrepo.SetWorkspaceSummaryMin(1)()
	ctx := context.Background()
	dir := newBare(t)
	spec := benchSpec(dir)
	spec.Git.CreateBranch = true
	r0 := mustOpen(t, spec, nil)
	defer r0.Close()
	const before, during = 6, 6
	for i := range before + during {
		propose(t, r0, "p", fmt.Sprintf("ws%d", i))
	}
	for i := range before {
		if _, err := approve(ctx, r0, revision.Key{Package: "p", Workspace: fmt.Sprintf("ws%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "pack-refs", "--all")
	check := func(t *testing.T, r *gitrepo.Repository, ws string, wantTaken bool) {
		_, err := r.CreateDraft(ctx, revision.Key{Package: "p", Workspace: ws}, repository.CreateDraftOptions{Files: kptPkg("p", nil)})
		if taken := errors.Is(err, repository.ErrAlreadyExists); taken != wantTaken || (err != nil && !taken) {
			t.Errorf("workspace %s: %v, want taken %v", ws, err, wantTaken)
		}
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range during {
		wg.Add(2)
		go func() {
			defer wg.Done()
			r := mustOpen(t, benchSpec(dir), nil)
			defer r.Close()
			<-start
			if _, err := approve(ctx, r, revision.Key{Package: "p", Workspace: fmt.Sprintf("ws%d", before+i)}); err != nil {
				t.Errorf("approve: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			for j := range before {
				r := mustOpen(t, benchSpec(dir), nil)
				check(t, r, fmt.Sprintf("ws%d", j), true)
				check(t, r, fmt.Sprintf("new%d-%d", i, j), false)
				r.Close()
			}
		}()
	}
	close(start)
	wg.Wait()
	for i := range before + during {
		r := mustOpen(t, benchSpec(dir), nil)
		check(t, r, fmt.Sprintf("ws%d", i), true)
		r.Close()
	}
	if !gitrepo.WorkspaceSummaryValid(dir, "p") {
		t.Fatal("no summary was written")
	}
}

// A summary writer removes the temporary files of writers that died an
// hour or more ago, and leaves those of live ones.
func TestWorkspaceSummaryStaleTemps(t *testing.T) {
	defer gitrepo.SetWorkspaceSummaryMin(1)()
	ctx := context.Background()
	dir := newBare(t)
	spec := benchSpec(dir)
	spec.Git.CreateBranch = true
	r := mustOpen(t, spec, nil)
	defer r.Close()
	propose(t, r, "p", "a")
	if _, err := approve(ctx, r, revision.Key{Package: "p", Workspace: "a"}); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(gitrepo.WorkspaceSummaryPath(dir, "p")), "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	dead, live := filepath.Join(tmp, "tmp-dead"), filepath.Join(tmp, "tmp-live")
	for _, p := range []string{dead, live} {
		if err := os.WriteFile(p, []byte("half a summary"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(dead, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreateDraft(ctx, revision.Key{Package: "p", Workspace: "b"}, repository.CreateDraftOptions{Files: kptPkg("p", nil)}); err != nil {
		t.Fatal(err)
	}
	if !gitrepo.WorkspaceSummaryValid(dir, "p") {
		t.Fatal("no summary was written")
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("a dead writer's temporary file is left: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("a live writer's temporary file was removed: %v", err)
	}
}
