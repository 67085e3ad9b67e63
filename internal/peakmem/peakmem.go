// Package peakmem measures the peak memory of a piece of test code by
// running it in a child process of the test binary, so that a test of a
// resource bound can check what the process really held, not only the
// error it returned, and so that an unbounded allocation kills the child,
// never the test binary.
//
// A test calls [Measure] with a body; Measure starts the test binary again
// with -test.run selecting the same test, the child runs the body and
// exits, and the parent returns the child's resident memory when the body
// started, its peak (the kernel's high-water mark) and its output. In the
// child, Measure runs the body and then ends the test with SkipNow, so a
// test's code after Measure runs only in the parent. A watchdog in the child ends it
// with exit code 3 when its resident memory grows by more than the
// budget's kill margin, so a bound that does not hold fails the test
// quickly instead of exhausting the machine.
package peakmem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	envChild = "CAD_PEAKMEM_CHILD"
	envKill  = "CAD_PEAKMEM_KILL"
	marker   = "peakmem: start rss "
	peakMark = "peakmem: peak rss "
	// exitOver is the child's exit code when its watchdog ended it.
	exitOver = 3
)

// measured holds the names of the tests that called Measure.
var measured sync.Map

// Result is what [Measure] saw of the child.
type Result struct {
	StartRSS int64  // bytes resident when the body started
	PeakRSS  int64  // the child's peak resident bytes (its VmHWM after the body; when it was killed, getrusage's ru_maxrss)
	Killed   bool   // the watchdog ended the child: it grew past the kill margin
	Output   string // the child's standard output and error
	Err      error  // the child's exit error (nil when it passed)
}

// Growth returns how much the child's resident memory grew while the body
// ran: PeakRSS - StartRSS.
func (r Result) Growth() int64 { return r.PeakRSS - r.StartRSS }

// Measure runs body in a child process and returns what it held. killAt
// is the growth past which the child is ended (exit code 3, Result.Killed);
// zero means 4 GiB. A test (or subtest) calls Measure once: the child is
// told the test's name, so use t.Run for several measurements, each with
// its assertions after Measure in the same subtest (code of an enclosing
// test after its t.Run also runs in the child; [InChild] tells). The body runs with the child's t: its failures fail the
// child, which Measure reports as a failure of t with the child's output.
// In the child, Measure does not return. Off Linux, Measure skips t.
func Measure(t *testing.T, killAt int64, body func(t *testing.T)) Result {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("peakmem: measures resident memory through /proc, on Linux only")
	}
	if os.Getenv(envChild) == t.Name() {
		runChild(t, body)
		panic("unreachable")
	}
	if _, dup := measured.LoadOrStore(t.Name(), true); dup {
		t.Fatalf("peakmem: Measure called twice in %s; use one subtest per measurement", t.Name())
	}
	if killAt <= 0 {
		killAt = 4 << 30
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("peakmem: %v", err)
	}
	cmd := exec.Command(exe, "-test.run", runPattern(t.Name()), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envChild+"="+t.Name(), envKill+"="+strconv.FormatInt(killAt, 10))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	r := Result{Output: out.String(), Err: runErr}
	r.PeakRSS = maxRSS(cmd.ProcessState)
	if ee, ok := runErr.(*exec.ExitError); ok && ee.ExitCode() == exitOver {
		r.Killed = true
	}
	sc := bufio.NewScanner(strings.NewReader(r.Output))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), marker); ok {
			r.StartRSS, _ = strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		}
		// The child's own high-water mark: ru_maxrss also counts what
		// the parent held when it forked, before the exec.
		if rest, ok := strings.CutPrefix(sc.Text(), peakMark); ok {
			r.PeakRSS, _ = strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		}
	}
	if runErr != nil && !r.Killed {
		t.Errorf("peakmem: the child failed (%v):\n%s", runErr, r.Output)
	}
	if runErr == nil && !strings.Contains(r.Output, marker) {
		t.Errorf("peakmem: the child did not run the body (no test matched %q):\n%s", runPattern(t.Name()), r.Output)
	}
	return r
}

// InChild reports whether this process is a child started by Measure.
func InChild() bool { return os.Getenv(envChild) != "" }

// runChild runs body under a watchdog and ends the test with SkipNow, so
// that the code after Measure does not run in the child (a failed test
// stays failed when skipped); the watchdog ends the process with exitOver
// when it grows past the margin.
func runChild(t *testing.T, body func(t *testing.T)) {
	killAt, _ := strconv.ParseInt(os.Getenv(envKill), 10, 64)
	start := rss()
	fmt.Printf("%s%d\n", marker, start)
	go func() {
		for {
			time.Sleep(2 * time.Millisecond)
			if now := rss(); now-start > killAt {
				fmt.Printf("peakmem: resident memory grew by %d bytes, past the kill margin %d\n", now-start, killAt)
				os.Exit(exitOver)
			}
		}
	}()
	body(t)
	fmt.Printf("%s%d\n", peakMark, hwm())
	t.SkipNow()
}

// hwm returns the peak resident bytes of this process since its exec, from
// /proc/self/status (VmHWM), or 0.
func hwm() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// rss returns the resident bytes of this process, from /proc/self/statm.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// runPattern is the -test.run pattern that selects exactly the test (or
// subtest) name.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
