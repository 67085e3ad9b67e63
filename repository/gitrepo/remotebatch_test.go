package gitrepo_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// A remote's write batch (remotebatch.go): held in memory, pushed by
// Commit as one atomic push, all of it or none.

// remoteBatchEnv, set to a remote's URL, makes the test binary a writer
// in another process (TestRemoteBatchKilled): it begins a batch, writes
// remoteBatchN drafts into it, printing "wrote <n>" after each, and
// waits to be killed before its Commit.
const (
	remoteBatchEnv = "CAD_REMOTE_BATCH_WRITER"
	remoteBatchN   = 12
)

func init() {
	if url := os.Getenv(remoteBatchEnv); url != "" {
		os.Exit(remoteBatchWriter(url))
	}
}

func remoteBatchWriter(url string) int {
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, gitSpec(url), nil)
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	b, err := r.BeginBatch(ctx)
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	for i := range remoteBatchN {
		if err := writeDraft(ctx, b, fanKey(i), "x", true); err != nil {
			fmt.Println("error", err)
			return 2
		}
		fmt.Println("wrote", i+1)
	}
	select {} // killed before its Commit
}

func fanKey(i int) revision.Key {
	return revision.Key{Package: fmt.Sprintf("fan/p%02d", i), Workspace: "w1"}
}

// fillRemoteBatch writes into b what a set's sync would: remoteBatchN
// new drafts and the approval of the proposal up.
func fillRemoteBatch(t *testing.T, b repository.Batch, up revision.Key) {
	t.Helper()
	ctx := context.Background()
	for i := range remoteBatchN {
		if err := writeDraft(ctx, b, fanKey(i), "x", true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.UpdateLifecycle(ctx, up, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// remoteBatchFixture returns a bare repository served over git
// http-backend with a proposal, and a Repository of it.
func remoteBatchFixture(t *testing.T) (dir, url string, srvRequests func() int64, r *gitrepo.Repository, up revision.Key) {
	t.Helper()
	dir = newBare(t)
	srv := gitServer(t, filepath.Dir(dir), "", "")
	url = srv.URL + "/" + filepath.Base(dir)
	r = mustOpen(t, gitSpec(url), nil)
	t.Cleanup(func() { r.Close() })
	up = revision.Key{Package: "up", Workspace: "p"}
	if err := writeDraft(context.Background(), r, up, "u", true); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UpdateLifecycle(context.Background(), up, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir, url, srv.Requests, r, up
}

// The batch's writes reach the remote only with Commit, in one push, and
// all of them; a push the remote refuses leaves it with none of them.
func TestRemoteBatchOneAtomicPush(t *testing.T) {
	ctx := context.Background()
	dir, url, requests, r, up := remoteBatchFixture(t)
	refs0 := git(t, dir, "for-each-ref")

	// The remote refuses the push (a pre-receive hook, after the whole
	// pack arrived): none of the writes lands.
	hook := filepath.Join(dir, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho refused >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := r.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fillRemoteBatch(t, b, up)
	if got := git(t, dir, "for-each-ref"); got != refs0 {
		t.Fatalf("the remote changed before Commit:\n%s", got)
	}
	if err := b.Commit(ctx); err == nil {
		t.Fatal("Commit succeeded though the remote refused the push")
	}
	if got := git(t, dir, "for-each-ref"); got != refs0 {
		t.Fatalf("a refused push changed the remote:\n%s", got)
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}

	b, err = r.BeginBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fillRemoteBatch(t, b, up)
	if got := git(t, dir, "for-each-ref"); got != refs0 {
		t.Fatalf("the remote changed before Commit:\n%s", got)
	}
	before := requests()
	if err := b.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	// A receive-pack advertisement and one push.
	if n := requests() - before; n > 2 {
		t.Fatalf("Commit made %d requests, want 2 (one push)", n)
	}
	drafts := git(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/drafts/fan/")
	if n := len(strings.Fields(drafts)); n != remoteBatchN {
		t.Fatalf("the remote has %d of the batch's %d drafts:\n%s", n, remoteBatchN, drafts)
	}
	if tag := git(t, dir, "for-each-ref", "--format=%(refname)", "refs/tags/up/"); tag != "refs/tags/up/v1" {
		t.Fatalf("the approval's tag on the remote: %q", tag)
	}
	fsck(t, dir, "after the batch's push")
	// Another process sees all of it.
	other := mustOpen(t, gitSpec(url), nil)
	defer other.Close()
	revs, err := other.List(ctx, repository.ListOptions{PackagePrefix: "fan"})
	if err != nil || len(revs) != remoteBatchN {
		t.Fatalf("another Repository lists %d of the batch's drafts (%v)", len(revs), err)
	}
	pr, err := other.Get(ctx, revision.Key{Package: "up", Revision: 1})
	if err != nil || pr.Meta().Lifecycle != revision.LifecyclePublished {
		t.Fatalf("the approval, seen by another Repository: %v", err)
	}
	// This Repository reads the remote as it is now.
	if revs, err := r.List(ctx, repository.ListOptions{PackagePrefix: "fan"}); err != nil || len(revs) != remoteBatchN {
		t.Fatalf("the writer lists %d of the batch's drafts after Commit (%v)", len(revs), err)
	}
}

// A writer killed in the middle of a set's sync (after 6 of 12 drafts)
// leaves the remote with none of them: without a batch, each draft was
// its own push, and a kill left 1 to 11.
func TestRemoteBatchKilled(t *testing.T) {
	dir, url, _, _, _ := remoteBatchFixture(t)
	refs0 := git(t, dir, "for-each-ref")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), remoteBatchEnv+"="+url)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "error") {
			t.Fatalf("writer: %s", line)
		}
		if line == "wrote 6" {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !errors.As(err, new(*exec.ExitError)) {
		t.Fatalf("the writer was not killed: %v", err)
	}
	if got := git(t, dir, "for-each-ref"); got != refs0 {
		t.Fatalf("a writer killed mid-batch changed the remote:\n%s", got)
	}
}

// A remote that does not take atomic pushes says so: BeginBatch returns
// ErrNotSupported.
func TestRemoteBatchNeedsAtomic(t *testing.T) {
	dir := newBare(t)
	git(t, dir, "config", "receive.advertiseAtomic", "false")
	srv := gitServer(t, filepath.Dir(dir), "", "")
	r := mustOpen(t, gitSpec(srv.URL+"/"+filepath.Base(dir)), nil)
	defer r.Close()
	if _, err := r.BeginBatch(context.Background()); !errors.Is(err, repository.ErrNotSupported) {
		t.Fatalf("BeginBatch on a remote without atomic pushes: %v, want ErrNotSupported", err)
	}
}
