package apiserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// prEvent is a change of a PackageRevision as every watcher sees it.
type prEvent struct {
	typ string // ADDED, MODIFIED or DELETED
	obj *porchapi.PackageRevision
}

// hub fans the repository watches out to the HTTP watches.
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

// startWatch starts the watch of an open repository that feeds the hub;
// it runs until ctx is done or the repository is unregistered. e.stop
// ends it and returns once it has ended, so that a repository is never
// closed (or its directory removed) under a watch still reading it.
func (s *Server) startWatch(ctx context.Context, e *repoEntry) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.mu.Lock()
	old := e.stop
	e.stop = func() { cancel(); <-done }
	s.mu.Unlock()
	if old != nil {
		old()
	}
	go func() {
		defer close(done)
		s.watchRepo(wctx, e)
	}()
}

// watchRepo runs the engine's watch of one repository, restarting it with a
// growing delay when it fails, and publishes its events with the
// latest-revision label kept right: when the latest revision of a package
// changes, the revisions that gained or lost the label are published as
// MODIFIED too.
func (s *Server) watchRepo(ctx context.Context, e *repoEntry) {
	eng := s.engine(e.ns)
	delay := time.Second
	for ctx.Err() == nil {
		latest := map[string]int{}
		// With damaged refs left out, the revisions that could be read
		// (the latest labels of the others are what the damage hides).
		if revs, err := e.repo.List(ctx, repository.ListOptions{Lifecycles: []revision.Lifecycle{revision.LifecyclePublished, revision.LifecycleDeletionProposed}}); err == nil || repository.Damage(err) != nil {
			for _, r := range revs {
				k := r.Meta().Key
				if k.Revision > latest[k.Package] {
					latest[k.Package] = k.Revision
				}
			}
		}
		err := eng.Watch(ctx, []string{e.name}, repository.ListOptions{}, func(ev repository.Event) error {
			s.repoEvent(ctx, e, latest, ev)
			delay = time.Second
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, repository.ErrNotSupported) {
			s.log.Warn("repository cannot be watched", "namespace", e.ns, "repository", e.name, "err", err)
			return
		}
		s.log.Warn("repository watch failed; restarting", "namespace", e.ns, "repository", e.name, "err", err, "delay", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, defaultRepoWatchMaxDelay)
	}
}

// repoEvent publishes one repository event (and the latest-label changes it
// causes).
func (s *Server) repoEvent(ctx context.Context, e *repoEntry, latest map[string]int, ev repository.Event) {
	if ev.Type == repository.Deleted {
		// A revision that moved (approval deletes the proposal and adds the
		// published revision of the same workspace) keeps its object name:
		// for watchers it was modified, not deleted.
		if _, rev, err := s.getRevision(ctx, s.engine(e.ns), e.ns, porchapi.NameOf(ev.Revision.Meta().Key)); err == nil {
			ev = repository.Event{Type: repository.Modified, Revision: rev}
		}
	}
	m := ev.Revision.Meta()
	pkg := m.Key.Package
	newLatest := 0
	if l, err := s.engine(e.ns).Latest(ctx, e.name, pkg); err == nil {
		newLatest = l.Meta().Key.Revision
	}
	oldLatest := latest[pkg]
	latest[pkg] = newLatest
	isLatest := ev.Type != repository.Deleted && m.Lifecycle.IsPublished() &&
		m.Key.Revision > 0 && m.Key.Revision == newLatest
	obj, err := s.prObject(ctx, e.ns, e, ev.Revision, isLatest)
	if err != nil {
		// The content is gone (a deleted revision) or unreadable: publish
		// what the key says.
		o := porchapi.FromRevision(m, porchapi.RevisionOptions{Namespace: e.ns, Deployment: e.spec.Deployment, Latest: isLatest})
		obj = &o
	}
	s.hub.publish(prEvent{typ: string(ev.Type), obj: obj})
	if oldLatest == newLatest {
		return
	}
	for _, n := range []int{oldLatest, newLatest} {
		if n <= 0 || n == m.Key.Revision {
			continue
		}
		r, err := e.repo.Get(ctx, revision.Key{Package: pkg, Revision: n})
		if err != nil {
			continue
		}
		o, err := s.prObject(ctx, e.ns, e, r, n == newLatest && r.Meta().Lifecycle.IsPublished())
		if err != nil {
			continue
		}
		s.hub.publish(prEvent{typ: string(repository.Modified), obj: o})
	}
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
	cur, err := s.listPRs(ctx, rq, rq.ns, lo)
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
