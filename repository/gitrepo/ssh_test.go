package gitrepo_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// sshGitServer serves the bare repositories under root over ssh on a
// loopback port, as a git host does: a session's exec request
// "git-upload-pack '<path>'" or "git-receive-pack '<path>'" runs the git
// binary's upload-pack or receive-pack on root/<path>. It accepts the
// user "git" with password pass. It returns the server's address.
func sshGitServer(t *testing.T, root, pass string) string {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PasswordCallback: func(c ssh.ConnMetadata, p []byte) (*ssh.Permissions, error) {
		if c.User() == "git" && string(p) == pass {
			return nil, nil
		}
		return nil, errors.New("denied")
	}}
	cfg.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				sc, chans, reqs, err := ssh.NewServerConn(c, cfg)
				if err != nil {
					return
				}
				defer sc.Close()
				go ssh.DiscardRequests(reqs)
				for nc := range chans {
					if nc.ChannelType() != "session" {
						_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
						continue
					}
					ch, creqs, err := nc.Accept()
					if err != nil {
						return
					}
					serveGitSession(root, ch, creqs)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// serveGitSession runs the one git command the session's exec request
// names and reports its exit status.
func serveGitSession(root string, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" || len(req.Payload) < 4 {
			_ = req.Reply(false, nil)
			continue
		}
		n := binary.BigEndian.Uint32(req.Payload)
		line := string(req.Payload[4 : 4+n])
		svc, arg, _ := strings.Cut(line, " ")
		if svc != "git-upload-pack" && svc != "git-receive-pack" {
			_ = req.Reply(false, nil)
			continue
		}
		_ = req.Reply(true, nil)
		cmd := exec.Command("git", strings.TrimPrefix(svc, "git-"), filepath.Join(root, strings.Trim(arg, "'")))
		cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
		status := uint32(0)
		if err := cmd.Run(); err != nil {
			status = 1
		}
		_ = ch.CloseWrite()
		_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, status))
		return
	}
}

// Over ssh (a real ssh server running git's own upload-pack and
// receive-pack): a repository is read, a revision is proposed and
// published by pushes, and git sees them.
func TestRemoteSSH(t *testing.T) {
	dir := newBare(t)
	addr := sshGitServer(t, filepath.Dir(dir), "s3cret")
	auth := &gitssh.Password{User: "git", Password: "s3cret",
		HostKeyCallbackHelper: gitssh.HostKeyCallbackHelper{HostKeyCallback: ssh.InsecureIgnoreHostKey()}}
	url := "ssh://git@" + addr + "/" + filepath.Base(dir)
	r := mustOpen(t, gitSpec(url), &gitrepo.Options{Auth: auth})
	defer r.Close()
	ctx := context.Background()
	propose(t, r, "p", "ws")
	if _, err := r.UpdateLifecycle(ctx, revision.Key{Package: "p", Workspace: "ws"}, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "for-each-ref", "--format=%(refname)", "refs/tags/"); !strings.Contains(got, "refs/tags/p/v1") {
		t.Fatalf("tags after the publish over ssh: %q, want p/v1", got)
	}
	// A second Repository over ssh reads what the first pushed.
	r2 := mustOpen(t, gitSpec(url), &gitrepo.Options{Auth: auth})
	defer r2.Close()
	revs, err := r2.List(ctx, repository.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, pr := range revs {
		k := pr.Meta().Key
		found = found || k.Package == "p" && k.Revision == 1 && pr.Meta().Lifecycle == revision.LifecyclePublished
	}
	if !found {
		t.Fatalf("List over ssh: %d revisions, none is p v1 published", len(revs))
	}

	// A wrong password is an error, not a hang.
	bad := &gitssh.Password{User: "git", Password: "wrong", HostKeyCallbackHelper: auth.HostKeyCallbackHelper}
	if _, err := gitrepo.Open(ctx, gitSpec(url), &gitrepo.Options{Auth: bad}); err == nil {
		t.Fatal("Open with a wrong ssh password succeeded")
	}
}
