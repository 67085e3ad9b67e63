package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

// stallServer is a git server on a loopback TCP listener that accepts
// every connection, writes greeting on it (when not empty; over http once
// it has read the request's head) and then neither reads nor writes
// anything more. It runs no goroutine per connection.
func stallServer(t *testing.T, http bool, greeting string) net.Addr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if greeting != "" {
				if http {
					readHead(c)
				}
				_, _ = io.WriteString(c, greeting)
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr()
}

// readHead reads c up to the end of an http request's head, for at most
// ten seconds.
func readHead(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	var head []byte
	b := make([]byte, 1)
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		if _, err := c.Read(b); err != nil {
			return
		}
		head = append(head, b[0])
	}
}

// pktLine returns s as a git pkt-line.
func pktLine(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

// stallHash is the one ref the stalling servers' greetings advertise.
var stallHash = plumbing.NewHash(strings.Repeat("1", 40))

// stallAdvertisement is an upload-pack advertisement of one branch at
// stallHash.
var stallAdvertisement = pktLine(stallHash.String()+" refs/heads/main\x00side-band-64k ofs-delta no-progress\n") + "0000"

// transportGoroutines returns the goroutines running in a transport (go-git,
// the context reader it uses, net/http's client connections or x/crypto's
// ssh).
func transportGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, in := range []string{"go-git/go-git", "jbenet/go-context", "net/http.(*persistConn)", "x/crypto/ssh"} {
			if strings.Contains(g, in) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// settled waits until no more transport goroutines run than before, and
// returns those left over when they do not end within 10 seconds.
func settled(before int) []string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := transportGoroutines()
		if len(left) <= before || time.Now().After(deadline) {
			if len(left) <= before {
				return nil
			}
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A git server that accepts a connection and then stalls, over http, git://
// and ssh, before or after it advertises its refs: each network step (the
// ask for the refs to fetch or to push, the push, the fetch of a pack)
// returns its context's error soon after the context ends, and leaves no
// goroutine behind.
func TestRemoteStalledServer(t *testing.T) {
	httpGreeting := func(body string) string {
		return "HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-advertisement\r\n" +
			fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
	}
	fetchPack := func(ctx context.Context, rm *remote) error {
		sess, ar, _, closeSess, err := rm.uploadPack(ctx)
		if err != nil {
			return fmt.Errorf("the ask for the refs: %v", err) // not the deadline's: the step to test is the next
		}
		defer closeSess()
		req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
		req.Wants = []plumbing.Hash{stallHash}
		return rm.fetchPack(ctx, sess, req, io.Discard)
	}
	steps := map[string]func(context.Context, *remote) error{
		"ls-remote": func(ctx context.Context, rm *remote) error {
			_, err := rm.lsRemote(ctx)
			return err
		},
		"push capabilities": func(ctx context.Context, rm *remote) error {
			_, err := rm.pushCapabilities(ctx)
			return err
		},
		"push": func(ctx context.Context, rm *remote) error {
			return rm.push(ctx, nil, &txn{})
		},
	}
	for _, tc := range []struct {
		name, scheme, greeting string
		steps                  map[string]func(context.Context, *remote) error
	}{
		{"http, silent", "http", "", steps},
		{"git, silent", "git", "", steps},
		// The ssh client sends its version and waits for the server's: the
		// opening of the session stalls (it has no context in go-git).
		{"ssh, silent", "ssh", "", steps},
		// The server's version line, then nothing: the key exchange stalls.
		{"ssh, after its version", "ssh", "SSH-2.0-stall\r\n", steps},
		{"http, after the refs", "http", httpGreeting(pktLine("# service=git-upload-pack\n") + "0000" + stallAdvertisement),
			map[string]func(context.Context, *remote) error{"fetch": fetchPack}},
		{"git, after the refs", "git", stallAdvertisement,
			map[string]func(context.Context, *remote) error{"fetch": fetchPack}},
	} {
		for name, step := range tc.steps {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				addr := stallServer(t, tc.scheme == "http", tc.greeting)
				var o Options
				if tc.scheme == "ssh" {
					o.Auth = &gitssh.Password{User: "git", Password: "x",
						HostKeyCallbackHelper: gitssh.HostKeyCallbackHelper{HostKeyCallback: ssh.InsecureIgnoreHostKey()}}
				}
				rm, err := newRemote(tc.scheme+"://"+addr.String()+"/repo.git", o)
				if err != nil {
					t.Fatal(err)
				}
				before := len(transportGoroutines())
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				ended := make(chan error, 1)
				go func() { ended <- step(ctx, rm) }()
				select {
				case err := <-ended:
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("%v, want the deadline's error", err)
					}
				case <-time.After(time.Minute):
					t.Fatal("the step did not end with its context")
				}
				if left := settled(before); left != nil {
					t.Fatalf("%d goroutines left behind (%d before):\n%s", len(left), before, strings.Join(left, "\n\n"))
				}
			})
		}
	}
}
