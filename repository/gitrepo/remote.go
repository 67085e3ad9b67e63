package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
)

// remote is the connection to a remote repository. Its local clone is a
// mirror: refs/heads/*, refs/tags/* and refs/cad/* (the metadata ref) as
// the remote has them.
type remote struct {
	url         string // without credentials
	redactedURL string
	auth        transport.AuthMethod
	secrets     []string
	insecure    bool
	caBundle    []byte
	// maxAge is Options.RemoteReadMaxAge. synced is when the mirror was
	// last known to hold the remote's refs: the start of the last fetch,
	// or of an ask for the refs that found the mirror had them all. It
	// is read holding no store lock (a read checks it before asking the
	// remote anything), so it has its own mutex.
	maxAge   time.Duration
	syncedMu sync.Mutex
	synced   time.Time
	// notBefore is when the remote was last said to have changed
	// (Repository.Changed): a sync that asked before it proves nothing.
	notBefore time.Time
	// fetches is the staged fetch of a read under way (remotefetch.go).
	fetches fetchGroup
	// writes serialises the writes to the remote (pushwrite.go).
	writes writeGate
	// landed is set when a fetch added a pack to the mirror, for the
	// automatic maintenance (maintenance.go).
	landed atomic.Bool
	// newClient, when set, returns the transport to the remote in place
	// of go-git's client for the URL's scheme; tests set it
	// (export_test.go).
	newClient atomic.Pointer[newClientFunc]
}

// newClientFunc returns the transport to reach an endpoint, as
// client.NewClient does.
type newClientFunc = func(*transport.Endpoint) (transport.Transport, error)

// client returns the remote's endpoint and the transport to reach it,
// and release, to call once the session on it is open (or failed to).
//
// Every step of a session on it ends with ctx: over http the request
// carries it, over git:// and ssh go-git closes the connection when it
// ends. Opening a session takes no context in go-git v5: over http it
// touches no network, over git:// it dials (bounded by the system's
// connect timeout), over ssh it dials and shakes hands, which gitrepo's
// own ssh dialer (sshdial.go) does with ctx.
func (rm *remote) client(ctx context.Context) (ep *transport.Endpoint, cl transport.Transport, release func(), err error) {
	ep, err = transport.NewEndpoint(rm.url)
	if err != nil {
		return nil, nil, nil, err
	}
	ep.InsecureSkipTLS = rm.insecure
	ep.CaBundle = rm.caBundle
	newClient := client.NewClient
	if f := rm.newClient.Load(); f != nil {
		newClient = *f
	}
	cl, err = newClient(ep)
	if err != nil {
		return nil, nil, nil, err
	}
	return ep, cl, withDialContext(ctx, ep), nil
}

// uploadSession opens an upload-pack session with the remote; an error
// because ctx ended is ctx's.
func (rm *remote) uploadSession(ctx context.Context, what string) (transport.UploadPackSession, error) {
	return openSession(ctx, rm, what, transport.Transport.NewUploadPackSession)
}

// receiveSession opens a receive-pack session with the remote; an error
// because ctx ended is ctx's.
func (rm *remote) receiveSession(ctx context.Context, what string) (transport.ReceivePackSession, error) {
	return openSession(ctx, rm, what, transport.Transport.NewReceivePackSession)
}

// openSession opens a session of rm's remote with open (one of the
// transport's session constructors), with ctx for the dial where go-git
// lets it (see client); what names the operation in errors.
func openSession[S any](ctx context.Context, rm *remote, what string, open func(transport.Transport, *transport.Endpoint, transport.AuthMethod) (S, error)) (S, error) {
	var zero S
	ep, cl, release, err := rm.client(ctx)
	if err != nil {
		return zero, rm.classify(what, err)
	}
	defer release()
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	sess, err := open(cl, ep, rm.auth)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return zero, cerr
		}
		return zero, rm.classify(what, err)
	}
	return sess, nil
}

// fresh reports whether a read may use the mirror as it is, asking the
// remote nothing: the mirror held the remote's refs less than maxAge ago.
// Never with maxAge 0.
func (rm *remote) fresh() bool {
	if rm.maxAge <= 0 {
		return false
	}
	rm.syncedMu.Lock()
	defer rm.syncedMu.Unlock()
	return !rm.synced.IsZero() && time.Since(rm.synced) < rm.maxAge
}

// markChanged records that the remote changed now: the mirror is no
// longer fresh, and syncs that asked before now do not make it so.
func (rm *remote) markChanged() {
	rm.syncedMu.Lock()
	defer rm.syncedMu.Unlock()
	rm.notBefore = time.Now()
	rm.synced = time.Time{}
}

// askedAfterChange reports whether a sync that asked the remote at t
// asked after the last markChanged.
func (rm *remote) askedAfterChange(t time.Time) bool {
	rm.syncedMu.Lock()
	defer rm.syncedMu.Unlock()
	return !t.Before(rm.notBefore)
}

// markSynced records that the mirror held the remote's refs at t, unless
// a later time is already recorded.
func (rm *remote) markSynced(t time.Time) {
	rm.syncedMu.Lock()
	defer rm.syncedMu.Unlock()
	if t.After(rm.synced) && !t.Before(rm.notBefore) {
		rm.synced = t
	}
}

func newRemote(u string, o Options) (*remote, error) {
	clean, urlAuth := splitURLCredentials(u)
	if _, err := transport.NewEndpoint(clean); err != nil {
		return nil, fmt.Errorf("invalid URL %q", redactURL(u))
	}
	rm := &remote{url: clean, redactedURL: redactURL(clean), auth: o.Auth, insecure: o.InsecureSkipTLS, caBundle: o.CABundle,
		maxAge: o.RemoteReadMaxAge, writes: writeGate{turn: make(chan struct{}, 1)}}
	if rm.auth == nil && urlAuth != nil {
		rm.auth = urlAuth
	}
	if urlAuth != nil {
		rm.secrets = append(rm.secrets, urlAuth.Password)
		if urlAuth.Password == "" {
			rm.secrets = append(rm.secrets, urlAuth.Username) // a token as user name
		}
	}
	switch a := rm.auth.(type) {
	case *githttp.BasicAuth:
		rm.secrets = append(rm.secrets, a.Password)
	case *githttp.TokenAuth:
		rm.secrets = append(rm.secrets, a.Token)
	}
	return rm, nil
}

// redact wraps err so that its message holds none of the credentials.
func (rm *remote) redact(err error) error {
	if err == nil {
		return nil
	}
	var secrets []string
	for _, s := range rm.secrets {
		if len(s) >= 3 {
			secrets = append(secrets, s)
		}
	}
	if len(secrets) == 0 {
		return err
	}
	return &redactedError{err: err, secrets: secrets}
}

type redactedError struct {
	err     error
	secrets []string
}

func (e *redactedError) Error() string {
	msg := e.err.Error()
	for _, s := range e.secrets {
		msg = strings.ReplaceAll(msg, s, "***")
	}
	return msg
}

func (e *redactedError) Unwrap() error { return e.err }

// classify wraps a transport error with the sentinel it matches.
func (rm *remote) classify(what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	sentinel := errUnavailable
	if errors.Is(err, transport.ErrRepositoryNotFound) {
		sentinel = errRepoNotFound
	}
	return fmt.Errorf("%w: %s: %w", sentinel, what, rm.redact(err))
}

// push sends pack (the objects written by t's plan, encoded by
// encodePack; nil when t only deletes) and the ref updates of t in one
// push whose commands carry the expected old values, atomic where the
// server supports it; each of t's keeps is a command from its value to
// the same value, so that the push lands only while they hold. It
// returns an error matching ErrRetry when a ref was not at its expected
// value.
// It reads no local storage, and is called holding no store lock.
func (rm *remote) push(ctx context.Context, pack []byte, t *txn) (err error) {
	sess, err := rm.receiveSession(ctx, "push to "+rm.redactedURL)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := sess.Close(); cerr != nil && err == nil {
			err = rm.classify("push to "+rm.redactedURL, cerr)
		}
	}()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if cerr := ctx.Err(); err != nil && cerr != nil {
		return cerr
	}
	if ferr := checkRemoteFormat(rm.redactedURL, ar, err); ferr != nil {
		return ferr
	}
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return rm.classify("push to "+rm.redactedURL, err)
	}
	current := map[plumbing.ReferenceName]plumbing.Hash{}
	if ar != nil {
		refs, err := ar.AllReferences()
		if err != nil {
			return rm.classify("push to "+rm.redactedURL, err)
		}
		iter, err := refs.IterReferences()
		if err != nil {
			return rm.classify("push to "+rm.redactedURL, err)
		}
		err = iter.ForEach(func(r *plumbing.Reference) error {
			if r.Type() == plumbing.HashReference {
				current[r.Name()] = r.Hash()
			}
			return nil
		})
		if err != nil {
			return rm.classify("push to "+rm.redactedURL, err)
		}
	}
	commands := append(slices.Clip(t.updates), t.keeps...)
	for _, u := range commands {
		if current[u.Name] != u.Old {
			return fmt.Errorf("%w: %s is %s on the remote, expected %s", refstore.ErrRetry, u.Name, refstore.HashOrNone(current[u.Name]), refstore.HashOrNone(u.Old))
		}
	}
	caps := capability.NewList()
	if ar != nil {
		caps = ar.Capabilities
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(caps)
	if len(commands) > 1 {
		if !caps.Supports(capability.Atomic) {
			return fmt.Errorf("%w: the remote does not support atomic pushes", errUnavailable)
		}
		_ = req.Capabilities.Set(capability.Atomic)
	}
	allDelete := true
	for _, u := range commands {
		req.Commands = append(req.Commands, &packp.Command{Name: u.Name, Old: u.Old, New: u.New})
		if !u.New.IsZero() {
			allDelete = false
		}
	}
	if allDelete && !caps.Supports(capability.DeleteRefs) {
		return fmt.Errorf("%w: the remote does not allow deleting refs", errUnavailable)
	}
	if !allDelete {
		// Encoded beforehand, under the store's lock: nothing here reads
		// the storage, and a transport that stops reading it blocks
		// nothing.
		req.Packfile = io.NopCloser(bytes.NewReader(pack))
	}
	rs, err := sess.ReceivePack(ctx, req)
	if cerr := ctx.Err(); err != nil && cerr != nil {
		return cerr
	}
	if err != nil {
		if rs != nil && rs.UnpackStatus == "ok" {
			return fmt.Errorf("%w: push rejected: %w", refstore.ErrRetry, rm.redact(err))
		}
		return rm.classify("push to "+rm.redactedURL, err)
	}
	if rs == nil {
		if req.Capabilities.Supports(capability.ReportStatus) {
			// Asked for a report and got none: whether the remote took
			// the push is unknown, and a write never claims it did.
			return fmt.Errorf("%w: push to %s: the remote sent no report of the push", errUnavailable, rm.redactedURL)
		}
		return nil
	}
	if rs.UnpackStatus != "ok" {
		return fmt.Errorf("push to %s: unpack error: %s", rm.redactedURL, rs.UnpackStatus)
	}
	reported := map[plumbing.ReferenceName]bool{}
	for _, cs := range rs.CommandStatuses {
		if cs.Status != "ok" {
			return fmt.Errorf("%w: push rejected: %s: %s", refstore.ErrRetry, cs.ReferenceName, cs.Status)
		}
		reported[cs.ReferenceName] = true
	}
	for _, c := range req.Commands {
		if !reported[c.Name] {
			return fmt.Errorf("%w: push to %s: the remote's report leaves out %s", errUnavailable, rm.redactedURL, c.Name)
		}
	}
	return nil
}

// mirrorPrefixes are the refs the local clone mirrors: refs/heads/*,
// refs/tags/* and refs/cad/* as the remote has them.
var mirrorPrefixes = []string{"refs/heads/", "refs/tags/", "refs/cad/"}

// lsRemote returns the refs of the remote that the local clone mirrors,
// as the remote advertises them. It holds no lock, and ends with ctx.
func (rm *remote) lsRemote(ctx context.Context) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	_, _, refs, closeSess, err := rm.uploadPack(ctx)
	if err != nil {
		return nil, err
	}
	closeSess()
	return refs, nil
}

// uploadPack opens an upload-pack session with the remote and asks it for
// its refs. It returns the session, what the remote advertised (nil for
// an empty repository), the mirrored refs among them, and closeSess, which
// ends the session. On an error the session is closed. Every step but
// opening the session ends with ctx (see client); an error because ctx
// ended is ctx's.
func (rm *remote) uploadPack(ctx context.Context) (transport.UploadPackSession, *packp.AdvRefs, map[plumbing.ReferenceName]plumbing.Hash, func(), error) {
	const what = "fetch from "
	sess, err := rm.uploadSession(ctx, what+rm.redactedURL)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	closeSess := func() { _ = sess.Close() }
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if cerr := ctx.Err(); err != nil && cerr != nil {
		closeSess()
		return nil, nil, nil, nil, cerr
	}
	refs := map[plumbing.ReferenceName]plumbing.Hash{}
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return sess, nil, refs, closeSess, nil
	case err != nil:
		closeSess()
		if ferr := checkRemoteFormat(rm.redactedURL, nil, err); ferr != nil {
			return nil, nil, nil, nil, ferr
		}
		return nil, nil, nil, nil, rm.classify(what+rm.redactedURL, err)
	}
	if err := checkRemoteFormat(rm.redactedURL, ar, nil); err != nil {
		closeSess()
		return nil, nil, nil, nil, err
	}
	for name, h := range ar.References {
		for _, p := range mirrorPrefixes {
			if strings.HasPrefix(name, p) {
				refs[plumbing.ReferenceName(name)] = h
			}
		}
	}
	return sess, ar, refs, closeSess, nil
}

// mirrors reports whether the local clone v holds exactly refs, the
// mirrored refs of the remote.
func mirrors(v *view, refs map[plumbing.ReferenceName]plumbing.Hash) (bool, error) {
	n := 0
	for _, p := range mirrorPrefixes {
		local, err := v.under(p)
		if err != nil {
			return false, err
		}
		for name, h := range local {
			if refs[name] != h {
				return false, nil
			}
		}
		n += len(local)
	}
	return n == len(refs), nil
}

func dedupe(hs []plumbing.Hash) []plumbing.Hash {
	seen := make(map[plumbing.Hash]bool, len(hs))
	out := hs[:0:0]
	for _, h := range hs {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}
