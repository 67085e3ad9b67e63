package peakmem_test

import (
	"testing"

	"github.com/configasdata/cad/internal/peakmem"
)

var sink []byte

func TestMeasure(t *testing.T) {
	t.Run("small", func(t *testing.T) {
		r := peakmem.Measure(t, 0, func(t *testing.T) { sink = make([]byte, 1<<20) })
		if r.Growth() > 100<<20 || r.StartRSS == 0 || r.Killed {
			t.Errorf("small: %+v", r)
		}
	})
	t.Run("big", func(t *testing.T) {
		r := peakmem.Measure(t, 0, func(t *testing.T) {
			sink = make([]byte, 200<<20)
			for i := range sink {
				sink[i] = 1
			}
		})
		if r.Growth() < 150<<20 || r.Killed {
			t.Errorf("big: %+v", r)
		}
	})
}

func TestMeasureKills(t *testing.T) {
	r := peakmem.Measure(t, 64<<20, func(t *testing.T) {
		for i := 0; i < 100; i++ {
			b := make([]byte, 100<<20)
			for j := range b {
				b[j] = 1
			}
			sink = append(sink, b...)
		}
		t.Error("not killed")
	})
	if !r.Killed || r.PeakRSS > 2<<30 {
		t.Errorf("killed %v at peak %d:\n%s", r.Killed, r.PeakRSS, r.Output)
	}
}

// The parent's memory at the fork is not the child's: ru_maxrss counts it,
// the child's own high-water mark does not.
func TestMeasureIgnoresParent(t *testing.T) {
	if !peakmem.InChild() {
		sink = make([]byte, 300<<20)
		for i := range sink {
			sink[i] = 1
		}
		defer func() { sink = nil }()
	}
	r := peakmem.Measure(t, 0, func(t *testing.T) {})
	if r.Growth() > 100<<20 {
		t.Errorf("growth %d with a parent of 300 MiB", r.Growth())
	}
}
