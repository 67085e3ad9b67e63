package gitrepo

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/net/proxy"
)

// go-git v5 opens an ssh session without a context: it dials and shakes
// hands inside NewUploadPackSession and NewReceivePackSession, bounded
// only by the TCP connect timeout, so a server that accepts and then says
// nothing would hold the caller. The one way in that go-git leaves is the
// endpoint's proxy: its ssh transport dials through the proxy URL's
// dialer. So an ssh endpoint of gitrepo names a proxy of its own scheme,
// sshDialScheme, whose host is a token for the context of the step
// opening the session (registered in sshDials while the session opens);
// the dialer connects with that context and, when it ends, sets the
// connection's deadline in the past, which ends the handshake or any
// later read or write with an error the caller turns into ctx.Err().

// sshDialScheme is the proxy scheme of gitrepo's context-bound ssh dialer.
const sshDialScheme = "cad-gitrepo-ssh-ctx"

var (
	sshDials   sync.Map // token (string) -> context.Context of the opening step
	sshDialSeq atomic.Uint64
)

func init() {
	proxy.RegisterDialerType(sshDialScheme, func(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
		return sshDialer{token: u.Host}, nil
	})
}

// withDialContext makes an ssh endpoint ep dial with ctx, until release
// is called (once the session is open or failed to). It leaves other
// endpoints, and ssh endpoints that name a proxy of their own, as they
// are.
func withDialContext(ctx context.Context, ep *transport.Endpoint) (release func()) {
	if ep.Protocol != "ssh" || ep.Proxy.URL != "" {
		return func() {}
	}
	token := "s" + strconv.FormatUint(sshDialSeq.Add(1), 10)
	sshDials.Store(token, ctx)
	ep.Proxy = transport.ProxyOptions{URL: sshDialScheme + "://" + token}
	return func() { sshDials.Delete(token) }
}

// sshDialer dials for the session whose token it has.
type sshDialer struct{ token string }

func (d sshDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

// DialContext connects to addr while both the opening step's context and
// dctx (go-git's, which carries the ssh config's timeout) last; the
// connection fails every read and write once the step's context ends.
func (d sshDialer) DialContext(dctx context.Context, network, addr string) (net.Conn, error) {
	v, ok := sshDials.Load(d.token)
	if !ok {
		return nil, errors.New("gitrepo: an ssh dial outside the opening of a session")
	}
	ctx := v.(context.Context)
	both, cancel := context.WithCancel(ctx)
	stopOuter := context.AfterFunc(dctx, cancel)
	var nd net.Dialer
	c, err := nd.DialContext(both, network, addr)
	stopOuter()
	cancel()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	return &ctxConn{Conn: c, stop: stop}, nil
}

// ctxConn is a connection whose deadline its step's context's end sets.
type ctxConn struct {
	net.Conn
	stop func() bool
}

func (c *ctxConn) Close() error {
	c.stop()
	return c.Conn.Close()
}
