package fnrunner

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/configasdata/cad/fnrunner/internal/evaluatorpb"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// Defaults of [Options].
const (
	// DefaultTimeout bounds one evaluation whose context has no deadline,
	// as fnruntime.DefaultTimeout bounds a local run.
	DefaultTimeout = 5 * time.Minute
	// DefaultMaxAttempts is how many times an evaluation is tried while
	// the runner answers Unavailable.
	DefaultMaxAttempts = 4
	// DefaultBackoff is the wait before the first retry; each further
	// retry waits twice as long, up to DefaultMaxBackoff.
	DefaultBackoff    = 200 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
	// DefaultMaxOutput bounds the output ResourceList of one evaluation,
	// as fnruntime.Options.MaxOutput bounds an exec function's stdout.
	DefaultMaxOutput = 64 << 20
	// DefaultMaxLog bounds the function's log, as fnruntime.Options.MaxStderr
	// bounds an exec function's stderr.
	DefaultMaxLog = 1 << 20
)

// envelope is what a response may hold beyond its two fields' contents:
// tags and length prefixes.
const envelope = 64 << 10

// Options configure a [Client]. The zero value (and nil) means the
// defaults named on each field.
type Options struct {
	// Timeout bounds one evaluation, retries included, when the caller's
	// context has no deadline; a deadline of the context wins, longer or
	// shorter. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxAttempts is how many times an evaluation is tried while the
	// runner answers codes.Unavailable (it is down, restarting or
	// unreachable); no other failure is retried. Zero means
	// DefaultMaxAttempts; 1 means no retry.
	MaxAttempts int
	// Backoff is the wait before the first retry, doubled for each next
	// one up to MaxBackoff, each with up to 20% of random jitter. It also
	// paces gRPC's reconnection to the runner. Zero means DefaultBackoff
	// and DefaultMaxBackoff.
	Backoff, MaxBackoff time.Duration
	// MaxOutput bounds the size of the output ResourceList of one
	// evaluation. The whole response is held to MaxOutput + MaxLog (and a
	// small envelope) by gRPC's maximum receive size, which gRPC checks
	// against the message's length prefix before it reads the message, so
	// a runner that sends more costs no memory in proportion. The render
	// holds the output to its revision.YAMLLimits as well. Zero means
	// DefaultMaxOutput.
	MaxOutput int64
	// MaxLog bounds the size of the function's log. Zero means
	// DefaultMaxLog.
	MaxLog int64
	// RootCAs are the certificate authorities that a grpcs:// runner's
	// certificate is checked against. Nil means CAFile's, or the system's
	// when CAFile is empty too.
	RootCAs *x509.CertPool
	// CAFile is a file of PEM certificates, read by New, used as RootCAs
	// when RootCAs is nil.
	CAFile string
	// TLSServerName is the name a grpcs:// runner's certificate must be
	// valid for. Empty means the URL's host.
	TLSServerName string
	// DialOptions are added to the gRPC client's, after cad's own (an
	// interceptor, a custom dialer, a keepalive).
	DialOptions []grpc.DialOption
}

func (o *Options) withDefaults() Options {
	var d Options
	if o != nil {
		d = *o
	}
	if d.Timeout <= 0 {
		d.Timeout = DefaultTimeout
	}
	if d.MaxAttempts <= 0 {
		d.MaxAttempts = DefaultMaxAttempts
	}
	if d.Backoff <= 0 {
		d.Backoff = DefaultBackoff
	}
	if d.MaxBackoff <= 0 {
		d.MaxBackoff = DefaultMaxBackoff
	}
	if d.MaxBackoff < d.Backoff {
		d.MaxBackoff = d.Backoff
	}
	if d.MaxOutput <= 0 {
		d.MaxOutput = DefaultMaxOutput
	}
	if d.MaxLog <= 0 {
		d.MaxLog = DefaultMaxLog
	}
	return d
}

// Client calls a function runner: a server of Porch's function-evaluator
// protocol (the gRPC service evaluator.FunctionEvaluator), such as the
// function runner a Porch installation deploys. It is safe for concurrent
// use; its connection is shared by every evaluation and made on the first
// one, so New does no I/O beyond reading Options.CAFile.
type Client struct {
	addr string // the runner's URL as given, for errors
	opts Options
	conn *grpc.ClientConn
	api  evaluatorpb.FunctionEvaluatorClient
}

// New returns a client of the function runner at target, a URL
// grpc://host:port (plain text) or grpcs://host:port (TLS, checked
// against Options.RootCAs or CAFile). A URL of another scheme, without a
// host or port, or with a user, path, query or fragment is an error
// matching revision.ErrInvalid, as is a CAFile that cannot be read or
// holds no certificate. Close the client when done.
func New(target string, opts *Options) (*Client, error) {
	o := opts.withDefaults()
	u, err := url.Parse(target)
	if err != nil {
		return nil, invalidf("function runner: malformed URL")
	}
	target = redact(u)
	if u.Scheme != "grpc" && u.Scheme != "grpcs" {
		return nil, invalidf("function runner %q: the scheme must be grpc or grpcs", target)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, invalidf("function runner %q: the URL must be scheme://host:port and nothing more", target)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" || port == "" {
		return nil, invalidf("function runner %q: the URL must name a host and a port", target)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, invalidf("function runner %q: port %q is not a number", target, port)
	}
	creds := insecure.NewCredentials()
	if u.Scheme == "grpcs" {
		pool := o.RootCAs
		if pool == nil && o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, invalidf("function runner %q: CA file: %v", target, err)
			}
			pool = x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, invalidf("function runner %q: CA file %s holds no PEM certificate", target, o.CAFile)
			}
		}
		name := o.TLSServerName
		if name == "" {
			name = host
		}
		creds = credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: name, MinVersion: tls.VersionTLS12})
	}
	dial := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(int(o.MaxOutput + o.MaxLog + envelope))),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: o.Backoff, Multiplier: 2, Jitter: 0.2, MaxDelay: o.MaxBackoff},
			MinConnectTimeout: 20 * time.Second,
		}),
	}
	conn, err := grpc.NewClient("dns:///"+u.Host, append(dial, o.DialOptions...)...)
	if err != nil {
		return nil, invalidf("function runner %q: %v", target, err)
	}
	return &Client{addr: u.Scheme + "://" + u.Host, opts: o, conn: conn, api: evaluatorpb.NewFunctionEvaluatorClient(conn)}, nil
}

// Close closes the connection to the runner. Evaluations in flight fail
// with codes.Canceled. It returns the gRPC connection's error, if any.
func (c *Client) Close() error { return c.conn.Close() }

// Address returns the runner's URL, scheme://host:port.
func (c *Client) Address() string { return c.addr }

// Function returns the function that evaluates image on the runner.
// The image is sent as it is; tag, when not empty, is sent as the
// request's tag (a version or a semver constraint, pipeline.Step.Tag),
// which Porch's runner resolves against the image's tags.
func (c *Client) Function(image, tag string) *Function {
	return &Function{c: c, image: image, tag: tag}
}

// Resolver returns a pipeline.Resolver that resolves a step with
// builtins (a *fnruntime.Registry, typically) and, when builtins knows no
// function for an image step (an error matching
// pipeline.ErrFunctionNotFound: no builtin, or not at the version the step
// pins), to the runner's [Function] for the step's image and tag. Every
// other error of builtins (pipeline.ErrNotAllowed from its allow and deny
// lists, a malformed tag) is returned as it is, and exec steps are never
// sent to the runner. A nil builtins sends every image step to the
// runner, and an exec step gets an error matching
// pipeline.ErrFunctionNotFound. When builtins has a method
// Register(name string, fn pipeline.Function), as a *fnruntime.Registry
// has, so has the resolver returned, which passes it on: code that
// registers functions in the resolver it is given (stdfn.Kptfile
// registers the CEL validator) works as with builtins alone. The
// resolver is safe for concurrent use when builtins is.
func (c *Client) Resolver(builtins pipeline.Resolver) pipeline.Resolver {
	r := &resolver{c: c, builtins: builtins}
	if reg, ok := builtins.(registrar); ok {
		return &registeringResolver{resolver: r, reg: reg}
	}
	return r
}

// registrar is celfn.Registrar and kpttestfns.Registerer: what takes
// functions by name.
type registrar interface {
	Register(name string, fn pipeline.Function)
}

type resolver struct {
	c        *Client
	builtins pipeline.Resolver
}

func (r *resolver) Resolve(ctx context.Context, step pipeline.Step) (pipeline.Function, error) {
	if r.builtins != nil {
		fn, err := r.builtins.Resolve(ctx, step)
		if err == nil || step.Image == "" || step.Exec != "" || !errors.Is(err, pipeline.ErrFunctionNotFound) {
			return fn, err
		}
	} else if step.Image == "" || step.Exec != "" {
		return nil, fmt.Errorf("step %q: %w: the function runner evaluates images only", step.Name, pipeline.ErrFunctionNotFound)
	}
	return r.c.Function(step.Image, step.Tag), nil
}

type registeringResolver struct {
	*resolver
	reg registrar
}

func (r *registeringResolver) Register(name string, fn pipeline.Function) { r.reg.Register(name, fn) }

// Function is one image evaluated on a function runner. It implements
// pipeline.StreamFunction: the renderer sends the serialized ResourceList
// as it would to a container, and reads the output's items and results.
// It is safe for concurrent use.
type Function struct {
	c     *Client
	image string
	tag   string
}

var _ pipeline.StreamFunction = (*Function)(nil)

// Run implements pipeline.Function: it encodes rl, evaluates it on the
// runner and decodes the output into rl. Errors are those of RunStream,
// and a *pipeline.FunctionError when the output is not a ResourceList.
func (f *Function) Run(ctx context.Context, rl *pipeline.ResourceList) error {
	in, err := rl.Encode()
	if err != nil {
		return err
	}
	var out bytes.Buffer
	stderr, err := f.RunStream(ctx, bytes.NewReader(in), &out)
	if err != nil {
		return err
	}
	got, perr := pipeline.ParseResourceList(out.Bytes())
	if perr != nil {
		return &pipeline.FunctionError{ExitCode: 1, Stderr: stderr, Err: f.errorf(1, fmt.Errorf("malformed output: %w", perr))}
	}
	*rl = *got
	return nil
}

// RunStream implements pipeline.StreamFunction: it sends the ResourceList
// read from in to the runner, writes the output ResourceList to out and
// returns the function's log as its standard error. Every error names
// the image and the runner and unwraps to an *Error:
//   - the function failed (the runner answers Internal or Unknown, as
//     Porch's does for a non-zero exit, with the function's results and
//     standard error in the message): a *pipeline.FunctionError of exit
//     code 1 whose Stderr is that message;
//   - the runner knows no such image (NotFound): an error matching
//     pipeline.ErrFunctionNotFound;
//   - the output is over Options.MaxOutput or the log over
//     Options.MaxLog: an error matching revision.ErrLimit (a
//     *revision.LimitError), and nothing is written to out;
//   - the runner stayed Unavailable for Options.MaxAttempts tries, or
//     failed otherwise: the *Error, with the gRPC status;
//   - the deadline or the context ended first: an error matching
//     context.DeadlineExceeded or context.Canceled.
func (f *Function) RunStream(ctx context.Context, in io.Reader, out io.Writer) (string, error) {
	c := f.c
	rl, err := io.ReadAll(in)
	if err != nil {
		return "", err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	req := &evaluatorpb.EvaluateFunctionRequest{ResourceList: rl, Image: f.image, Tag: f.tag}
	var resp *evaluatorpb.EvaluateFunctionResponse
	attempt := 0
	wait := c.opts.Backoff
	for {
		attempt++
		resp, err = c.api.EvaluateFunction(ctx, req)
		if err == nil || status.Code(err) != codes.Unavailable || attempt >= c.opts.MaxAttempts || ctx.Err() != nil {
			break
		}
		d := wait + time.Duration(rand.Int64N(int64(wait)/5+1))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		if ctx.Err() != nil {
			break
		}
		wait = min(2*wait, c.opts.MaxBackoff)
	}
	if err != nil {
		return "", f.fail(ctx, attempt, err)
	}
	if n := int64(len(resp.ResourceList)); n > c.opts.MaxOutput {
		return "", f.errorf(attempt, f.limit("output ResourceList", "fnrunner.Options.MaxOutput", c.opts.MaxOutput, fmt.Errorf("%d bytes", n)))
	}
	if n := int64(len(resp.Log)); n > c.opts.MaxLog {
		return "", f.errorf(attempt, f.limit("log", "fnrunner.Options.MaxLog", c.opts.MaxLog, fmt.Errorf("%d bytes", n)))
	}
	if _, err := out.Write(resp.ResourceList); err != nil {
		return string(resp.Log), err
	}
	return string(resp.Log), nil
}

// tooLarge matches gRPC's message for a message over the maximum
// receive size: "grpc: received message larger than max (N vs. M)".
var tooLarge = regexp.MustCompile(`received message (?:after decompression )?larger than max \((\d+) vs\. (\d+)\)`)

// fail turns the error of the last attempt into cad's.
func (f *Function) fail(ctx context.Context, attempts int, err error) error {
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.DeadlineExceeded, codes.Canceled, codes.Unavailable:
		// Unavailable too: the context may end while waiting to retry.
		cerr := ctx.Err()
		if cerr == nil && st.Code() == codes.DeadlineExceeded {
			// The runner saw the deadline gRPC sent it end a moment
			// before this side's timer fired.
			cerr = context.DeadlineExceeded
		}
		if cerr != nil {
			return f.errorf(attempts, fmt.Errorf("%w (%s: %s)", cerr, st.Code(), st.Message()))
		}
	case codes.NotFound:
		return f.errorf(attempts, fmt.Errorf("%w: %s", pipeline.ErrFunctionNotFound, st.Message()))
	case codes.ResourceExhausted:
		if m := tooLarge.FindStringSubmatch(st.Message()); m != nil {
			bound, _ := strconv.ParseInt(m[2], 10, 64)
			if bound == f.c.opts.MaxOutput+f.c.opts.MaxLog+envelope {
				return f.errorf(attempts, f.limit("response (output ResourceList and log)", "fnrunner.Options.MaxOutput", f.c.opts.MaxOutput, fmt.Errorf("%s bytes", m[1])))
			}
			// The runner's own bound refused the input (Porch's runner:
			// --max-request-body-size).
			return f.errorf(attempts, fmt.Errorf("the runner refused the input ResourceList as too large: %w", err))
		}
	case codes.Internal, codes.Unknown:
		e := f.errorf(attempts, err)
		return &pipeline.FunctionError{ExitCode: 1, Stderr: st.Message(), Err: e}
	}
	return f.errorf(attempts, err)
}

func (f *Function) limit(what, bound string, value int64, cause error) error {
	return &revision.LimitError{What: fmt.Sprintf("%s of function %q from runner %s", what, f.image, f.c.addr), Limit: bound, Max: value, Err: cause}
}

func (f *Function) errorf(attempts int, err error) *Error {
	return &Error{Image: f.image, Runner: f.c.addr, Attempts: attempts, Err: err}
}

// Error is a failed evaluation on a function runner: it names the image,
// the runner and how many times the evaluation was tried. Err is the
// cause, a gRPC status error or one of cad's (see Function.RunStream).
type Error struct {
	Image    string // the function's image
	Runner   string // the runner's URL, scheme://host:port
	Attempts int    // how many calls were made
	Err      error
}

// Error names the image and the runner and gives the cause.
func (e *Error) Error() string {
	tries := ""
	if e.Attempts > 1 {
		tries = fmt.Sprintf(" (%d attempts)", e.Attempts)
	}
	return fmt.Sprintf("function %q on runner %s%s: %v", e.Image, e.Runner, tries, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{revision.ErrInvalid}, args...)...)
}

// redact drops a user and password from u for an error message.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}
