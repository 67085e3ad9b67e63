package apiserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository"
)

// prEvent is a change of a PackageRevision as every watcher sees it.
type prEvent struct {
	typ string // ADDED, MODIFIED or DELETED
	obj *porchapi.PackageRevision
}

// hub fans the changes the poller finds out to the HTTP watches.
type hub struct {
	mu   sync.Mutex
	subs map[*hubSub]struct{}
	// recent holds the resourceVersions of the last recentRVs objects
	// published (ring at next), so that a watch may resume from the
	// resourceVersion of an object it saw deleted.
	recent map[string]int
	ring   []string
	next   int
}

// recentRVs is how many published resourceVersions the hub remembers.
const recentRVs = 4096

type hubSub struct {
	ns string // "" for every namespace
	ch chan prEvent
}

// hubBuffer is how many events an HTTP watch may fall behind before it is
// ended (the client watches again).
const hubBuffer = 1024

func newHub() *hub {
	return &hub{subs: map[*hubSub]struct{}{}, recent: map[string]int{}, ring: make([]string, recentRVs)}
}

// published reports whether an object with resourceVersion rv was
// published lately.
func (h *hub) published(rv string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.recent[rv] > 0
}

// watched reports whether any watch is subscribed.
func (h *hub) watched() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs) > 0
}

func (h *hub) subscribe(ns string) *hubSub {
	sub := &hubSub{ns: ns, ch: make(chan prEvent, hubBuffer)}
	h.mu.Lock()
	h.subs[sub] = struct{}{}
	h.mu.Unlock()
	return sub
}

func (h *hub) unsubscribe(sub *hubSub) {
	h.mu.Lock()
	if _, ok := h.subs[sub]; ok {
		delete(h.subs, sub)
		close(sub.ch)
	}
	h.mu.Unlock()
}

func (h *hub) publish(ev prEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rv := ev.obj.ResourceVersion; rv != "" {
		if old := h.ring[h.next]; old != "" {
			if h.recent[old]--; h.recent[old] <= 0 {
				delete(h.recent, old)
			}
		}
		h.ring[h.next] = rv
		h.recent[rv]++
		h.next = (h.next + 1) % len(h.ring)
	}
	for sub := range h.subs {
		if sub.ns != "" && sub.ns != ev.obj.Namespace {
			continue
		}
		select {
		case sub.ch <- ev:
		default:
			delete(h.subs, sub)
			close(sub.ch)
		}
	}
}

// pollLoop finds the changes of the registered repositories for package
// revision watches: every Options.GitPollInterval it polls each
// (pollRepo), a few at a time, and a repository a push webhook names at
// once, beside the passes, until ctx is done. It holds no repository
// open between polls: a repository is acquired from the pool for its
// poll, and a git repository on disk whose refs' files did not change is
// not opened at all.
func (s *Server) pollLoop(ctx context.Context) {
	t := time.NewTicker(s.opts.GitPollInterval)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { // the repositories push webhooks name, beside the passes
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case e := <-s.pushed:
				s.pollRepo(ctx, e)
			}
		}
	}()
	for {
		s.pollPass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
	}
}

// pollPass polls every registered repository that opens, a few at a
// time, and returns when they are done.
func (s *Server) pollPass(ctx context.Context) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, defaultListConcurrency)
	for _, e := range s.entries("") {
		if e.openErr() != nil {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s.pollRepo(ctx, e)
		}()
	}
	wg.Wait()
}

// pollRepo reads the Version of e's repository and, when it changed since
// the last poll (or the repository has none), its listing, and publishes
// what changed since the last poll's listing: ADDED, MODIFIED (a revision
// that moved, as an approval moves a proposal, keeps its name; one that
// gained or lost the latest-revision label) and DELETED. The first poll
// of a registration publishes each of its objects as ADDED (a watcher
// that already sent one skips it), unless no watch is subscribed once
// the repository was listed (pollBaseline). A failed poll is logged and
// tried again by the next.
func (s *Server) pollRepo(ctx context.Context, e *repoEntry) {
	e.pollMu.Lock()
	defer e.pollMu.Unlock()
	ctx, release := withScope(ctx, s.pool)
	defer release()
	v, hasVersion, err := s.version(ctx, e)
	if err != nil {
		s.log.Debug("poll: version failed", "namespace", e.ns, "repository", e.name, "err", err)
		return
	}
	if hasVersion && e.polled && v == e.pollVer {
		return
	}
	if !e.polled && s.pollBaseline(ctx, e, v) {
		return
	}
	revs, ok, err := s.listing(ctx, e, true)
	if !ok {
		revs, err = s.listRepository(ctx, e, "")
		if err == nil || repository.Damage(err) != nil {
			derr := err
			err = loadAll(ctx, revs, func(ctx context.Context, i int, lr listedRevision) error {
				o, err := s.prObject(ctx, lr.ns, lr.e, lr.rev, lr.latest)
				revs[i].obj = o
				return err
			})
			if err == nil {
				err = derr
			}
		}
	}
	if err != nil && repository.Damage(err) == nil {
		if ctx.Err() == nil {
			s.log.Warn("poll: list failed", "namespace", e.ns, "repository", e.name, "err", err)
		}
		return
	}
	now := make(map[string]*porchapi.PackageRevision, len(revs))
	for _, lr := range revs {
		now[lr.obj.Name] = lr.obj
	}
	for _, name := range slices.Sorted(maps.Keys(now)) {
		o := now[name]
		switch old, had := e.pollObjs[name]; {
		case !had:
			s.hub.publish(prEvent{typ: string(repository.Added), obj: o})
		case fingerprint(old) != fingerprint(o):
			s.hub.publish(prEvent{typ: string(repository.Modified), obj: o})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(e.pollObjs)) {
		if _, ok := now[name]; !ok {
			s.hub.publish(prEvent{typ: string(repository.Deleted), obj: e.pollObjs[name]})
		}
	}
	e.polled, e.pollVer, e.pollObjs = true, v, now
}

// pollBaseline takes the first poll's baseline of e's repository, at
// Version v, from its revisions' metadata alone (no file is read) and
// publishes nothing, when no watch is subscribed once they are listed; it
// reports whether it did. That misses no one: a watch subscribed later
// lists the repository itself, at that state or a newer one, and the
// next polls publish what changed since the baseline. At a cold start
// (every registration polled for the first time, nobody watching yet)
// this spares the poller building every revision's object, and a watcher
// that comes meanwhile the events it already has. An object in the
// baseline carries what its metadata gives (name, labels, spec and
// resourceVersion; no Kptfile fields) until a listing replaces it, so a
// DELETED event for it sends that.
func (s *Server) pollBaseline(ctx context.Context, e *repoEntry, v string) bool {
	if s.hub.watched() {
		return false
	}
	revs, err := s.listRepository(ctx, e, "")
	if err != nil || s.hub.watched() {
		return false // a damaged or failed list, or a watch came: the full poll
	}
	objs := make(map[string]*porchapi.PackageRevision, len(revs))
	for _, lr := range revs {
		o := porchapi.FromRevision(lr.rev.Meta(), porchapi.RevisionOptions{
			Namespace: lr.ns, Deployment: e.spec.Deployment, Latest: lr.latest})
		objs[o.Name] = &o
	}
	e.polled, e.pollVer, e.pollObjs = true, v, objs
	return true
}

// issuedRV reports whether rv, which names no remembered list, is a
// resourceVersion a watch of package revisions may start from: empty,
// "0", the form of a list's resourceVersion (one forgotten since), or the
// resourceVersion of an object of cur or of one published lately (an
// informer resumes from the last object it saw).
func (s *Server) issuedRV(rv string, cur []*porchapi.PackageRevision) bool {
	if rv == "" || rv == "0" || isListRV(rv) {
		return true
	}
	for _, o := range cur {
		if o.ResourceVersion == rv {
			return true
		}
	}
	return s.hub.published(rv)
}

// isListRV reports whether rv has the form of the resourceVersion of a
// list (snapshots.put).
func isListRV(rv string) bool {
	if len(rv) != 25 || rv[0] != 'l' {
		return false
	}
	for _, c := range rv[1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// fingerprint says whether a watcher has already seen this state of an
// object.
func fingerprint(pr *porchapi.PackageRevision) string {
	if porchapi.IsLatest(pr) {
		return pr.ResourceVersion + "+latest"
	}
	return pr.ResourceVersion
}

// snapshots remembers what recent lists returned, keyed by the
// resourceVersion they reported, so that a watch from that resourceVersion
// sends only what changed since (as kubectl get --watch expects).
type snapshots struct {
	mu    sync.Mutex
	max   int
	order []string
	byRV  map[string]map[string]*porchapi.PackageRevision
}

func newSnapshots(max int) *snapshots {
	return &snapshots{max: max, byRV: map[string]map[string]*porchapi.PackageRevision{}}
}

func objKey(ns, name string) string { return ns + "/" + name }

// put records a list and returns its resourceVersion: a digest of the
// listed names and fingerprints.
func (s *snapshots) put(objs []*porchapi.PackageRevision) string {
	m := make(map[string]*porchapi.PackageRevision, len(objs))
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		k := objKey(o.Namespace, o.Name)
		m[k] = o
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k + "=" + fingerprint(m[k]) + "\n"))
	}
	rv := "l" + hex.EncodeToString(h.Sum(nil))[:24]
	s.keep(rv, m)
	return rv
}

// keep records m under rv unless it is recorded (a list served from the
// list cache names the snapshot it was built with, which may have been
// forgotten since).
func (s *snapshots) keep(rv string, m map[string]*porchapi.PackageRevision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byRV[rv]; ok {
		return
	}
	s.byRV[rv] = m
	s.order = append(s.order, rv)
	if len(s.order) > s.max {
		delete(s.byRV, s.order[0])
		s.order = s.order[1:]
	}
}

func (s *snapshots) get(rv string) (map[string]*porchapi.PackageRevision, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.byRV[rv]
	return m, ok
}

// watch streams PackageRevision events: first the difference between the
// list lo.resourceVersion names and now (every object as ADDED when it names
// no recent list), then the changes the repositories report.
func (p *prImpl) watch(ctx context.Context, rq *request, lo *listOptions, send func(watchEvent) error) error {
	s := p.s
	sub := s.hub.subscribe(rq.ns)
	defer s.hub.unsubscribe(sub)
	// The repositories of the first list are held only while it is
	// built: a watch that lasts an hour holds none open.
	lctx, release := withScope(ctx, s.pool)
	cur, err := s.listPRs(lctx, rq, rq.ns, lo)
	release()
	if err != nil {
		return err
	}
	base, known := s.snaps.get(lo.resourceVersion)
	if !known && !s.issuedRV(lo.resourceVersion, cur) {
		return errBadRequest("invalid resourceVersion %q: it is not a resourceVersion this server issued for packagerevisions (list or watch without one to start afresh)", lo.resourceVersion)
	}
	sent := map[string]string{} // object key → fingerprint sent
	if lo.sendInitial {
		known = false
	}
	if known {
		for k, o := range base {
			if lo.matches(rq.def, o) {
				sent[k] = fingerprint(o)
			}
		}
	}
	now := map[string]bool{}
	for _, o := range cur {
		k := objKey(o.Namespace, o.Name)
		now[k] = true
		fp, had := sent[k]
		switch {
		case !had:
			err = send(watchEvent{typ: "ADDED", obj: o})
		case fp != fingerprint(o):
			err = send(watchEvent{typ: "MODIFIED", obj: o})
		}
		if err != nil {
			return err
		}
		sent[k] = fingerprint(o)
	}
	for k := range sent {
		if !now[k] {
			if err := send(watchEvent{typ: "DELETED", obj: base[k]}); err != nil {
				return err
			}
			delete(sent, k)
		}
	}
	if err := send(watchEvent{}); err != nil {
		return err
	}
	if lo.sendInitial {
		bm := &metav1.ObjectMeta{ResourceVersion: s.snaps.put(cur),
			Annotations: map[string]string{"k8s.io/initial-events-end": "true"}}
		if err := send(watchEvent{typ: "BOOKMARK", obj: bm}); err != nil {
			return err
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-sub.ch:
			if !ok {
				return nil // fell behind: the client watches again
			}
			o := ev.obj
			k := objKey(o.Namespace, o.Name)
			fp, had := sent[k]
			match := ev.typ != string(repository.Deleted) && lo.matches(rq.def, o)
			var err error
			switch {
			case !match && had:
				err = send(watchEvent{typ: "DELETED", obj: o})
				delete(sent, k)
			case match && !had:
				err = send(watchEvent{typ: "ADDED", obj: o})
				sent[k] = fingerprint(o)
			case match && fp != fingerprint(o):
				err = send(watchEvent{typ: "MODIFIED", obj: o})
				sent[k] = fingerprint(o)
			}
			if err != nil {
				return err
			}
		}
	}
}
