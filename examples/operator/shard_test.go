package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// memLeases is a leaseStore in memory with the API server's
// compare-and-swap on resourceVersion, shared by the replicas of a test.
type memLeases struct {
	mu     sync.Mutex
	rv     int
	leases map[string]coordinationv1.Lease
}

var leaseResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func newMemLeases() *memLeases { return &memLeases{leases: map[string]coordinationv1.Lease{}} }

func (m *memLeases) list(context.Context) ([]coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]coordinationv1.Lease, 0, len(m.leases))
	for _, l := range m.leases {
		out = append(out, *l.DeepCopy())
	}
	return out, nil
}

func (m *memLeases) create(_ context.Context, l *coordinationv1.Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.leases[l.Name]; ok {
		return apierrors.NewAlreadyExists(leaseResource, l.Name)
	}
	m.rv++
	l.ResourceVersion = strconv.Itoa(m.rv)
	m.leases[l.Name] = *l.DeepCopy()
	return nil
}

func (m *memLeases) update(_ context.Context, l *coordinationv1.Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.leases[l.Name]
	switch {
	case !ok:
		return apierrors.NewNotFound(leaseResource, l.Name)
	case cur.ResourceVersion != l.ResourceVersion:
		return apierrors.NewConflict(leaseResource, l.Name, errors.New("changed"))
	}
	m.rv++
	l.ResourceVersion = strconv.Itoa(m.rv)
	m.leases[l.Name] = *l.DeepCopy()
	return nil
}

func (m *memLeases) remove(_ context.Context, l *coordinationv1.Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.leases[l.Name]
	switch {
	case !ok:
		return nil
	case cur.ResourceVersion != l.ResourceVersion:
		return apierrors.NewConflict(leaseResource, l.Name, errors.New("changed"))
	}
	delete(m.leases, l.Name)
	return nil
}

// cutStore is one replica's view of a memLeases: while down, every call
// fails as an unreachable API server does; after a write lands, lag
// hides it from the replica (its answer is lost).
type cutStore struct {
	*memLeases
	down bool
	// lost makes the next successful write's answer an error, as a
	// request whose answer times out.
	lost bool
}

var errCut = errors.New("the API server is unreachable")

func (c *cutStore) list(ctx context.Context) ([]coordinationv1.Lease, error) {
	if c.down {
		return nil, errCut
	}
	return c.memLeases.list(ctx)
}

func (c *cutStore) create(ctx context.Context, l *coordinationv1.Lease) error {
	if c.down {
		return errCut
	}
	return c.answer(c.memLeases.create(ctx, l))
}

func (c *cutStore) update(ctx context.Context, l *coordinationv1.Lease) error {
	if c.down {
		return errCut
	}
	rv := l.ResourceVersion
	err := c.memLeases.update(ctx, l)
	if err == nil && c.lost {
		l.ResourceVersion = rv
	}
	return c.answer(err)
}

func (c *cutStore) remove(ctx context.Context, l *coordinationv1.Lease) error {
	if c.down {
		return errCut
	}
	return c.memLeases.remove(ctx, l)
}

func (c *cutStore) answer(err error) error {
	if err == nil && c.lost {
		return errCut
	}
	return err
}

// fakeClock is the simulated time of a test's replicas.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

func TestChooseSpreadsAndMovesOnlyAShare(t *testing.T) {
	const shards = 64
	members := []string{"a-1", "b-2", "c-3"}
	owner := func(ms []string) []string {
		out := make([]string, shards)
		for i := range shards {
			out[i] = choose(i, ms)
		}
		return out
	}
	before := owner(members)
	count := map[string]int{}
	for _, m := range before {
		count[m]++
	}
	for _, m := range members {
		require.GreaterOrEqual(t, count[m], 10, "member %s gets a share: %v", m, count)
	}
	after := owner(append(slices.Clone(members), "d-4"))
	moved := 0
	for i := range shards {
		if before[i] != after[i] {
			require.Equal(t, "d-4", after[i], "shard %d moved between old members", i)
			moved++
		}
	}
	require.Greater(t, moved, 5)
	require.Less(t, moved, 30, "the new member takes about a quarter")
	gone := owner([]string{"a-1", "c-3"})
	for i := range shards {
		if before[i] != "b-2" {
			require.Equal(t, before[i], gone[i], "shard %d of a live member moved when b-2 left", i)
		}
	}
	require.Equal(t, "", choose(0, nil))

	// Repositories spread over the shards.
	per := make([]int, 16)
	for i := range 200 {
		per[shardOf(repoKey("ns", fmt.Sprintf("repo-%03d", i)), 16)]++
	}
	for i, n := range per {
		require.Greater(t, n, 3, "shard %d has %d of 200 repositories", i, n)
	}
}

// sim is a group of sharders on one memLeases and a fake clock, ticked
// in turn as the clock advances.
type sim struct {
	t      *testing.T
	clock  *fakeClock
	store  *memLeases
	shards int
	reps   []*simReplica
}

type simReplica struct {
	s      *sharder
	cut    *cutStore
	dead   bool
	next   time.Time
	jitter time.Duration
}

const (
	simLease = 15 * time.Second
	simRenew = 10 * time.Second
	simRetry = 2 * time.Second
)

func newSim(t *testing.T, shards int) *sim {
	return &sim{t: t, clock: &fakeClock{t: time.Unix(1_000_000, 0)}, store: newMemLeases(), shards: shards}
}

func (m *sim) add(name string) *simReplica {
	cut := &cutStore{memLeases: m.store}
	s, err := newSharder(cut, "g", name, m.shards, simLease, simRenew, simRetry, logr.Discard())
	require.NoError(m.t, err)
	s.now = m.clock.now
	r := &simReplica{s: s, cut: cut, next: m.clock.now(), jitter: time.Duration(len(m.reps)) * 137 * time.Millisecond}
	m.reps = append(m.reps, r)
	return r
}

// step advances the clock by d, ticks the replicas due, ends expired
// tenures, and checks that no shard is held by two replicas.
func (m *sim) step(d time.Duration) {
	m.clock.advance(d)
	now := m.clock.now()
	for _, r := range m.reps {
		if r.dead {
			continue
		}
		r.s.expire()
		if !now.Before(r.next) {
			r.s.tick(context.Background())
			r.next = now.Add(simRetry + r.jitter%time.Second)
		}
	}
	m.check()
}

// check fails when two replicas hold a tenure of one shard that is
// valid now: two could reconcile it at once.
func (m *sim) check() {
	m.t.Helper()
	now := m.clock.now()
	for i := range m.shards {
		var holders []string
		for _, r := range m.reps {
			r.s.mu.Lock()
			// A tenure being released with no reconcile in flight starts
			// none: it is not counted.
			if h := r.s.holds[i]; h != nil && now.Before(h.validUntil) && (!h.releasing || h.inflight > 0) {
				holders = append(holders, r.s.self)
			}
			r.s.mu.Unlock()
		}
		if len(holders) > 1 {
			m.t.Fatalf("at %s shard %d is held by %v", now.Sub(time.Unix(1_000_000, 0)), i, holders)
		}
	}
}

// owners returns the holder of each shard ("" for none).
func (m *sim) owners() []string {
	out := make([]string, m.shards)
	for _, r := range m.reps {
		if r.dead {
			continue
		}
		for _, i := range r.s.held() {
			out[i] = r.s.self
		}
	}
	return out
}

func (m *sim) settle(within time.Duration) time.Duration {
	m.t.Helper()
	for waited := time.Duration(0); waited <= within; waited += 100 * time.Millisecond {
		m.step(100 * time.Millisecond)
		if m.balanced() {
			return waited
		}
	}
	m.t.Fatalf("not balanced after %s: %v", within, m.owners())
	return 0
}

// balanced reports whether every shard is held by its choice among the
// live replicas.
func (m *sim) balanced() bool {
	var live []string
	for _, r := range m.reps {
		if !r.dead && !r.cut.down {
			live = append(live, r.s.self)
		}
	}
	slices.Sort(live)
	for i, o := range m.owners() {
		if o != choose(i, live) {
			return false
		}
	}
	return true
}

// TestShardHandover: three replicas share the shards; a killed one's
// shards move to the others once its Leases expire, and only its shards
// move; a fourth that joins takes only its share; a replica cut off from
// the API server stops before the others take its shards, and comes back.
func TestShardHandover(t *testing.T) {
	m := newSim(t, 32)
	a, b, c := m.add("a"), m.add("b"), m.add("c")
	m.settle(time.Minute)
	for _, r := range []*simReplica{a, b, c} {
		require.NotEmpty(t, r.s.held(), "%s holds a share", r.s.self)
	}

	// Kill b: no more ticks, no release.
	before := m.owners()
	b.dead = true
	took := m.settle(time.Minute)
	t.Logf("a killed replica's shards held by the others %s after the kill", took)
	require.Less(t, took, simLease+2*simRetry+time.Second, "hand-over within a lease duration and two ticks")
	after := m.owners()
	for i := range m.shards {
		if before[i] != "b" {
			require.Equal(t, before[i], after[i], "shard %d of a live replica moved", i)
		}
	}

	// d joins: only the shards whose choice it is move, all to d.
	before = m.owners()
	d := m.add("d")
	m.settle(time.Minute)
	after = m.owners()
	moved := 0
	for i := range m.shards {
		if before[i] != after[i] {
			require.Equal(t, "d", after[i], "shard %d moved between old replicas", i)
			moved++
		}
	}
	require.Equal(t, len(d.s.held()), moved)
	require.Positive(t, moved)

	// c is cut off: its tenures end at their renew deadline, before the
	// others take its shards (check, at every step), and it takes a
	// share again when it is back.
	c.cut.down = true
	m.settle(time.Minute)
	require.Empty(t, c.s.held())
	c.cut.down = false
	m.settle(time.Minute)
	require.NotEmpty(t, c.s.held())
}

// A replica that stops (SIGTERM) releases its shards and leaves: the
// others take them within a couple of ticks, not a lease duration.
func TestShardGracefulStop(t *testing.T) {
	m := newSim(t, 16)
	a, b := m.add("a"), m.add("b")
	m.settle(time.Minute)
	require.NotEmpty(t, b.s.held())
	b.s.stop()
	b.dead = true
	require.Empty(t, b.s.held())
	took := m.settle(time.Minute)
	require.Less(t, took, 2*simRetry+time.Second, "a released shard is taken at the next ticks")
	require.Len(t, a.s.held(), 16)
	leases, err := m.store.list(context.Background())
	require.NoError(t, err)
	for _, l := range leases {
		require.NotEqual(t, "b", holderOf(&l), "b left no Lease behind: %s", l.Name)
	}
}

// TestShardHandoverChaos runs replicas whose API calls fail or lose their
// answers at random, that die and join, and checks at every simulated
// 50ms that no shard is held by two of them; at the end, with the faults
// gone, every shard is held by its choice.
func TestShardHandoverChaos(t *testing.T) {
	m := newSim(t, 16)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 4 {
		m.add(fmt.Sprintf("r%d", i))
	}
	joined := 4
	for range 20_000 {
		for _, r := range m.reps {
			switch x := rng.IntN(1000); {
			case x < 5:
				r.cut.down = !r.cut.down
			case x < 10:
				r.cut.lost = !r.cut.lost
			}
		}
		if rng.IntN(2000) == 0 {
			live := slices.DeleteFunc(slices.Clone(m.reps), func(r *simReplica) bool { return r.dead })
			if len(live) > 1 {
				live[rng.IntN(len(live))].dead = true
			}
		}
		if rng.IntN(2000) == 0 {
			m.add(fmt.Sprintf("r%d", joined))
			joined++
		}
		m.step(50 * time.Millisecond)
	}
	for _, r := range m.reps {
		r.cut.down, r.cut.lost = false, false
	}
	m.settle(2 * time.Minute)
}

// A tenure that ends (the API server unreachable past the renew
// deadline) cancels the context of the shard's reconciles, and stops the
// replica (errShardLost) when they outlive their grace; a reconcile of a
// shard not held does not start.
func TestShardLostStopsReconciles(t *testing.T) {
	m := newSim(t, 4)
	a := m.add("a")
	m.settle(time.Minute)
	require.Len(t, a.s.held(), 4)
	key := repoKey("ns", "repo")
	ctx, done, ok := a.s.enter(context.Background(), key)
	require.True(t, ok)
	a.cut.down = true
	for range int(simRenew/(100*time.Millisecond)) + 1 {
		m.step(100 * time.Millisecond)
	}
	require.Eventually(t, func() bool { return ctx.Err() != nil }, 5*time.Second, time.Millisecond,
		"the reconcile's context ends with the tenure")
	_, _, ok = a.s.enter(context.Background(), key)
	require.False(t, ok, "no reconcile starts on a shard not held")
	select {
	case err := <-a.s.fatal:
		t.Fatalf("stopped too early: %v", err)
	default:
	}
	m.step(simLease - simRenew)
	select {
	case err := <-a.s.fatal:
		require.ErrorIs(t, err, errShardLost)
	default:
		t.Fatal("a replica whose reconciles outlive the tenure's grace must stop")
	}
	done()
}

// A replica gives a shard to a joining replica only after the shard's
// reconciles ended, and starts none meanwhile.
func TestShardReleaseWaitsForReconciles(t *testing.T) {
	m := newSim(t, 8)
	a := m.add("a")
	m.settle(time.Minute)
	var key string
	for i := range 1000 {
		k := repoKey("ns", fmt.Sprintf("r%d", i))
		if choose(shardOf(k, 8), []string{"a", "b"}) == "b" {
			key = k
			break
		}
	}
	_, done, ok := a.s.enter(context.Background(), key)
	require.True(t, ok)
	b := m.add("b")
	for range 100 {
		m.step(100 * time.Millisecond)
	}
	require.True(t, a.s.owns(key) == false, "a stops taking new work of the shard it gives up")
	_, _, ok = a.s.enter(context.Background(), key)
	require.False(t, ok)
	require.NotContains(t, b.s.held(), shardOf(key, 8), "b waits for a's reconcile")
	require.Contains(t, a.s.held(), shardOf(key, 8))
	done()
	m.settle(time.Minute)
	require.Contains(t, b.s.held(), shardOf(key, 8))
}

// Replicas that disagree on the number of shards acquire nothing, and
// the one holding shards gives them up.
func TestShardCountMismatch(t *testing.T) {
	m := newSim(t, 8)
	a := m.add("a")
	m.settle(time.Minute)
	require.Len(t, a.s.held(), 8)
	other, err := newSharder(&cutStore{memLeases: m.store}, "g", "b", 16, simLease, simRenew, simRetry, logr.Discard())
	require.NoError(t, err)
	other.now = m.clock.now
	for range 50 {
		m.step(100 * time.Millisecond)
		other.tick(context.Background())
	}
	require.Empty(t, a.s.held())
	require.Empty(t, other.held())
}

func TestNewSharderRefusesBadTimings(t *testing.T) {
	_, err := newSharder(newMemLeases(), "g", "a", 4, 10*time.Second, 10*time.Second, 2*time.Second, logr.Discard())
	require.Error(t, err)
	_, err = newSharder(newMemLeases(), "g", "a", 0, simLease, simRenew, simRetry, logr.Discard())
	require.Error(t, err)
}
