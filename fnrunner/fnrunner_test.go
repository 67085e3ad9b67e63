package fnrunner_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/configasdata/cad/fnrunner"
	"github.com/configasdata/cad/fnrunner/internal/evaluatorpb"
	"github.com/configasdata/cad/fnrunner/internal/testrunner"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/stdfn"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

const annotateImage = "example.com/fns/annotate:v1"

var (
	binDir   string
	buildMu  sync.Mutex
	annotate string
)

func TestMain(m *testing.M) {
	var err error
	binDir, err = os.MkdirTemp("", "fnrunner-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// annotateBinary builds the annotate test function once per test binary.
func annotateBinary(t *testing.T) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if annotate != "" {
		return annotate
	}
	out := filepath.Join(binDir, "annotate")
	cmd := exec.Command("go", "build", "-o", out, "./internal/testfn/annotate")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build annotate: %v\n%s", err, b)
	}
	annotate = out
	return out
}

func packageFiles(t *testing.T, configMap string) revision.Files {
	t.Helper()
	files, err := revision.FilesFromStrings(map[string]string{
		"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
  - image: ` + annotateImage + `
    configMap:
` + configMap + `
  - image: set-labels:v0.2
    configMap:
      tier: web
`,
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func newClient(t testing.TB, url string, opts *fnrunner.Options) *fnrunner.Client {
	t.Helper()
	c, err := fnrunner.New(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A Kptfile pipeline renders through the runner: the step whose image is
// not built in runs the annotate binary behind the runner, its results
// and log become the step's, and the builtin step runs in-process.
func TestRenderThroughRunner(t *testing.T) {
	srv := testrunner.Start(t, testrunner.Options{Programs: map[string]string{annotateImage: annotateBinary(t)}})
	c := newClient(t, srv.URL, nil)
	r := pipeline.NewKptfile(c.Resolver(fnruntime.NewRegistry(nil)), nil)
	out, err := r.Render(context.Background(), packageFiles(t, "      key: example.com/by\n      value: runner\n"))
	if err != nil {
		t.Fatal(err)
	}
	cm, _ := out.Files.Get("cm.yaml")
	for _, want := range []string{"example.com/by: 'runner'", "tier: web"} {
		if !strings.Contains(string(cm), want) {
			t.Errorf("cm.yaml lacks %q:\n%s", want, cm)
		}
	}
	if len(out.Steps) != 2 {
		t.Fatalf("steps = %+v", out.Steps)
	}
	s := out.Steps[0]
	if s.ExitCode != 0 || !strings.Contains(s.Stderr, "annotate: 2 items") {
		t.Errorf("step: exit %d, stderr %q; want 0 and the runner's log", s.ExitCode, s.Stderr)
	}
	if len(s.Results) != 1 || s.Results[0].Message != "annotated 2 items" {
		t.Errorf("results = %v, want the function's", s.Results)
	}
	if n := srv.Calls(); n != 1 {
		t.Errorf("runner calls = %d, want 1 (set-labels is built in)", n)
	}
}

// A function that fails behind the runner fails its step as a local one
// does: a *pipeline.FunctionError with the runner's message, naming the
// image and the runner.
func TestFunctionFailure(t *testing.T) {
	srv := testrunner.Start(t, testrunner.Options{Programs: map[string]string{annotateImage: annotateBinary(t)}})
	c := newClient(t, srv.URL, nil)
	r := pipeline.NewKptfile(c.Resolver(fnruntime.NewRegistry(nil)), nil)
	_, err := r.Render(context.Background(), packageFiles(t, "      fail: no annotation today\n"))
	var fe *pipeline.FunctionError
	var re *fnrunner.Error
	if !errors.As(err, &fe) || !errors.As(err, &re) {
		t.Fatalf("render: %v, want a *pipeline.FunctionError and an *fnrunner.Error", err)
	}
	if re.Image != annotateImage || re.Runner != srv.URL || re.Attempts != 1 {
		t.Errorf("error = %+v", re)
	}
	if !strings.Contains(err.Error(), "no annotation today") || !strings.Contains(fe.Stderr, "exit code 1") {
		t.Errorf("render error %q, stderr %q: want the function's message", err, fe.Stderr)
	}
	if !strings.Contains(re.Error(), annotateImage) || !strings.Contains(re.Error(), srv.URL) {
		t.Errorf("error %q does not name the image and the runner", re)
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// A runner that is down gives an error naming the runner and the image
// after a bounded number of attempts, within the backoff's time.
func TestRunnerDown(t *testing.T) {
	url := "grpc://" + freeAddr(t)
	c := newClient(t, url, &fnrunner.Options{MaxAttempts: 3, Backoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	r := pipeline.NewKptfile(c.Resolver(fnruntime.NewRegistry(nil)), nil)
	start := time.Now()
	_, err := r.Render(context.Background(), packageFiles(t, "      key: k\n      value: v\n"))
	elapsed := time.Since(start)
	var re *fnrunner.Error
	if !errors.As(err, &re) {
		t.Fatalf("render: %v, want an *fnrunner.Error", err)
	}
	if re.Attempts != 3 || re.Runner != url || re.Image != annotateImage {
		t.Errorf("error = %+v, want 3 attempts on %s for %s", re, url, annotateImage)
	}
	for _, want := range []string{url, annotateImage, "3 attempts", "Unavailable"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if elapsed > 5*time.Second {
		t.Errorf("gave up after %v, want the backoff's bound", elapsed)
	}
	t.Logf("gave up after %v: %v", elapsed, err)
}

// Unavailable is retried with backoff, and the evaluation then succeeds.
func TestUnavailableThenSuccess(t *testing.T) {
	srv := testrunner.Start(t, testrunner.Options{Handlers: map[string]testrunner.Handler{
		"example.com/fns/flaky": testrunner.FailFirst(2, codes.Unavailable, testrunner.Echo("third time\n")),
	}})
	c := newClient(t, srv.URL, &fnrunner.Options{Backoff: 10 * time.Millisecond})
	var out strings.Builder
	stderr, err := c.Function("example.com/fns/flaky", "").RunStream(context.Background(), strings.NewReader(resourceList), &out)
	if err != nil {
		t.Fatal(err)
	}
	if stderr != "third time\n" || out.String() != resourceList || srv.Calls() != 3 {
		t.Errorf("stderr %q, %d calls, output %q", stderr, srv.Calls(), out.String())
	}
}

// No other code is retried.
func TestOnlyUnavailableRetried(t *testing.T) {
	for _, code := range []codes.Code{codes.Internal, codes.ResourceExhausted, codes.InvalidArgument, codes.NotFound} {
		srv := testrunner.Start(t, testrunner.Options{Handlers: map[string]testrunner.Handler{
			"fn": testrunner.FailFirst(1, code, testrunner.Echo("")),
		}})
		c := newClient(t, srv.URL, &fnrunner.Options{Backoff: time.Millisecond})
		_, err := c.Function("fn", "").RunStream(context.Background(), strings.NewReader(resourceList), &strings.Builder{})
		if err == nil || srv.Calls() != 1 {
			t.Errorf("%v: err %v after %d calls, want an error after 1", code, err, srv.Calls())
		}
	}
}

const resourceList = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: c
`

// An image the runner does not know matches pipeline.ErrFunctionNotFound;
// the step's tag reaches the runner.
func TestNotFoundAndTag(t *testing.T) {
	srv := testrunner.Start(t, testrunner.Options{})
	c := newClient(t, srv.URL, nil)
	_, err := c.Function("example.com/fns/missing", ">=0.4, <0.5").RunStream(context.Background(), strings.NewReader(resourceList), &strings.Builder{})
	if !errors.Is(err, pipeline.ErrFunctionNotFound) || !strings.Contains(err.Error(), "example.com/fns/missing") {
		t.Errorf("err = %v, want ErrFunctionNotFound naming the image", err)
	}
	if tags := srv.Tags(); len(tags) != 1 || tags[0] != ">=0.4, <0.5" {
		t.Errorf("tags = %q", tags)
	}
}

// The resolver keeps the registry's policy: a denied image and an exec
// step never reach the runner.
func TestResolverKeepsPolicy(t *testing.T) {
	srv := testrunner.Start(t, testrunner.Options{Handlers: map[string]testrunner.Handler{"example.com/fns/denied": testrunner.Echo("")}})
	c := newClient(t, srv.URL, nil)
	res := c.Resolver(fnruntime.NewRegistry(&fnruntime.Options{Deny: []string{"example.com/fns/denied"}}))
	if _, err := res.Resolve(context.Background(), pipeline.Step{Image: "example.com/fns/denied"}); !errors.Is(err, pipeline.ErrNotAllowed) {
		t.Errorf("denied image: %v, want ErrNotAllowed", err)
	}
	if _, err := res.Resolve(context.Background(), pipeline.Step{Exec: "./fn"}); !errors.Is(err, pipeline.ErrNotAllowed) {
		t.Errorf("exec step: %v, want ErrNotAllowed", err)
	}
	if _, err := c.Resolver(nil).Resolve(context.Background(), pipeline.Step{Exec: "./fn"}); !errors.Is(err, pipeline.ErrFunctionNotFound) {
		t.Errorf("exec step without a registry: %v, want ErrFunctionNotFound", err)
	}
	// A version the builtin does not implement goes to the runner.
	fn, err := res.Resolve(context.Background(), pipeline.Step{Image: "ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.1"})
	if _, ok := fn.(*fnrunner.Function); err != nil || !ok {
		t.Errorf("set-labels:v0.1: %T, %v; want the runner's function", fn, err)
	}
	if srv.Calls() != 0 {
		t.Errorf("runner calls = %d", srv.Calls())
	}
}

// A deadline bounds an evaluation: Options.Timeout when the context has
// none, the context's when it has one, even a longer one.
func TestDeadline(t *testing.T) {
	hang := func(ctx context.Context, _ *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	srv := testrunner.Start(t, testrunner.Options{Handlers: map[string]testrunner.Handler{"hang": hang}})
	c := newClient(t, srv.URL, &fnrunner.Options{Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := c.Function("hang", "").RunStream(context.Background(), strings.NewReader(resourceList), &strings.Builder{})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Errorf("Options.Timeout: %v after %v, want DeadlineExceeded after 200ms", err, time.Since(start))
	}
	if !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), `"hang"`) {
		t.Errorf("error %q does not name the runner and the image", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = c.Function("hang", "").RunStream(ctx, strings.NewReader(resourceList), &strings.Builder{})
	if d := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || d < 500*time.Millisecond {
		t.Errorf("the context's deadline: %v after %v, want DeadlineExceeded after 600ms", err, d)
	}
}

// A log over Options.MaxLog and an output over Options.MaxOutput within
// gRPC's receive size are refused with an error matching
// revision.ErrLimit, and nothing is written.
func TestLogAndOutputBounds(t *testing.T) {
	srv := testrunner.Start(t, testrunner.Options{Handlers: map[string]testrunner.Handler{
		"chatty": testrunner.Echo(strings.Repeat("x", 3000)),
	}})
	c := newClient(t, srv.URL, &fnrunner.Options{MaxLog: 1000})
	var out strings.Builder
	_, err := c.Function("chatty", "").RunStream(context.Background(), strings.NewReader(resourceList), &out)
	var le *revision.LimitError
	if !errors.Is(err, revision.ErrLimit) || !errors.As(err, &le) || le.Limit != "fnrunner.Options.MaxLog" || out.Len() != 0 {
		t.Errorf("log bound: %v, %d bytes written", err, out.Len())
	}
	c = newClient(t, srv.URL, &fnrunner.Options{MaxOutput: 50})
	_, err = c.Function("chatty", "").RunStream(context.Background(), strings.NewReader(resourceList), &out)
	if !errors.Is(err, revision.ErrLimit) || !errors.As(err, &le) || le.Limit != "fnrunner.Options.MaxOutput" || out.Len() != 0 {
		t.Errorf("output bound: %v, %d bytes written", err, out.Len())
	}
}

// Malformed runner URLs are refused before any I/O.
func TestNewInvalid(t *testing.T) {
	for _, u := range []string{"", "localhost:9445", "http://localhost:9445", "grpc://localhost", "grpc://:9445",
		"grpc://user:secret@localhost:9445", "grpc://localhost:9445/path", "grpc://localhost:9445?x=1", "grpc://localhost:port"} {
		_, err := fnrunner.New(u, nil)
		if !errors.Is(err, revision.ErrInvalid) {
			t.Errorf("New(%q) = %v, want ErrInvalid", u, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("New(%q): the error shows the password: %v", u, err)
		}
	}
	if _, err := fnrunner.New("grpcs://localhost:9445", &fnrunner.Options{CAFile: filepath.Join(t.TempDir(), "none.pem")}); !errors.Is(err, revision.ErrInvalid) {
		t.Errorf("missing CA file: %v", err)
	}
}

// The resolver passes Register on to a registry, so stdfn.Kptfile
// registers the CEL validator and a Kptfile using it renders.
func TestResolverRegisters(t *testing.T) {
	srv := testrunner.Start(t, testrunner.Options{})
	c := newClient(t, srv.URL, nil)
	reg := fnruntime.NewRegistry(nil)
	res := c.Resolver(reg)
	if _, ok := res.(interface {
		Register(string, pipeline.Function)
	}); !ok {
		t.Fatalf("%T has no Register", res)
	}
	files, err := revision.FilesFromStrings(map[string]string{
		"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  validators:
  - image: cad.configasdata.dev/validate-cel
    configMap:
      expression: object.kind != "Secret"
      message: no secrets
`,
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stdfn.Kptfile(res, nil).Render(context.Background(), files); err != nil {
		t.Errorf("render with the CEL validator: %v", err)
	}
	if srv.Calls() != 0 {
		t.Errorf("runner calls = %d", srv.Calls())
	}
	if _, ok := c.Resolver(pipeline.ResolverFunc(reg.Resolve)).(interface {
		Register(string, pipeline.Function)
	}); ok {
		t.Error("a resolver over a plain resolver has Register")
	}
}

// A deadline that ends while the client waits to retry an unavailable
// runner is reported as the deadline, with the runner's last answer.
func TestDeadlineWhileRetrying(t *testing.T) {
	url := "grpc://" + freeAddr(t)
	c := newClient(t, url, &fnrunner.Options{MaxAttempts: 100, Backoff: 50 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Function("fn", "").RunStream(ctx, strings.NewReader(resourceList), &strings.Builder{})
	var re *fnrunner.Error
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &re) || re.Attempts < 2 || !strings.Contains(err.Error(), "Unavailable") {
		t.Errorf("err = %v, want DeadlineExceeded after several attempts, with the last Unavailable", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned after %v, want about 300ms", d)
	}
}
