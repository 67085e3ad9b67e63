//go:build !unix

package gitrepo_test

import "time"

// Off unix the benchmarks report no CPU time or page faults: there is no
// getrusage.

// cpuTime reports zero.
func cpuTime() time.Duration { return 0 }

// minorFaults reports zero.
func minorFaults() int64 { return 0 }
