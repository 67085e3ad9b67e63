package fnruntime

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/configasdata/cad/revision"
	"go.starlark.net/starlark"
)

// ErrStepLimit matches the failure of a starlark run stopped because it
// took more than StarlarkFunction.MaxSteps steps. The error that carries
// it is a *revision.LimitError, so it also matches revision.ErrLimit.
var ErrStepLimit = errors.New("starlark step limit exceeded")

// heapMetric is the bytes of heap objects, live or not yet swept;
// liveMetric is the bytes of heap objects found live by the last
// collection; allocsMetric is the bytes allocated since the process
// started.
const (
	heapMetric   = "/memory/classes/heap/objects:bytes"
	liveMetric   = "/gc/heap/live:bytes"
	allocsMetric = "/gc/heap/allocs:bytes"
)

// reserveFloor is the size under which a guarded operation is not
// checked on the spot: smaller allocations are left to the watchdog,
// which samples the heap every memoryCheckInterval.
const reserveFloor = 64 << 10

// reserveGCInterval is the least time between two collections that
// reserve forces: a script that keeps allocating near its bound waits
// rather than collect without pause.
const reserveGCInterval = 10 * time.Millisecond

// starlarkBudgetKey is the thread-local key of a run's *starlarkBudget.
const starlarkBudgetKey = "cad.fnruntime.starlarkBudget"

// starlarkBudget is the memory bound of one starlark run: the guards
// call reserve before an allocation they can size, and the watchdog
// (watch) samples the heap for growth in small steps. It is safe for
// concurrent use: reserve runs on the script's goroutine, the watchdog on
// its own.
type starlarkBudget struct {
	name  string // the script's name, for errors
	limit int64  // bytes the heap may grow by during the run; <= 0 means no bound

	mu     sync.Mutex // guards sample and the fields of the last collection
	sample []metrics.Sample
	base   uint64 // heap objects when the run started

	// The last collection the run forced: the live heap it found, the
	// bytes allocated by then, and when.
	gcLive, gcAllocs uint64
	gcAt             time.Time

	over   atomic.Pointer[revision.LimitError] // set once the bound refused
	cancel func(reason string)                 // cancels the thread
}

// newStarlarkBudget measures the baseline of a run bounded to limit bytes
// of heap growth. When the heap holds more than limit/16 bytes beyond what
// the last collection found live (garbage of earlier work, or allocations
// since), it collects first, so that garbage freed during the run does not
// hide the run's own growth.
func newStarlarkBudget(name string, limit int64, cancel func(string)) *starlarkBudget {
	b := &starlarkBudget{name: name, limit: limit, cancel: cancel,
		sample: []metrics.Sample{{Name: heapMetric}, {Name: liveMetric}, {Name: allocsMetric}}}
	if limit <= 0 {
		return b
	}
	heap, live, _ := b.read()
	if heap > live+uint64(limit)/16 {
		runtime.GC()
		heap, _, _ = b.read()
	}
	b.base = heap
	return b
}

// read returns the heap objects, the live heap of the last collection
// and the bytes allocated so far.
func (b *starlarkBudget) read() (heap, live, allocs uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	metrics.Read(b.sample)
	u := func(i int) uint64 {
		if b.sample[i].Value.Kind() == metrics.KindUint64 {
			return b.sample[i].Value.Uint64()
		}
		return 0
	}
	return u(0), u(1), u(2)
}

// estimate returns an upper bound of the live heap's growth: the lesser
// of the heap objects (live data and garbage) and what the last forced
// collection found live plus all allocated since.
func (b *starlarkBudget) estimate() int64 {
	heap, _, allocs := b.read()
	b.mu.Lock()
	defer b.mu.Unlock()
	g := b.growth(heap)
	if !b.gcAt.IsZero() && allocs >= b.gcAllocs {
		g = min(g, b.growth(b.gcLive+(allocs-b.gcAllocs)))
	}
	return g
}

// collect forces a collection, no sooner than minGC after the last one
// (it waits for the rest), and returns the live heap it found and the
// bytes allocated while it ran.
func (b *starlarkBudget) collect(minGC time.Duration) (live, during uint64) {
	b.mu.Lock()
	wait := minGC - time.Since(b.gcAt)
	b.mu.Unlock()
	if wait > 0 {
		time.Sleep(wait)
	}
	_, _, before := b.read()
	runtime.GC()
	_, live, after := b.read()
	b.mu.Lock()
	b.gcLive, b.gcAllocs, b.gcAt = live, after, time.Now()
	b.mu.Unlock()
	return live, after - before
}

// growth returns how far n bytes of heap are over the baseline.
func (b *starlarkBudget) growth(n uint64) int64 {
	if n <= b.base {
		return 0
	}
	return int64(n - b.base)
}

// budgetOf returns the thread's budget, or nil.
func budgetOf(thread *starlark.Thread) *starlarkBudget {
	b, _ := thread.Local(starlarkBudgetKey).(*starlarkBudget)
	return b
}

// reserve is called before an operation allocates about n bytes: it
// fails with a *revision.LimitError matching ErrMemoryLimit when the heap
// would then have grown by more than the limit. It reads the heap first;
// only when that (live data and garbage together) leaves no room does it
// collect and read the live heap. Allocations under reserveFloor are left
// to the watchdog.
func (b *starlarkBudget) reserve(what string, n int64) error {
	if b == nil || b.limit <= 0 || n < reserveFloor {
		return nil
	}
	if err := b.over.Load(); err != nil {
		return err
	}
	if n > b.limit {
		return b.refuse(fmt.Sprintf("%s needs %d bytes", what, n))
	}
	if b.estimate()+n <= b.limit {
		return nil
	}
	// The script waits here; what the collection finds live is its own
	// (and other goroutines') data.
	live, _ := b.collect(reserveGCInterval)
	if g := b.growth(live); g+n > b.limit {
		return b.refuse(fmt.Sprintf("%s needs %d bytes and the run holds %d", what, n, g))
	}
	return nil
}

// refuse records and returns the error of the bound.
func (b *starlarkBudget) refuse(detail string) error {
	err := &revision.LimitError{
		What:  fmt.Sprintf("starlark script %q", b.name),
		Limit: "StarlarkFunction.MaxMemory",
		Max:   b.limit,
		Err:   fmt.Errorf("%w: %s, over the memory limit of %d bytes", ErrMemoryLimit, detail, b.limit),
	}
	if b.over.CompareAndSwap(nil, err) {
		return err
	}
	return b.over.Load()
}

// watch starts the watchdog: every memoryCheckInterval it reads the heap
// and, when it may have grown by more than the limit (see estimate), collects (at most every
// 10 intervals) to tell live data from garbage; if the live heap is still
// over, it cancels the thread. What the collection finds live includes
// what was allocated while it ran (marked live, garbage or not: a fast
// loop allocates tens of MB during a slow cycle), so that is left out of
// this check; memory truly held is counted by the next one. A step that
// allocates much at once is not the watchdog's to catch: the guards
// reserve it first. The returned function stops the watchdog and waits
// for it.
func (b *starlarkBudget) watch() (stop func()) {
	if b.limit <= 0 {
		return func() {}
	}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(memoryCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			if b.over.Load() != nil {
				return
			}
			if b.estimate() <= b.limit {
				continue
			}
			b.mu.Lock()
			recent := time.Since(b.gcAt) < 10*memoryCheckInterval
			b.mu.Unlock()
			if recent {
				continue
			}
			live, during := b.collect(0)
			if live > during {
				live -= during
			} else {
				live = 0
			}
			if g := b.growth(live); g > b.limit {
				err := b.refuse(fmt.Sprintf("the heap grew by %d bytes", g))
				b.cancel(err.Error())
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
