package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Sharding (Options.Shards) shares the Repositories among the replicas.
//
// Every Repository belongs to one of Options.Shards shards, by a hash of
// its namespace/name that never changes. Each shard has a Lease,
// <id>-shard-<i>, and a replica reconciles the objects of a shard only
// while it holds that shard's Lease, exactly as a leader holds the leader
// election's Lease: it renews the Lease every RetryPeriod, and it stops
// when a renewal has not succeeded within RenewDeadline of being sent,
// while any other replica takes the Lease over only after seeing it
// unchanged for LeaseDuration (> RenewDeadline), or once its holder
// released it, and only with a compare-and-swap on the version it saw.
// So a shard is held by at most one replica at any instant, whatever the
// network or the API server do: the argument is client-go's for leader
// election, once per shard (see sharder.tick).
//
// Which replica should hold a shard is decided by rendezvous hashing of
// the shard over the live replicas; a replica is live while its member
// Lease, <id>-member-<identity>, renewed every RetryPeriod, is seen to
// change within LeaseDuration. A replica that is not a shard's choice
// releases it (after the reconciles of the shard in flight have ended),
// and the chosen one acquires it. So a replica that joins takes only the
// shards whose choice it becomes (about Shards/N), and one that dies
// leaves only its own, each to the replica that is the shard's next
// choice. A new holder starts the shard's PackageRevision cache and,
// once it synced, enqueues every object of the shard (prcache.go).

// Labels and annotations of the sharding Leases.
const (
	// leaseGroupLabel is on every Lease of a group of replicas (its value
	// is Options.LeaderElectionID).
	leaseGroupLabel = "cad.configasdata.dev/lease-group"
	// leaseRoleLabel says what a Lease of the group is: roleMember or
	// roleShard.
	leaseRoleLabel = "cad.configasdata.dev/lease-role"
	// shardsAnnotation is on a member Lease: the replica's shard count.
	shardsAnnotation = "cad.configasdata.dev/shards"

	roleMember = "member"
	roleShard  = "shard"
)

// errShardLost is what a replica stops with when it lost a shard (its
// Lease could not be renewed in time) and the reconciles of the shard in
// flight did not end before another replica could take the shard over.
var errShardLost = errors.New("sharding: a shard was lost with reconciles still running")

// shardOf returns the shard, in [0, n), of key (a Repository's
// namespace/name).
func shardOf(key string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(mix64(h.Sum64()) % uint64(n))
}

// mix64 is splitmix64's finalizer: it spreads the bits of an FNV hash of
// short, similar strings over the whole word.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// choose returns the member that should hold shard (rendezvous hashing:
// the member with the highest score for it), "" when there is none.
// Adding a member moves to it exactly the shards it scores highest on;
// removing one moves only its own shards.
func choose(shard int, members []string) string {
	best, bestScore := "", uint64(0)
	for _, m := range members {
		h := fnv.New64a()
		h.Write([]byte(m))
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(shard)))
		s := mix64(h.Sum64())
		if best == "" || s > bestScore || s == bestScore && m < best {
			best, bestScore = m, s
		}
	}
	return best
}

// newIdentity returns a replica identity: the host name (a Pod's name)
// and a random suffix, so that a restarted process never passes for the
// one before it, in the characters a Lease name allows.
func newIdentity() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, host)
	host = strings.Trim(host, "-")
	if len(host) > 40 {
		host = host[:40]
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	if host == "" {
		host = "replica"
	}
	return host + "-" + hex.EncodeToString(b[:])
}

// leaseStore keeps the Leases of one group of replicas. Its methods are
// safe for concurrent use.
type leaseStore interface {
	// list returns the group's Leases.
	list(ctx context.Context) ([]coordinationv1.Lease, error)
	// create creates l (name, labels and spec) and fills in what the
	// store set; it fails with an AlreadyExists error when l exists.
	create(ctx context.Context, l *coordinationv1.Lease) error
	// update replaces l if its resourceVersion is still l's and fills in
	// the new one; it fails with a Conflict error when l changed and a
	// NotFound error when l is gone.
	update(ctx context.Context, l *coordinationv1.Lease) error
	// remove deletes l if its resourceVersion is still l's.
	remove(ctx context.Context, l *coordinationv1.Lease) error
}

// kubeLeases is the leaseStore of namespace ns of an API server, read
// and written directly (never through a cache).
type kubeLeases struct {
	c         client.Client
	ns, group string
}

// newKubeLeases returns the Leases of group in namespace ns of the API
// server cfg points at.
func newKubeLeases(cfg *rest.Config, ns, group string) (*kubeLeases, error) {
	s := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(s); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	return &kubeLeases{c: c, ns: ns, group: group}, nil
}

func (k *kubeLeases) list(ctx context.Context) ([]coordinationv1.Lease, error) {
	var l coordinationv1.LeaseList
	if err := k.c.List(ctx, &l, client.InNamespace(k.ns), client.MatchingLabels{leaseGroupLabel: k.group}); err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (k *kubeLeases) create(ctx context.Context, l *coordinationv1.Lease) error {
	l.Namespace = k.ns
	return k.c.Create(ctx, l)
}

func (k *kubeLeases) update(ctx context.Context, l *coordinationv1.Lease) error {
	l.Namespace = k.ns
	return k.c.Update(ctx, l)
}

func (k *kubeLeases) remove(ctx context.Context, l *coordinationv1.Lease) error {
	rv := l.ResourceVersion
	return client.IgnoreNotFound(k.c.Delete(ctx, l, client.Preconditions{ResourceVersion: &rv}))
}

// shardItem is an object of a sharded kind and the key (namespace/name of
// a Repository, usually) whose shard it belongs to.
type shardItem struct {
	req reconcile.Request
	key string
}

// shardKind is one sharded controller: how to list its objects and, once
// the controller started, its queue.
type shardKind struct {
	name string
	list func(ctx context.Context) ([]shardItem, error)
	// inherit, when set, is called for each object of a shard just
	// acquired, before it is queued.
	inherit func(shardItem)
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// hold is one tenure of a shard by this replica.
type hold struct {
	shard int
	// ctx is cancelled when the tenure ends; the reconciles of the shard
	// run under it.
	ctx    context.Context
	cancel context.CancelFunc
	lease  *coordinationv1.Lease // as last written
	// validUntil is when the tenure ends unless the Lease is renewed:
	// RenewDeadline after the start of the last tick whose renewal
	// succeeded.
	validUntil time.Time
	timer      *time.Timer
	// ready is false until the shard's PackageRevision cache synced
	// (always true without prCaches): no reconcile of the shard starts
	// before.
	ready    bool
	inflight int
	// releasing stops new reconciles; the Lease is released once
	// inflight is 0.
	releasing bool
	// dieAt is when the replica must have stopped if the tenure ended
	// with reconciles in flight.
	dieAt time.Time
}

// observation is when this replica first saw a Lease at a version.
type observation struct {
	rv    string
	since time.Time
}

// sharder holds the shards of one replica (see the comment at the top of
// this file). Its methods are safe for concurrent use; a nil *sharder
// owns everything (sharding off).
type sharder struct {
	store  leaseStore
	group  string
	self   string
	shards int
	// leaseDuration, renewDeadline and retryPeriod are as in leader
	// election: renewDeadline < leaseDuration, retryPeriod < renewDeadline.
	leaseDuration, renewDeadline, retryPeriod time.Duration
	// keepOnStop makes Start return without releasing the Leases, as a
	// killed process does (tests).
	keepOnStop bool
	// caches, when set, is started for each shard acquired, under the
	// tenure's context, before any reconcile of the shard (prcache.go).
	caches *prCaches
	now    func() time.Time
	log    logr.Logger

	mu     sync.Mutex
	holds  []*hold // by shard; nil when not held
	lost   []*hold // ended with reconciles in flight
	obs    map[string]observation
	member *coordinationv1.Lease
	kinds  []*shardKind
	wake   chan struct{}
	fatal  chan error
	mixed  bool // a live member has another shard count
}

// newSharder returns the sharder of replica self in group, over n shards
// whose Leases are in store. It starts nothing: see Start.
func newSharder(store leaseStore, group, self string, n int, leaseDuration, renewDeadline, retryPeriod time.Duration, log logr.Logger) (*sharder, error) {
	switch {
	case n <= 0:
		return nil, fmt.Errorf("sharding: %d shards", n)
	case !(retryPeriod > 0 && retryPeriod < renewDeadline && renewDeadline < leaseDuration):
		return nil, fmt.Errorf("sharding: need 0 < retry period (%s) < renew deadline (%s) < lease duration (%s)",
			retryPeriod, renewDeadline, leaseDuration)
	case len(group) > 63:
		return nil, fmt.Errorf("sharding: lease group %q is longer than a label value (63)", group)
	}
	return &sharder{store: store, group: group, self: self, shards: n,
		leaseDuration: leaseDuration, renewDeadline: renewDeadline, retryPeriod: retryPeriod,
		now: time.Now, log: log, holds: make([]*hold, n), obs: map[string]observation{},
		wake: make(chan struct{}, 1), fatal: make(chan error, 1)}, nil
}

func (s *sharder) shardLeaseName(i int) string { return fmt.Sprintf("%s-shard-%d", s.group, i) }
func (s *sharder) memberLeaseName() string     { return s.group + "-member-" + s.self }

// NeedLeaderElection: every replica runs its sharder.
func (s *sharder) NeedLeaderElection() bool { return false }

// Start holds shards until ctx is done, then releases them (after their
// reconciles ended) and leaves the group. It returns errShardLost when
// a shard was lost with reconciles that did not end in time: the replica
// must stop then, as a leader that lost its Lease does.
func (s *sharder) Start(ctx context.Context) error {
	s.log.Info("sharding", "identity", s.self, "shards", s.shards)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.stop()
			return nil
		case err := <-s.fatal:
			s.stop()
			return err
		case <-t.C:
		case <-s.wake:
			if !t.Stop() {
				<-t.C
			}
		}
		began := time.Now()
		tctx, cancel := context.WithTimeout(ctx, s.renewDeadline-s.retryPeriod)
		acquired := s.tick(tctx)
		cancel()
		if len(acquired) > 0 {
			go s.enqueue(ctx, acquired)
		}
		t.Reset(max(0, s.retryPeriod-time.Since(began)))
	}
}

// tick is one round: renew the member Lease, look at the group's Leases,
// renew or release the shards held, acquire the shards this replica is
// the choice for, and return those acquired.
//
// Why a shard is never held twice: every tenure of this replica ends at
// validUntil, which is RenewDeadline after the start (sent) of the last
// tick whose member and shard renewals both succeeded; reconciles then
// stop (their context is cancelled) and the replica stops altogether if
// they have not ended by (LeaseDuration+RenewDeadline)/2 after sent. Another
// replica takes an unreleased shard over only with a compare-and-swap
// on a Lease version it first saw at least LeaseDuration before, after
// the version landed, so after sent + LeaseDuration; and a release is
// written only once the shard's reconciles ended. Clocks are only
// compared with themselves (monotonic time), never across replicas.
func (s *sharder) tick(ctx context.Context) (acquired []int) {
	sent := s.now()
	memberOK := s.renewMember(ctx)
	leases, err := s.store.list(ctx)
	seen := s.now()
	if err != nil {
		s.log.Error(err, "sharding: listing the Leases")
	}
	byName := map[string]*coordinationv1.Lease{}
	for i := range leases {
		byName[leases[i].Name] = &leases[i]
	}

	s.mu.Lock()
	if err == nil {
		s.observe(leases, seen)
	}
	if l := byName[s.memberLeaseName()]; s.member == nil && l != nil {
		// Made by an earlier try whose answer was lost, or changed: this
		// replica's own, renewed at the next tick.
		s.member = l.DeepCopy()
	}
	live, mixed := s.liveMembers(leases, seen)
	if err == nil {
		if mixed && !s.mixed {
			s.log.Error(nil, "sharding: live replicas disagree on the number of shards; none is acquired until they agree (restart them with one --shards)")
		}
		s.mixed = mixed
	}
	type job struct {
		i     int
		h     *hold
		lease *coordinationv1.Lease
	}
	var renew, release, acquire []job
	for i := range s.shards {
		h := s.holds[i]
		if h != nil {
			// Release a shard another live replica should hold (or any,
			// when the group is mixed), once its reconciles ended.
			if err == nil && !h.releasing && (s.mixed || choose(i, live) != s.self) {
				h.releasing = true
				s.log.Info("sharding: releasing shard", "shard", i, "to", choose(i, live))
			}
			if h.releasing && h.inflight == 0 {
				release = append(release, job{i, h, h.lease.DeepCopy()})
			} else if memberOK {
				renew = append(renew, job{i, h, h.lease.DeepCopy()})
			}
			continue
		}
		if err != nil || !memberOK || s.mixed {
			continue
		}
		l := byName[s.shardLeaseName(i)]
		if s.mayAcquire(i, l, live, seen) {
			var cp *coordinationv1.Lease
			if l != nil {
				cp = l.DeepCopy()
			}
			acquire = append(acquire, job{i, nil, cp})
		}
	}
	s.mu.Unlock()

	// The writes go out side by side: a tick lasts about one round trip
	// whatever the number of shards held, and a slow API server costs
	// the renew deadline once, not once per shard.
	var wg sync.WaitGroup
	var amu sync.Mutex
	for _, j := range renew {
		wg.Go(func() { s.renewShard(ctx, j.i, j.h, j.lease, sent) })
	}
	for _, j := range release {
		wg.Go(func() { s.releaseShard(ctx, j.i, j.h, j.lease) })
	}
	for _, j := range acquire {
		wg.Go(func() {
			if s.acquireShard(ctx, j.i, j.lease, sent) {
				amu.Lock()
				acquired = append(acquired, j.i)
				amu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(acquired)
	if err == nil {
		s.collect(ctx, leases, seen)
	}
	return acquired
}

// renewShard renews the Lease l of the tenure h of shard i, extending
// h to RenewDeadline after sent, or ends h when the Lease changed under
// it.
func (s *sharder) renewShard(ctx context.Context, i int, h *hold, l *coordinationv1.Lease, sent time.Time) {
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	err := s.store.update(ctx, l)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.holds[i] != h:
		// Lost meanwhile: if the write landed, the Lease names this
		// replica, which mayAcquire takes back at once.
	case err == nil:
		h.lease = l
		s.extend(h, sent)
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		s.end(h, "its Lease changed under it")
	default:
		s.log.Error(err, "sharding: renewing a shard's Lease", "shard", i)
	}
}

// releaseShard writes the Lease l of the tenure h of shard i free, and
// ends h; h has no reconcile in flight and starts none.
func (s *sharder) releaseShard(ctx context.Context, i int, h *hold, l *coordinationv1.Lease) {
	l.Spec.HolderIdentity = nil
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	err := s.store.update(ctx, l)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holds[i] == h && (err == nil || apierrors.IsConflict(err) || apierrors.IsNotFound(err)) {
		s.end(h, "released")
	} else if err != nil {
		s.log.Error(err, "sharding: releasing a shard's Lease", "shard", i)
	}
}

// acquireShard takes shard i by a compare-and-swap on its Lease l as
// seen (nil: by creating it) and reports whether it did; the tenure is
// valid until RenewDeadline after sent.
func (s *sharder) acquireShard(ctx context.Context, i int, l *coordinationv1.Lease, sent time.Time) bool {
	now := metav1.NewMicroTime(time.Now())
	secs := int32((s.leaseDuration + time.Second - 1) / time.Second)
	var err error
	if l == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: s.shardLeaseName(i),
			Labels: map[string]string{leaseGroupLabel: s.group, leaseRoleLabel: roleShard}}}
		l.Spec = coordinationv1.LeaseSpec{HolderIdentity: &s.self, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}
		err = s.store.create(ctx, l)
	} else {
		if holderOf(l) != s.self {
			n := int32(1)
			if l.Spec.LeaseTransitions != nil {
				n += *l.Spec.LeaseTransitions
			}
			l.Spec.LeaseTransitions = &n
			l.Spec.AcquireTime = &now
		}
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &s.self, &secs, &now
		err = s.store.update(ctx, l)
	}
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			s.log.Error(err, "sharding: acquiring a shard's Lease", "shard", i)
		}
		return false
	}
	s.mu.Lock()
	hctx, cancel := context.WithCancel(context.Background())
	h := &hold{shard: i, ctx: hctx, cancel: cancel, lease: l, ready: s.caches == nil}
	s.holds[i] = h
	s.extend(h, sent)
	s.mu.Unlock()
	s.log.Info("sharding: acquired shard", "shard", i)
	return true
}

// mayAcquire reports whether this replica may and should take shard i,
// whose Lease is l (nil: none yet), now: the Lease must be free (never
// made, released, expired, or naming this replica, which holds no tenure
// of it), and this replica the shard's choice among live, or the shard
// free for another LeaseDuration (its choice does not take it). Called
// with s.mu held.
func (s *sharder) mayAcquire(i int, l *coordinationv1.Lease, live []string, now time.Time) bool {
	var freeSince time.Time
	o := s.obs[s.shardLeaseName(i)]
	switch {
	case l == nil:
		freeSince = o.since
	case holderOf(l) == s.self:
		return true
	case holderOf(l) == "":
		freeSince = o.since
	default:
		d := s.durationOf(l)
		if now.Sub(o.since) < d {
			return false
		}
		freeSince = o.since.Add(d)
	}
	return choose(i, live) == s.self || !freeSince.IsZero() && now.Sub(freeSince) >= s.leaseDuration
}

// durationOf is the lease duration of l: the longer of its own and this
// replica's.
func (s *sharder) durationOf(l *coordinationv1.Lease) time.Duration {
	d := s.leaseDuration
	if l.Spec.LeaseDurationSeconds != nil {
		d = max(d, time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second)
	}
	return d
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// observe records the versions of leases seen at now, and the absence of
// the shard Leases not made yet. Called with s.mu held.
func (s *sharder) observe(leases []coordinationv1.Lease, now time.Time) {
	names := map[string]bool{}
	for _, l := range leases {
		names[l.Name] = true
		if o, ok := s.obs[l.Name]; !ok || o.rv != l.ResourceVersion {
			s.obs[l.Name] = observation{rv: l.ResourceVersion, since: now}
		}
	}
	for i := range s.shards {
		n := s.shardLeaseName(i)
		if names[n] {
			continue
		}
		names[n] = true
		if o, ok := s.obs[n]; !ok || o.rv != "" {
			s.obs[n] = observation{since: now}
		}
	}
	for n := range s.obs {
		if !names[n] {
			delete(s.obs, n)
		}
	}
}

// liveMembers returns the live members (this replica always among them),
// sorted, and whether one of them has another shard count. Called with
// s.mu held.
func (s *sharder) liveMembers(leases []coordinationv1.Lease, now time.Time) (live []string, mixed bool) {
	live = []string{s.self}
	for _, l := range leases {
		h := holderOf(&l)
		if l.Labels[leaseRoleLabel] != roleMember || h == "" || h == s.self {
			continue
		}
		if now.Sub(s.obs[l.Name].since) >= s.durationOf(&l) {
			continue
		}
		live = append(live, h)
		if l.Annotations[shardsAnnotation] != strconv.Itoa(s.shards) {
			mixed = true
		}
	}
	slices.Sort(live)
	return live, mixed
}

// collect deletes the member Leases of replicas gone for two lease
// durations (they died without leaving).
func (s *sharder) collect(ctx context.Context, leases []coordinationv1.Lease, now time.Time) {
	for i := range leases {
		l := &leases[i]
		if l.Labels[leaseRoleLabel] != roleMember || holderOf(l) == s.self {
			continue
		}
		s.mu.Lock()
		gone := now.Sub(s.obs[l.Name].since) >= 2*s.durationOf(l)
		s.mu.Unlock()
		if gone {
			if err := s.store.remove(ctx, l); err != nil && !apierrors.IsConflict(err) {
				s.log.Error(err, "sharding: removing a dead replica's member Lease", "lease", l.Name)
			}
		}
	}
}

// renewMember creates or renews this replica's member Lease and reports
// whether that succeeded.
func (s *sharder) renewMember(ctx context.Context) bool {
	secs := int32((s.leaseDuration + time.Second - 1) / time.Second)
	now := metav1.NewMicroTime(time.Now())
	if s.member == nil {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: s.memberLeaseName(),
			Labels:      map[string]string{leaseGroupLabel: s.group, leaseRoleLabel: roleMember},
			Annotations: map[string]string{shardsAnnotation: strconv.Itoa(s.shards)}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &s.self, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}}
		if err := s.store.create(ctx, l); err != nil {
			s.log.Error(err, "sharding: creating the member Lease")
			return false
		}
		s.member = l
		return true
	}
	l := s.member.DeepCopy()
	l.Spec.RenewTime = &now
	if err := s.store.update(ctx, l); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			s.member = nil // made again at the next tick
		}
		s.log.Error(err, "sharding: renewing the member Lease")
		return false
	}
	s.member = l
	return true
}

// extend makes h valid until RenewDeadline after sent. Called with s.mu
// held.
func (s *sharder) extend(h *hold, sent time.Time) {
	h.validUntil = sent.Add(s.renewDeadline)
	d := h.validUntil.Sub(s.now())
	if h.timer == nil {
		h.timer = time.AfterFunc(d, s.expire)
	} else {
		h.timer.Reset(d)
	}
}

// end ends the tenure h: no reconcile of its shard starts, and those
// running have their context cancelled. Called with s.mu held.
func (s *sharder) end(h *hold, why string) {
	if s.holds[h.shard] != h {
		return
	}
	s.holds[h.shard] = nil
	h.cancel()
	if h.timer != nil {
		h.timer.Stop()
	}
	if why != "released" {
		s.log.Info("sharding: lost shard", "shard", h.shard, "why", why, "inflight", h.inflight)
	}
	if h.inflight > 0 {
		h.dieAt = h.validUntil.Add((s.leaseDuration - s.renewDeadline) / 2)
		s.lost = append(s.lost, h)
		time.AfterFunc(h.dieAt.Sub(s.now()), s.expire)
	}
}

// expire ends the tenures past their validity, and stops the replica
// (errShardLost) when a lost tenure's reconciles outlive their grace.
func (s *sharder) expire() {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.holds {
		if h != nil && !now.Before(h.validUntil) {
			s.end(h, "its Lease was not renewed within the renew deadline")
		}
	}
	s.lost = slices.DeleteFunc(s.lost, func(h *hold) bool { return h.inflight == 0 })
	for _, h := range s.lost {
		if !now.Before(h.dieAt) {
			select {
			case s.fatal <- fmt.Errorf("%w (shard %d, %d reconciles)", errShardLost, h.shard, h.inflight):
			default:
			}
		}
	}
}

// enter starts a reconcile of an object of key's shard. It returns
// false when this replica does not hold the shard (or is releasing it);
// otherwise a context that ends with the tenure (and ctx), and done,
// which the reconcile must call when it ends.
func (s *sharder) enter(ctx context.Context, key string) (context.Context, func(), bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.holds[shardOf(key, s.shards)]
	if h == nil || !h.ready || h.releasing || !s.now().Before(h.validUntil) {
		return nil, nil, false
	}
	h.inflight++
	rctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.ctx, cancel)
	return rctx, func() {
		stop()
		cancel()
		s.mu.Lock()
		h.inflight--
		wake := h.inflight == 0 && h.releasing
		s.mu.Unlock()
		if wake {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}, true
}

// owns reports whether this replica holds the shard of key now (always,
// for a nil s).
func (s *sharder) owns(key string) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.holds[shardOf(key, s.shards)]
	return h != nil && h.ready && !h.releasing && s.now().Before(h.validUntil)
}

// held returns the shards held now, sorted.
func (s *sharder) held() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for i, h := range s.holds {
		if h != nil {
			out = append(out, i)
		}
	}
	return out
}

// stop releases every shard once its reconciles ended (or its tenure
// did) and removes the member Lease; with keepOnStop it only drops the
// tenures, leaving the Leases to expire.
func (s *sharder) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), s.renewDeadline)
	defer cancel()
	s.mu.Lock()
	for _, h := range s.holds {
		if h != nil {
			h.releasing = true
		}
	}
	s.mu.Unlock()
	if s.keepOnStop {
		s.mu.Lock()
		for _, h := range s.holds {
			if h != nil {
				s.end(h, "released")
			}
		}
		s.mu.Unlock()
		return
	}
	for {
		s.mu.Lock()
		busy := false
		for _, h := range s.holds {
			if h != nil && h.inflight > 0 && s.now().Before(h.validUntil) {
				busy = true
			}
		}
		s.mu.Unlock()
		if !busy || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range s.shards {
		s.mu.Lock()
		h := s.holds[i]
		if h == nil {
			s.mu.Unlock()
			continue
		}
		valid := h.inflight == 0 && s.now().Before(h.validUntil)
		l := h.lease.DeepCopy()
		s.end(h, "released")
		s.mu.Unlock()
		if valid {
			l.Spec.HolderIdentity = nil
			if err := s.store.update(ctx, l); err != nil {
				s.log.Error(err, "sharding: releasing a shard's Lease", "shard", i)
			}
		}
	}
	if s.member != nil {
		if err := s.store.remove(ctx, s.member); err != nil {
			s.log.Error(err, "sharding: removing the member Lease")
		}
	}
}

// watch returns the source that hands kind's queue to the sharder when
// its controller starts; list returns the kind's objects with their
// shard keys, and inherit (optional) is told of each object of a shard
// just acquired.
func (s *sharder) watch(kind string, list func(context.Context) ([]shardItem, error), inherit func(shardItem)) source.Source {
	k := &shardKind{name: kind, list: list, inherit: inherit}
	s.mu.Lock()
	s.kinds = append(s.kinds, k)
	s.mu.Unlock()
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		s.mu.Lock()
		k.queue = q
		s.mu.Unlock()
		return nil
	})
}

// enqueue starts the caches of the shards just acquired (with prCaches)
// and makes them ready, then queues every object of those shards, in the
// controllers that started (the others queue everything when they
// start).
func (s *sharder) enqueue(ctx context.Context, shards []int) {
	if s.caches != nil {
		shards = s.startCaches(shards)
		if len(shards) == 0 {
			return
		}
	}
	want := map[int]bool{}
	for _, i := range shards {
		want[i] = true
	}
	s.mu.Lock()
	kinds := slices.Clone(s.kinds)
	s.mu.Unlock()
	n := 0
	for _, k := range kinds {
		s.mu.Lock()
		q := k.queue
		s.mu.Unlock()
		if q == nil {
			continue
		}
		items, err := k.list(ctx)
		if err != nil {
			s.log.Error(err, "sharding: listing the objects of acquired shards", "kind", k.name)
			continue
		}
		for _, it := range items {
			if !want[shardOf(it.key, s.shards)] {
				continue
			}
			if k.inherit != nil {
				k.inherit(it)
			}
			q.Add(it.req)
			n++
		}
	}
	s.log.Info("sharding: queued the objects of acquired shards", "shards", shards, "objects", n)
}

// startCaches starts the PackageRevision caches of shards, each under
// its tenure's context, side by side, and makes ready the tenures whose
// cache synced; it returns those shards. A cache that cannot be made
// stops the replica (errShardLost's way), since its shard would be held
// and never reconciled.
func (s *sharder) startCaches(shards []int) []int {
	var mu sync.Mutex
	var ready []int
	var wg sync.WaitGroup
	for _, i := range shards {
		s.mu.Lock()
		h := s.holds[i]
		s.mu.Unlock()
		if h == nil {
			continue
		}
		wg.Go(func() {
			err := s.caches.start(h.ctx, i)
			if err != nil {
				if h.ctx.Err() == nil {
					s.log.Error(err, "sharding: starting the cache of an acquired shard", "shard", i)
					select {
					case s.fatal <- err:
					default:
					}
				}
				return
			}
			s.mu.Lock()
			ok := s.holds[i] == h
			h.ready = ok
			s.mu.Unlock()
			if ok {
				mu.Lock()
				ready = append(ready, i)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(ready)
	return ready
}

// prLabel returns the shardLabel of the PackageRevisions of Repository
// repo in namespace ns and its value; "" without sharding (a nil s).
func (s *sharder) prLabel(ns, repo string) (key, value string) {
	if s == nil || s.caches == nil {
		return "", ""
	}
	return shardLabel(s.shards), strconv.Itoa(shardOf(repoKey(ns, repo), s.shards))
}

// gate returns next guarded by the sharder: a request is reconciled only
// while this replica holds the shard of key(req) ("" or an error from
// key: reconciled as is, for an object gone), under a context that ends
// with the tenure; a request of another replica's shard is dropped (its
// holder reconciles it).
func (s *sharder) gate(key func(context.Context, reconcile.Request) (string, error), next reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		k, err := key(ctx, req)
		if err != nil {
			return reconcile.Result{}, err
		}
		if k == "" {
			return next.Reconcile(ctx, req)
		}
		rctx, done, ok := s.enter(ctx, k)
		if !ok {
			return reconcile.Result{}, nil
		}
		defer done()
		return next.Reconcile(rctx, req)
	})
}

// repoKey is the shard key of Repository name in namespace ns.
func repoKey(ns, name string) string { return ns + "/" + name }

// keyOfRequest is the shard key of an object keyed by its own name (a
// Repository, a PackageVariantSet).
func keyOfRequest(_ context.Context, req reconcile.Request) (string, error) {
	return repoKey(req.Namespace, req.Name), nil
}

// keyOfObject returns the shard key function of kind obj: key(obj) for
// an object the cache has, "" for one gone.
func keyOfObject[T client.Object](c client.Reader, newObj func() T, key func(T) string) func(context.Context, reconcile.Request) (string, error) {
	return func(ctx context.Context, req reconcile.Request) (string, error) {
		o := newObj()
		if err := c.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, o); err != nil {
			if apierrors.IsNotFound(err) {
				return "", nil
			}
			return "", err
		}
		return key(o), nil
	}
}
