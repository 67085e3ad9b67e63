package main

// The attacks of issue 30 through the reference server binary: each test
// builds the server, runs it as a child process on a data directory,
// attacks it with an ordinary editor's requests, and checks that the
// process's peak resident memory (its VmHWM) stays within attackBudget, that
// another client's GETs are answered during and after the attack, and that
// a restart on the same data directory stays up.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/internal/variantfail"
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

const (
	// attackBudget is the most the server process may hold at its peak.
	attackBudget = 512 << 20
	// attackKillAt ends a server that grows past it, so that a bound that
	// does not hold fails the test instead of exhausting the machine.
	attackKillAt = 1536 << 20
	// attackAddressSpace caps the server's address space (prlimit --as),
	// a second guard: an allocation past it fails at once.
	attackAddressSpace = 12 << 30

	repoPath = "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/repositories"
	prPath   = "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisions"
	prrPath  = "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisionresources"
	pvsPath  = "/apis/config.porch.kpt.dev/v1alpha2/namespaces/default/packagevariantsets"
)

var (
	buildOnce sync.Once
	binDir    string
	serverBin string
	buildErr  error
)

func TestMain(m *testing.M) {
	// The servers the tests run in-process log through klog; the tests
	// check answers, not logs.
	klog.SetLogger(logr.Discard())
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// serverBinary builds the server once per test binary, without the race
// detector (the memory measured is the server's own).
func serverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "cad-server-attack-"); buildErr != nil {
			return
		}
		// go run keeps the executable in the build cache (go build
		// links it again every time); -exec copies it out instead of
		// running it.
		serverBin = filepath.Join(binDir, "server")
		cmd := exec.Command("go", "run", "-exec", "cp -t "+binDir, ".")
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go run -exec cp: %v\n%s", err, out)
		} else if _, err := os.Stat(serverBin); err != nil {
			buildErr = err
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return serverBin
}

// tailBuffer keeps the last 64 KiB written to it, and the first lines
// that say why a Go program died (a crash dump's goroutines would push
// them out of the tail).
type tailBuffer struct {
	mu     sync.Mutex
	buf    []byte
	deaths []string
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.deaths) < 5 {
		for _, line := range strings.Split(string(p), "\n") {
			if strings.HasPrefix(line, "fatal error:") || strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "runtime: ") {
				b.deaths = append(b.deaths, line)
			}
		}
	}
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - 64<<10; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// attackServer is the server binary running as a child process.
type attackServer struct {
	t       *testing.T
	cmd     *exec.Cmd
	url     string
	stderr  *tailBuffer
	peak    atomic.Int64 // the highest VmHWM seen, bytes
	killed  atomic.Bool  // by the watchdog, past attackKillAt
	exited  chan struct{}
	waitErr error
	client  *http.Client
}

// startAttackServer runs the server on dataDir, with local repositories
// allowed under root, and waits until it listens.
func startAttackServer(t *testing.T, dataDir, root string) *attackServer {
	t.Helper()
	args := []string{serverBinary(t), "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--repository-root", root, "--poll", "200ms"}
	if p, err := exec.LookPath("prlimit"); err == nil {
		args = append([]string{p, "--as=" + strconv.Itoa(attackAddressSpace), "--"}, args...)
	}
	s := &attackServer{t: t, stderr: &tailBuffer{}, exited: make(chan struct{}),
		client: &http.Client{Timeout: 3 * time.Minute}}
	s.cmd = exec.Command(args[0], args[1:]...)
	s.cmd.Stderr = s.stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	go s.watch()
	t.Cleanup(s.stop)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case first := <-lines:
		i := strings.Index(first, "http://")
		if i < 0 {
			t.Fatalf("first line: %q", first)
		}
		s.url = strings.Fields(first[i:])[0]
	case <-s.exited:
		t.Fatalf("server exited at start: %v\n%s", s.waitErr, s.stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not start\n%s", s.stderr)
	}
	return s
}

// memory returns VmHWM and VmRSS of pid in bytes.
func memory(pid int) (hwm, rss int64, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmHWM:":
			hwm = kb << 10
		case "VmRSS:":
			rss = kb << 10
		}
	}
	return hwm, rss, hwm > 0
}

// watch records the peak memory of the server until it exits, and kills
// it past attackKillAt.
func (s *attackServer) watch() {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.exited:
			return
		case <-tick.C:
		}
		s.sample()
	}
}

func (s *attackServer) sample() {
	hwm, rss, ok := memory(s.cmd.Process.Pid)
	if !ok {
		return
	}
	for {
		old := s.peak.Load()
		if hwm <= old || s.peak.CompareAndSwap(old, hwm) {
			break
		}
	}
	if rss > attackKillAt && s.killed.CompareAndSwap(false, true) {
		s.cmd.Process.Kill()
	}
}

// alive reports whether the server still runs.
func (s *attackServer) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// check fails the test when the server exited or its peak memory passed
// attackBudget.
func (s *attackServer) check(what string) {
	s.t.Helper()
	// A server that is dying has a moment to be seen exiting.
	select {
	case <-s.exited:
	case <-time.After(300 * time.Millisecond):
		s.sample()
	}
	peak := s.peak.Load()
	s.t.Logf("%s: server peak RSS %d MiB (budget %d MiB)", what, peak>>20, attackBudget>>20)
	switch {
	case s.killed.Load():
		s.t.Fatalf("%s: server killed at %d MiB resident (over %d MiB)\n%s", what, peak>>20, attackKillAt>>20, s.tail())
	case !s.alive():
		s.t.Fatalf("%s: server exited: %v\n%s", what, s.waitErr, s.tail())
	case peak > attackBudget:
		s.t.Errorf("%s: server peak RSS %d MiB, over the budget of %d MiB", what, peak>>20, attackBudget>>20)
	}
}

// survived is check that reports a server that exited with Errorf and
// returns false, so that the test can go on to restart it.
func (s *attackServer) survived(what string) bool {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(300 * time.Millisecond):
		if !s.killed.Load() {
			s.check(what)
			return true
		}
	}
	<-s.exited
	s.t.Errorf("%s: server exited (peak RSS %d MiB seen): %v\n%s", what, s.peak.Load()>>20, s.waitErr, s.tail())
	return false
}

// tail is why the server died, if it did, and the end of its log.
func (s *attackServer) tail() string {
	t := s.stderr.String()
	if len(t) > 2048 {
		t = "…" + t[len(t)-2048:]
	}
	s.stderr.mu.Lock()
	defer s.stderr.mu.Unlock()
	if len(s.stderr.deaths) > 0 {
		t = strings.Join(s.stderr.deaths, "\n") + "\n" + t
	}
	return t
}

// stop ends the server as SIGTERM does (idempotent).
func (s *attackServer) stop() {
	if !s.alive() {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// do sends a request with body (JSON unless it is []byte) and returns the
// status code and the answer; code 0 is a failed request.
func (s *attackServer) do(method, path string, body any) (int, []byte) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, data
}

// doJSON is do decoding a 2xx answer into out.
func (s *attackServer) doJSON(method, path string, body, out any) int {
	s.t.Helper()
	code, data := s.do(method, path, body)
	if out != nil && code/100 == 2 {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %d %.200s: %v", method, path, code, data, err)
		}
	}
	return code
}

// probe GETs path from another client every 100 ms until the returned
// function is called, which fails the test unless every GET was answered
// with 200 (and at least one was made).
func (s *attackServer) probe(path string) (stop func()) {
	s.t.Helper()
	var ok, failed atomic.Int64
	var last atomic.Value
	done := make(chan struct{})
	finished := make(chan struct{})
	c := &http.Client{Timeout: 5 * time.Second}
	go func() {
		defer close(finished)
		for {
			resp, err := c.Get(s.url + path)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ok.Add(1)
				} else {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			if err != nil {
				failed.Add(1)
				last.Store(err.Error())
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() {
		s.t.Helper()
		close(done)
		<-finished
		s.t.Logf("another client's GETs: %d answered, %d failed", ok.Load(), failed.Load())
		if failed.Load() > 0 || ok.Load() == 0 {
			s.t.Errorf("another client's GETs during the attack: %d answered, %d failed (last: %v)", ok.Load(), failed.Load(), last.Load())
		}
	}
}

// getOK fails the test unless a GET of path is answered with 200.
func (s *attackServer) getOK(path string) {
	s.t.Helper()
	if code, data := s.do("GET", path, nil); code != 200 {
		s.t.Errorf("GET %s after the attack: %d %.300s", path, code, data)
	}
}

// restart stops the server and starts another on the same data directory,
// leaves it running a while (its resyncs, repository opening and polls
// happen then) and checks that it stays up within the budget and answers.
func (s *attackServer) restart(dataDir, root string, settle time.Duration) *attackServer {
	s.t.Helper()
	s.stop()
	n := startAttackServer(s.t, dataDir, root)
	stop := n.probe(repoPath + "/default")
	time.Sleep(settle)
	stop()
	n.check("after a restart on the data directory")
	n.getOK(repoPath)
	return n
}

// publish creates, proposes and approves package pkg in the default
// repository.
func (s *attackServer) publish(pkg string) {
	s.t.Helper()
	var pr porchapi.PackageRevision
	if code := s.doJSON("POST", prPath, initPR(pkg, "v1"), &pr); code != 201 {
		s.t.Fatalf("create %s: %d", pkg, code)
	}
	pr.Spec.Lifecycle = porchapi.LifecycleProposed
	if code := s.doJSON("PUT", prPath+"/"+pr.Name, &pr, &pr); code != 200 {
		s.t.Fatalf("propose %s: %d", pkg, code)
	}
	pr.Spec.Lifecycle = porchapi.LifecyclePublished
	if code := s.doJSON("PUT", prPath+"/"+pr.Name+"/approval", &pr, &pr); code != 200 {
		s.t.Fatalf("approve %s: %d", pkg, code)
	}
}

func initPR(pkg, ws string) map[string]any {
	return map[string]any{
		"apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision",
		"metadata": map[string]any{"namespace": "default"},
		"spec": map[string]any{"packageName": pkg, "repository": "default", "workspaceName": ws,
			"tasks": []any{map[string]any{"type": "init", "init": map[string]any{"description": "attack"}}}},
	}
}

// waitUntil polls cond every 100 ms for up to d; it returns early, false,
// when the server exits.
func (s *attackServer) waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !s.alive() {
			return false
		}
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// replaceTemplate is the template: x.replace("", x) (every gap of
// x filled with x) nested three deep over a 20-character literal. Its
// value would be 37.8 GB: 20 -> 440 -> 194,480 -> 37,822,760,880
// characters (n² + 2n each).
func replaceTemplate() string {
	e := `"` + strings.Repeat("a", 20) + `"`
	for range 3 {
		e = e + `.replace("", ` + e + ")"
	}
	return e
}

// TestAttackVariantTemplate: a PackageVariantSet whose 274-byte template
// asks 37.8 GB is refused by a bound and held (Stalled, LimitExceeded); the
// server stays within its budget and answers others throughout, and a
// restart on its data directory does not sync the set again and stays up.
//
// Where the bound does not hold and the sync kills the server, the test
// fails, and goes on to check the server's last line of defence: the
// journal of the sync in progress holds the set (SyncInterrupted) after
// its second interrupted sync, so that a later start stays up.
func TestAttackVariantTemplate(t *testing.T) {
	tmp := t.TempDir()
	dataDir := filepath.Join(tmp, "data")
	s := startAttackServer(t, dataDir, tmp)
	s.publish("base")
	tmpl := replaceTemplate()
	t.Logf("template of %d bytes", len(tmpl))
	pvs := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha2", "kind": "PackageVariantSet",
		"metadata": map[string]any{"name": "boom"},
		"spec": map[string]any{
			"upstream": map[string]any{"repo": "default", "package": "base"},
			"targets": []any{map[string]any{
				"repositories": []any{map[string]any{"name": "default", "packageNames": []any{"boom-a"}}},
				"template":     map[string]any{"downstream": map[string]any{"packageExpr": tmpl}},
			}},
		}}
	stop := s.probe(repoPath + "/default")
	if code, data := s.do("POST", pvsPath, pvs); code != 201 {
		t.Fatalf("create the set: %d %.300s", code, data)
	}
	var got porchapi.PackageVariantSet
	stalled := func(s *attackServer) string {
		got = porchapi.PackageVariantSet{}
		s.doJSON("GET", pvsPath+"/boom", nil, &got)
		for _, c := range got.Status.Conditions {
			if c.Type == "Stalled" && c.Status == "True" {
				return c.Reason
			}
		}
		return ""
	}
	s.waitUntil(60*time.Second, func() bool { return stalled(s) != "" })
	stop()
	if !s.survived("the set's sync") {
		// The bound did not hold. Restart until the journal holds the set.
		for i := 1; ; i++ {
			s = startAttackServer(t, dataDir, tmp)
			if s.waitUntil(5*time.Second, func() bool { return false }); !s.alive() {
				t.Errorf("restart %d on the data directory died too: %v\n%s", i, s.waitErr, s.tail())
				if i > maxRestarts {
					t.Fatalf("the server crash-loops on the stored set")
				}
				continue
			}
			t.Logf("restart %d stays up; the set: %q", i, stalled(s))
			s.check("restart " + strconv.Itoa(i))
			if r := stalled(s); r != variantfail.ReasonSyncInterrupted {
				t.Errorf("the set's Stalled reason after restart %d is %q, want %q", i, r, variantfail.ReasonSyncInterrupted)
			}
			return
		}
	}
	if r := stalled(s); r != variantfail.ReasonLimitExceeded {
		t.Fatalf("the set's Stalled reason is %q, want %q; status %+v", r, variantfail.ReasonLimitExceeded, got.Status)
	}
	s.getOK(pvsPath)

	s = s.restart(dataDir, tmp, 3*time.Second)
	if r := stalled(s); r != variantfail.ReasonLimitExceeded {
		t.Errorf("after the restart the set's Stalled reason is %q", r)
	}
}

// maxRestarts is how many restarts of a server that a stored object
// crashes TestAttackVariantTemplate tries: the server holds the object
// after its second interrupted sync.
const maxRestarts = 3

// packageWith creates a draft and puts files into it; it returns the PUT's
// status code and answer.
func (s *attackServer) packageWith(pkg string, files map[string]string) (int, []byte) {
	s.t.Helper()
	var pr porchapi.PackageRevision
	if code := s.doJSON("POST", prPath, initPR(pkg, "v1"), &pr); code != 201 {
		s.t.Fatalf("create %s: %d", pkg, code)
	}
	var res porchapi.PackageRevisionResources
	if code := s.doJSON("GET", prrPath+"/"+pr.Name, nil, &res); code != 200 {
		s.t.Fatalf("get %s resources: %d", pkg, code)
	}
	for k, v := range files {
		res.Spec.Resources[k] = v
	}
	return s.do("PUT", prrPath+"/"+pr.Name, &res)
}

// kptfile is a Kptfile whose pipeline runs one mutator.
func kptfile(pkg, image, config string) string {
	return "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + pkg + "\n" +
		"pipeline:\n  mutators:\n  - image: " + image + "\n" + config
}

// TestAttackPipeline: a PUT of a package whose Kptfile pipeline asks for
// far more memory than the budget (search-replace expanding ${1} 100,000
// times over a 1 MiB value; a starlark step doubling a list of a million
// eight times) is refused, within the budget, while the server answers
// others; a restart on its data directory stays up.
func TestAttackPipeline(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{
		{"search-replace", map[string]string{
			"Kptfile": kptfile("attack", "ghcr.io/kptdev/krm-functions-catalog/search-replace:v0.2.0",
				"    configMap:\n      by-value-regex: '(.*)'\n      put-value: '"+strings.Repeat("${1}", 100_000)+"'\n"),
			"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  v: " + strings.Repeat("x", 1<<20) + "\n",
		}},
		{"starlark", map[string]string{
			"Kptfile": kptfile("attack", "ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.0", "    configPath: fn.yaml\n"),
			"fn.yaml": "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: double\nsource: |\n  x = [1] * (1 << 20)\n" +
				strings.Repeat("  x = x + x\n", 8),
			"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: small\ndata:\n  v: x\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			dataDir := filepath.Join(tmp, "data")
			s := startAttackServer(t, dataDir, tmp)
			stop := s.probe(repoPath + "/default")
			start := time.Now()
			code, data := s.packageWith("attack", tc.files)
			stop()
			t.Logf("PUT: %d in %s: %.300s", code, time.Since(start).Round(time.Millisecond), data)
			if s.survived("the PUT") {
				if code < 400 || code >= 500 {
					t.Errorf("PUT answered %d, want a refusal (4xx): %.300s", code, data)
				}
				s.getOK(prPath)
			}
			s.restart(dataDir, tmp, 2*time.Second)
		})
	}
}

// gitRun runs git in dir.
func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com",
		"GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestAttackLargeBlob: a 200 MB file pushed to a registered git repository
// (on its branch and in a published tag) costs a reader of the package's
// resources no more than the budget, and the server answers others.
func TestAttackLargeBlob(t *testing.T) {
	tmp := t.TempDir()
	bare := filepath.Join(tmp, "blobs.git")
	work := filepath.Join(tmp, "work")
	gitRun(t, tmp, "init", "-q", "--bare", "-b", "main", bare)
	if err := os.MkdirAll(filepath.Join(work, "big"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, "big", "Kptfile"), []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: big\n"), 0o644)
	// A package beside it, which its readers must still see.
	os.MkdirAll(filepath.Join(work, "small"), 0o755)
	os.WriteFile(filepath.Join(work, "small", "Kptfile"), []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: small\n"), 0o644)
	line := []byte("# a line of a large file that an attacker pushed to the repository\n")
	f, err := os.Create(filepath.Join(work, "big", "blob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for n := 0; n < 200<<20; n += len(line) {
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Committed straight into the bare repository (as a push would leave
	// it), with fast compression.
	g := []string{"--git-dir", bare, "--work-tree", work, "-c", "core.compression=1"}
	gitRun(t, tmp, append(g, "add", ".")...)
	gitRun(t, tmp, append(g, "commit", "-q", "-m", "big")...)
	gitRun(t, tmp, append(g, "tag", "big/v1")...)
	gitRun(t, tmp, append(g, "tag", "small/v1")...)
	os.RemoveAll(work)

	dataDir := filepath.Join(tmp, "data")
	s := startAttackServer(t, dataDir, tmp)
	repo := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
		"metadata": map[string]any{"name": "blobs", "namespace": "default"},
		"spec":     map[string]any{"type": "git", "content": "Package", "git": map[string]any{"repo": bare, "branch": "main"}}}
	if code, data := s.do("POST", repoPath, repo); code != 201 {
		t.Fatalf("register the repository: %d %.300s", code, data)
	}
	// Every package of the repository is listed, the large one too.
	listed := map[string]bool{}
	s.waitUntil(30*time.Second, func() bool {
		var l porchapi.PackageRevisionList
		s.doJSON("GET", prPath, nil, &l)
		for _, pr := range l.Items {
			if pr.Spec.RepositoryName == "blobs" {
				listed[pr.Name] = true
			}
		}
		return len(listed) >= 4
	})
	names := []string{porchapi.PackageRevisionName("blobs", "big", "v1"), porchapi.PackageRevisionName("blobs", "big", "main")}
	for _, n := range append(names, porchapi.PackageRevisionName("blobs", "small", "v1")) {
		if !listed[n] {
			t.Errorf("%s not listed; listed: %v", n, listed)
		}
	}
	stop := s.probe(repoPath + "/default")
	for _, name := range names {
		start := time.Now()
		var code int
		var data []byte
		s.waitUntil(30*time.Second, func() bool {
			code, data = s.do("GET", prrPath+"/"+name, nil)
			return code != 404
		})
		t.Logf("GET resources of %s: %d in %s: %.300s", name, code, time.Since(start).Round(time.Millisecond), data)
		if code == 200 || code >= 500 || code == 0 || code == 404 {
			t.Errorf("resources of %s: %d, want a refusal (4xx)", name, code)
		}
	}
	if code, _ := s.do("GET", prPath, nil); code != 200 {
		t.Errorf("list of package revisions: %d", code)
	}
	stop()
	s.check("reading the resources")
	s.getOK(prPath)
	s.restart(dataDir, tmp, 2*time.Second)
}
