package gitrepo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// mirrorState returns the refs of the mirror that opts name (on disk:
// Options.CacheDir, else Options.Storage), one "name hash" a line, and
// fails the test when one names an object the mirror lacks.
func mirrorState(t *testing.T, opts gitrepo.Options) string {
	t.Helper()
	if opts.CacheDir != "" {
		refs := git(t, opts.CacheDir, "for-each-ref", "--format=%(refname) %(objectname)")
		for _, line := range strings.Split(refs, "\n") {
			if _, h, ok := strings.Cut(line, " "); ok {
				git(t, opts.CacheDir, "cat-file", "-e", h)
			}
		}
		return refs
	}
	iter, err := opts.Storage.IterReferences()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	_ = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			if _, err := opts.Storage.EncodedObject(plumbing.AnyObject, ref.Hash()); err != nil {
				t.Errorf("%s: %v", ref.Name(), err)
			}
			lines = append(lines, ref.String())
		}
		return nil
	})
	sort.Strings(lines)
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// A write whose push is held on the network holds no lock a read needs:
// reads through the writing Repository (a fresh mirror) and through
// another Repository on the same mirror complete meanwhile, and see the
// remote as it was before the push; a second write waits for the first
// (or returns when its context ends) and then lands; both writes are in
// the mirror and on the remote once the push goes through.
func TestRemoteHeldPushBlocksNoRead(t *testing.T) {
	for _, onDisk := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "disk"}[onDisk], func(t *testing.T) {
			ctx := context.Background()
			dir := newBare(t)
			srv := gitServer(t, filepath.Dir(dir), "", "")
			direct := srv.URL + "/" + filepath.Base(dir)
			g, proxied := newPackGate(t, srv.URL)
			proxied += "/" + filepath.Base(dir)
			wOpts, rOpts := mirrorOpts(t, onDisk)
			wOpts.RemoteReadMaxAge = time.Hour
			w := mustOpen(t, gitSpec(proxied), &wOpts)
			defer w.Close()
			propose(t, w, "p", "ws")
			other := mustOpen(t, gitSpec(direct), &rOpts)
			defer other.Close()

			g.armPush()
			qKey := revision.Key{Package: "q", Workspace: "ws"}
			first := make(chan error, 1)
			go func() { first <- writeDraft(ctx, w, qKey, "q", true) }()
			g.waitHeld(t)

			promptly(t, g, "a read of the writing Repository (fresh mirror) beside its held push", func() error {
				_, err := w.Get(ctx, revision.Key{Package: "p", Workspace: "ws"})
				return err
			})
			promptly(t, g, "a list of another Repository on the mirror beside the held push", func() error {
				keys, err := listKeys(ctx, other)
				if err == nil && strings.Join(keys, " ") != "p" {
					err = fmt.Errorf("listed %v before the push landed, want p", keys)
				}
				return err
			})
			promptly(t, g, "a second write with a deadline", func() error {
				cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				err := writeDraft(cctx, w, revision.Key{Package: "s", Workspace: "ws"}, "s", true)
				if !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("got %v, want the deadline's error", err)
				}
				return nil
			})
			second := make(chan error, 1)
			go func() { second <- writeDraft(ctx, w, revision.Key{Package: "u", Workspace: "ws"}, "u", true) }()
			select {
			case err := <-second:
				t.Fatalf("a second write returned (%v) while the first one's push was held", err)
			case <-time.After(100 * time.Millisecond):
			}
			g.release()
			if err := <-first; err != nil {
				t.Fatalf("the held write: %v", err)
			}
			if err := <-second; err != nil {
				t.Fatalf("the second write: %v", err)
			}
			for name, r := range map[string]*gitrepo.Repository{"the writer": w, "the other": other} {
				if keys, err := listKeys(ctx, r); err != nil || strings.Join(keys, " ") != "p q u" {
					t.Fatalf("%s lists %v, %v; want p q u", name, keys, err)
				}
			}
			for _, p := range []string{"q", "u"} {
				git(t, dir, "rev-parse", "--verify", "refs/heads/drafts/"+p+"/ws")
			}
			if onDisk {
				git(t, wOpts.CacheDir, "fsck", "--no-dangling")
			}
		})
	}
}

// A push cut short (its context ends while the remote has not answered)
// changes nothing in the mirror, nor on the remote; Close during a held
// push returns at once, and the write returns an error matching
// ErrClosed, leaving the mirror as it was.
func TestRemotePushCutShortChangesNothing(t *testing.T) {
	for _, onDisk := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "disk"}[onDisk], func(t *testing.T) {
			ctx := context.Background()
			dir := newBare(t)
			srv := gitServer(t, filepath.Dir(dir), "", "")
			g, proxied := newPackGate(t, srv.URL)
			proxied += "/" + filepath.Base(dir)
			opts, _ := mirrorOpts(t, onDisk)
			w := mustOpen(t, gitSpec(proxied), &opts)
			defer w.Close()
			propose(t, w, "p", "ws")
			before, remoteBefore := mirrorState(t, opts), git(t, dir, "for-each-ref")

			g.armPush()
			cctx, cancel := context.WithCancel(ctx)
			cut := make(chan error, 1)
			go func() { cut <- writeDraft(cctx, w, revision.Key{Package: "q", Workspace: "ws"}, "q", true) }()
			g.waitHeld(t)
			cancel()
			if err := <-cut; !errors.Is(err, context.Canceled) {
				t.Fatalf("a write whose push was cut short: %v, want context.Canceled", err)
			}
			if after := mirrorState(t, opts); after != before {
				t.Fatalf("the mirror changed:\nbefore\n%s\nafter\n%s", before, after)
			}
			// Still held at the proxy, which drops it once the client has
			// gone: it never reaches the remote.
			if got := git(t, dir, "for-each-ref"); got != remoteBefore {
				t.Fatalf("the remote changed:\nbefore\n%s\nafter\n%s", remoteBefore, got)
			}
			// The Repository goes on: a read lists p alone, a write lands.
			if keys, err := listKeys(ctx, w); err != nil || strings.Join(keys, " ") != "p" {
				t.Fatalf("after the cut push: %v, %v", keys, err)
			}

			g.armPush()
			closed := make(chan error, 1)
			go func() { closed <- writeDraft(ctx, w, revision.Key{Package: "s", Workspace: "ws"}, "s", true) }()
			g.waitHeld(t)
			promptly(t, g, "Close beside a held push", w.Close)
			promptly(t, g, "the held write once closed", func() error {
				if err := <-closed; !errors.Is(err, repository.ErrClosed) {
					return fmt.Errorf("got %v, want ErrClosed", err)
				}
				return nil
			})
			if after := mirrorState(t, opts); after != before {
				t.Fatalf("the mirror changed:\nbefore\n%s\nafter\n%s", before, after)
			}
			if onDisk {
				git(t, opts.CacheDir, "fsck", "--no-dangling")
			}
		})
	}
}

// A process whose write to a remote is held on the network keeps no
// other process from reading the mirror on disk they share: the push
// holds neither cad.lock nor the store's lock.
func TestRemoteHeldPushOtherProcess(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	srv := gitServer(t, filepath.Dir(dir), "", "")
	direct := srv.URL + "/" + filepath.Base(dir)
	g, proxied := newPackGate(t, srv.URL)
	cache := filepath.Join(t.TempDir(), "cache")
	w := mustOpen(t, gitSpec(proxied+"/"+filepath.Base(dir)), &gitrepo.Options{CacheDir: cache})
	defer w.Close()
	propose(t, w, "p", "ws")

	g.armPush()
	held := make(chan error, 1)
	go func() { held <- writeDraft(ctx, w, revision.Key{Package: "q", Workspace: "ws"}, "q", true) }()
	g.waitHeld(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRemoteFetchProcess$", "-test.v")
	cmd.Env = append(os.Environ(), fetchChildEnv+"="+cache+"\n"+direct)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil || !strings.Contains(out.String(), "listed: p\n") {
			t.Fatalf("the reading process: %v\n%s", err, out.String())
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		g.release()
		<-held
		t.Fatalf("another process's read still waits after 20s for a held push:\n%s", out.String())
	}
	g.release()
	if err := <-held; err != nil {
		t.Fatalf("the held write: %v", err)
	}
	if keys, err := listKeys(ctx, w); err != nil || strings.Join(keys, " ") != "p q" {
		t.Fatalf("after the push: %v, %v", keys, err)
	}
}

// BenchmarkRemoteReadBesideHeldPush measures a read of a fresh mirror
// (RemoteReadMaxAge) of another Repository on the same mirror while a
// write's push is held by the remote for a second. With the push under
// the store's write lock the read waits out that second.
func BenchmarkRemoteReadBesideHeldPush(b *testing.B) {
	for _, onDisk := range []bool{false, true} {
		b.Run(map[bool]string{false: "memory", true: "disk"}[onDisk], func(b *testing.B) {
			ctx := context.Background()
			dir := newBare(b)
			srv := gitServer(b, filepath.Dir(dir), "", "")
			direct := srv.URL + "/" + filepath.Base(dir)
			g, proxied := newPackGate(b, srv.URL)
			g.maxHold = time.Second
			proxied += "/" + filepath.Base(dir)
			wOpts, rOpts := mirrorOpts(b, onDisk)
			rOpts.RemoteReadMaxAge = time.Hour
			w := mustOpen(b, gitSpec(proxied), &wOpts)
			defer w.Close()
			propose(b, w, "p", "ws")
			reader := mustOpen(b, gitSpec(direct), &rOpts)
			defer reader.Close()
			key := revision.Key{Package: "p", Workspace: "ws"}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				g.armPush()
				held := make(chan error, 1)
				go func() {
					held <- writeDraft(ctx, w, revision.Key{Package: fmt.Sprintf("q%d", i), Workspace: "ws"}, "q", true)
				}()
				g.waitHeld(b)
				b.StartTimer()
				if _, err := reader.Get(ctx, key); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				g.release()
				if err := <-held; err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkRemoteWrite measures a write to a remote over HTTP (a new
// draft: sync the mirror, plan, push, set the mirror's refs), with its
// mirror in memory and on disk.
func BenchmarkRemoteWrite(b *testing.B) {
	for _, onDisk := range []bool{false, true} {
		b.Run(map[bool]string{false: "memory", true: "disk"}[onDisk], func(b *testing.B) {
			ctx := context.Background()
			dir := newBare(b)
			srv := gitServer(b, filepath.Dir(dir), "", "")
			opts, _ := mirrorOpts(b, onDisk)
			w := mustOpen(b, gitSpec(srv.URL+"/"+filepath.Base(dir)), &opts)
			defer w.Close()
			propose(b, w, "p", "ws")
			b.ResetTimer()
			for i := range b.N {
				if err := writeDraft(ctx, w, revision.Key{Package: fmt.Sprintf("q%d", i), Workspace: "ws"}, "q", true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// pushCrashEnv makes TestHelperRemotePushCrash a child that writes a
// draft to a remote through a mirror on disk and kills itself at the Nth
// step (a ref transaction's, or "remote-pushed": after the push, before
// the mirror's refs are set): "cache\nurl\npackage\nN".
const pushCrashEnv = "CAD_REMOTE_PUSH_CRASH"

// TestHelperRemotePushCrash is not a test: it is the child process of
// TestRemoteCrashMirror, and returns at once otherwise.
func TestHelperRemotePushCrash(t *testing.T) {
	arg := os.Getenv(pushCrashEnv)
	if arg == "" {
		return
	}
	parts := strings.Split(arg, "\n")
	cache, url, pkg := parts[0], parts[1], parts[2]
	var at int
	fmt.Sscan(parts[3], &at)
	r := mustOpen(t, gitSpec(url), &gitrepo.Options{CacheDir: cache})
	n := 0
	gitrepo.SetFaultHook(func(step string) {
		if n++; n == at {
			fmt.Println("step", step)
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				_ = p.Kill()
			}
			select {}
		}
	})
	if err := writeDraft(context.Background(), r, revision.Key{Package: pkg, Workspace: "ws"}, pkg, true); err != nil {
		t.Fatal(err)
	}
	fmt.Println("done")
}

// A process killed at any step of a write to a remote, among them between
// the push and setting the mirror's refs, leaves a mirror on disk that
// git finds whole, whose refs all name objects it holds and are a state
// the remote had (never ahead of it), and that the next read brings up to
// date with the remote.
func TestRemoteCrashMirror(t *testing.T) {
	ctx := context.Background()
	dir := newBare(t)
	srv := gitServer(t, filepath.Dir(dir), "", "")
	url := srv.URL + "/" + filepath.Base(dir)
	cache := filepath.Join(t.TempDir(), "cache")
	opts := gitrepo.Options{CacheDir: cache}
	r := mustOpen(t, gitSpec(url), &opts)
	propose(t, r, "p", "ws")
	r.Close()
	pushedSeen := false
	for at := 1; ; at++ {
		if at > 50 {
			t.Fatal("the write still had not finished at step 50")
		}
		pkg := fmt.Sprintf("q%d", at)
		before := mirrorState(t, opts)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRemotePushCrash$", "-test.v")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s\n%s\n%s\n%d", pushCrashEnv, cache, url, pkg, at))
		out, err := cmd.CombinedOutput()
		finished := strings.Contains(string(out), "\ndone\n")
		if !finished && !strings.Contains(string(out), "step ") {
			t.Fatalf("the child at step %d: %v\n%s", at, err, out)
		}
		if i := strings.Index(string(out), "step "); i >= 0 {
			t.Logf("killed at %s", strings.SplitN(string(out)[i:], "\n", 2)[0])
		}
		if strings.Contains(string(out), "step remote-pushed") {
			pushedSeen = true
		}
		// The mirror: whole, every ref's object there, and each ref as
		// before the write or as the remote has it.
		git(t, cache, "fsck", "--no-dangling")
		after := mirrorState(t, opts)
		remote := git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)")
		for _, line := range strings.Split(after, "\n") {
			if line != "" && !strings.Contains(before, line) && !strings.Contains(remote, line) {
				t.Fatalf("step %d: the mirror's %q is neither as before nor as the remote has it", at, line)
			}
		}
		r := mustOpen(t, gitSpec(url), &opts)
		keys, err := listKeys(ctx, r)
		r.Close()
		onRemote := strings.Contains(remote, "refs/heads/drafts/"+pkg+"/ws ")
		if err != nil || strings.Contains(strings.Join(keys, " "), pkg) != onRemote {
			t.Fatalf("step %d: the next read lists %v, %v; the remote has the draft: %v", at, keys, err, onRemote)
		}
		if finished {
			break
		}
	}
	if !pushedSeen {
		t.Fatal("no child was killed between the push and setting the mirror's refs")
	}
}
