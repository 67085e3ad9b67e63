package repopool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
)

// tracked is a repository that fails the test when it is used after its
// Close, and counts the open ones.
type tracked struct {
	*memrepo.Repository
	t      testing.TB
	closed atomic.Bool
	open   *atomic.Int64
}

// use stands for a read of r: it fails the test when r is closed.
func (r *tracked) use() {
	if r.closed.Load() {
		r.t.Errorf("repository %s used after Close", r.Name())
	}
}

func (r *tracked) Close() error {
	if r.closed.Swap(true) {
		r.t.Errorf("repository %s closed twice", r.Name())
	}
	r.open.Add(-1)
	return r.Repository.Close()
}

// register registers keys in p with openers of tracked repositories and
// returns the count of open ones and of opens.
func register(t testing.TB, p *Pool, keys []string, pin bool) (open, opens *atomic.Int64) {
	open, opens = new(atomic.Int64), new(atomic.Int64)
	for _, k := range keys {
		p.Set(k, "1", func(context.Context) (repository.Repository, error) {
			open.Add(1)
			opens.Add(1)
			return &tracked{Repository: memrepo.New(k, nil), t: t, open: open}, nil
		}, pin)
	}
	return open, opens
}

func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("ns/repo-%02d", i)
	}
	return out
}

func use(t *testing.T, p *Pool, key string) {
	t.Helper()
	r, release, err := p.Acquire(context.Background(), key)
	require.NoError(t, err)
	r.(*tracked).use()
	release()
}

// Beyond MaxOpen, the least recently used unused repositories are closed
// and opened again at their next use.
func TestBoundAndLRU(t *testing.T) {
	p := New(&Options{MaxOpen: 3, IdleTimeout: -1})
	ks := keys(10)
	open, opens := register(t, p, ks, false)
	for _, k := range ks {
		use(t, p, k)
		require.LessOrEqual(t, open.Load(), int64(3))
	}
	require.Equal(t, int64(3), open.Load())
	require.ElementsMatch(t, ks[7:], p.Keys())
	// Using ks[7] makes ks[8] the least recently used.
	use(t, p, ks[7])
	use(t, p, ks[0])
	require.ElementsMatch(t, []string{ks[7], ks[9], ks[0]}, p.Keys())
	require.Equal(t, int64(11), opens.Load())
	require.Equal(t, Stats{Registered: 10, Open: 3}, p.Stats())
}

// A repository in use is never closed: the bound is exceeded while more
// are in use, and restored at their release.
func TestInUseNeverClosed(t *testing.T) {
	p := New(&Options{MaxOpen: 1, IdleTimeout: -1})
	ks := keys(4)
	open, _ := register(t, p, ks, false)
	var held []repository.Repository
	var releases []func()
	for _, k := range ks {
		r, release, err := p.Acquire(context.Background(), k)
		require.NoError(t, err)
		held, releases = append(held, r), append(releases, release)
	}
	require.Equal(t, int64(4), open.Load())
	require.Equal(t, 4, p.Stats().InUse)
	p.CloseIdle()
	for _, r := range held {
		r.(*tracked).use()
	}
	for _, release := range releases {
		release()
		release() // a second call does nothing
	}
	require.Equal(t, int64(1), open.Load())
}

// Idle repositories are closed after IdleTimeout; pinned ones never are.
func TestIdleTimeoutAndPin(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	p := New(&Options{MaxOpen: 10, IdleTimeout: time.Minute, Now: clock})
	ks := keys(3)
	open, _ := register(t, p, ks[:2], false)
	pinOpen, _ := register(t, p, ks[2:], true)
	for _, k := range ks {
		use(t, p, k)
	}
	advance(40 * time.Second)
	use(t, p, ks[1])
	advance(30 * time.Second)
	require.Equal(t, 1, p.CloseIdle())
	require.ElementsMatch(t, ks[1:], p.Keys())
	advance(time.Hour)
	require.Equal(t, 1, p.CloseIdle())
	require.Equal(t, int64(0), open.Load())
	require.Equal(t, int64(1), pinOpen.Load())
	require.Equal(t, []string{ks[2]}, p.Keys())
}

// A new fingerprint closes the old repository once it is released; the
// next Acquire opens the new one. Remove closes it too.
func TestFingerprintAndRemove(t *testing.T) {
	p := New(nil)
	ctx := context.Background()
	open := new(atomic.Int64)
	opener := func(fp string) Opener {
		return func(context.Context) (repository.Repository, error) {
			open.Add(1)
			return &tracked{Repository: memrepo.New(fp, nil), t: t, open: open}, nil
		}
	}
	require.True(t, p.Set("k", "a", opener("a"), false))
	require.False(t, p.Set("k", "a", opener("x"), false))
	old, release, err := p.Acquire(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "a", old.Name())
	require.True(t, p.Set("k", "b", opener("b"), false))
	old.(*tracked).use() // still held
	cur, release2, err := p.Acquire(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "b", cur.Name())
	require.Equal(t, int64(2), open.Load())
	release()
	require.True(t, old.(*tracked).closed.Load())
	p.Remove("k")
	cur.(*tracked).use()
	release2()
	require.Equal(t, int64(0), open.Load())
	_, _, err = p.Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrNotRegistered)
}

// A failed open is returned, and tried again at the next Acquire.
func TestOpenError(t *testing.T) {
	p := New(nil)
	boom := errors.New("boom")
	fail := true
	p.Set("k", "1", func(context.Context) (repository.Repository, error) {
		if fail {
			return nil, boom
		}
		return memrepo.New("k", nil), nil
	}, false)
	_, _, err := p.Acquire(context.Background(), "k")
	require.ErrorIs(t, err, boom)
	fail = false
	_, release, err := p.Acquire(context.Background(), "k")
	require.NoError(t, err)
	release()
}

// A scope acquires each repository once and holds it until Release.
func TestScope(t *testing.T) {
	p := New(&Options{MaxOpen: 1, IdleTimeout: -1})
	ks := keys(3)
	open, opens := register(t, p, ks, false)
	sc := p.Scope()
	var got []repository.Repository
	for range 2 {
		for _, k := range ks {
			r, err := sc.Acquire(context.Background(), k)
			require.NoError(t, err)
			got = append(got, r)
		}
	}
	require.Equal(t, int64(3), opens.Load())
	require.Same(t, got[0], got[3])
	sc.Release()
	require.Equal(t, int64(1), open.Load())
	_, err := sc.Acquire(context.Background(), ks[0])
	require.ErrorIs(t, err, repository.ErrClosed)
	sc.Release()
}

// Many goroutines acquire, use and release repositories while the pool
// is bounded, registrations change, keys are removed and idle ones
// closed: no repository is used after its Close or closed twice, and in
// the end no more than MaxOpen stay open. Run it with -race.
func TestConcurrentUse(t *testing.T) {
	p := New(&Options{MaxOpen: 3, IdleTimeout: time.Nanosecond})
	ks := keys(12)
	open := new(atomic.Int64)
	opener := func(k string) Opener {
		return func(context.Context) (repository.Repository, error) {
			open.Add(1)
			return &tracked{Repository: memrepo.New(k, nil), t: t, open: open}, nil
		}
	}
	for _, k := range ks {
		p.Set(k, "0", opener(k), false)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 300 {
				k := ks[rnd.IntN(len(ks))]
				switch {
				case g == 0 && i%10 == 0:
					p.Set(k, fmt.Sprint(i), opener(k), false)
				case g == 1 && i%25 == 0:
					p.Remove(k)
					p.Set(k, "r", opener(k), false)
				case g == 2:
					p.CloseIdle()
				case g == 3:
					if r, release, ok := p.Peek(k); ok {
						r.(*tracked).use()
						release()
					}
				case g%2 == 0:
					sc := p.Scope()
					for range 3 {
						r, err := sc.Acquire(ctx, ks[rnd.IntN(len(ks))])
						if errors.Is(err, ErrNotRegistered) {
							continue
						}
						require.NoError(t, err)
						r.(*tracked).use()
					}
					sc.Release()
				default:
					r, release, err := p.Acquire(ctx, k)
					if errors.Is(err, ErrNotRegistered) {
						continue
					}
					require.NoError(t, err)
					r.(*tracked).use()
					release()
				}
			}
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, open.Load(), int64(3))
	require.Equal(t, int64(p.Stats().Open), open.Load())
	require.NoError(t, p.Close())
	require.Equal(t, int64(0), open.Load())
	_, _, err := p.Acquire(ctx, ks[0])
	require.ErrorIs(t, err, repository.ErrClosed)
}
