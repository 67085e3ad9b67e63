// Package testrunner is a function runner for tests and examples: a
// server of Porch's function-evaluator protocol on a free loopback port
// that evaluates each image it knows by running a local program over the
// ResourceList, as Porch's executable evaluator does, or by calling a Go
// handler. It answers as Porch's runner answers: NotFound for an image it
// does not know, Internal with the function's standard error for a
// program that exits non-zero, the output and the standard error as the
// log for one that succeeds.
package testrunner

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/configasdata/cad/fnrunner/internal/evaluatorpb"
)

// Handler evaluates one request in Go.
type Handler func(ctx context.Context, req *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error)

// Options configure a [Server]. Images are looked up as sent, then
// without their tag.
type Options struct {
	// Programs maps an image to the path of a program that is the
	// function: the ResourceList on stdin, the output on stdout.
	Programs map[string]string
	// Handlers maps an image to a Go handler; it wins over Programs.
	Handlers map[string]Handler
	// TLS, when set, makes the server speak TLS with it.
	TLS *tls.Config
	// MaxSendMsgSize is the server's maximum send size; zero means
	// gRPC's default (no bound).
	MaxSendMsgSize int
	// MaxRecvMsgSize is the server's maximum receive size, as Porch's
	// runner's --max-request-body-size; zero means gRPC's default (4 MiB).
	MaxRecvMsgSize int
}

// Server is a running test runner. It is safe for concurrent use.
type Server struct {
	// Addr is host:port on the loopback interface.
	Addr string
	// URL is grpc://Addr, or grpcs://Addr with Options.TLS.
	URL string

	evaluatorpb.UnimplementedFunctionEvaluatorServer
	opts  Options
	srv   *grpc.Server
	calls atomic.Int64
	mu    sync.Mutex
	tags  []string
	done  chan struct{}
}

// Start starts a server on a free loopback port and stops it when the
// test ends. It fails the test when it cannot listen.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Listen(opts)
	if err != nil {
		t.Fatalf("testrunner: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Listen starts a server on a free loopback port; Stop stops it. It
// returns the error of net.Listen.
func Listen(opts Options) (*Server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var so []grpc.ServerOption
	scheme := "grpc"
	if opts.TLS != nil {
		so = append(so, grpc.Creds(credentials.NewTLS(opts.TLS)))
		scheme = "grpcs"
	}
	if opts.MaxRecvMsgSize > 0 {
		so = append(so, grpc.MaxRecvMsgSize(opts.MaxRecvMsgSize))
	}
	if opts.MaxSendMsgSize > 0 {
		so = append(so, grpc.MaxSendMsgSize(opts.MaxSendMsgSize))
	}
	s := &Server{Addr: lis.Addr().String(), opts: opts, srv: grpc.NewServer(so...), done: make(chan struct{})}
	s.URL = scheme + "://" + s.Addr
	evaluatorpb.RegisterFunctionEvaluatorServer(s.srv, s)
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(lis)
	}()
	return s, nil
}

// Stop stops the server, ending the calls in flight, and waits for it.
func (s *Server) Stop() {
	s.srv.Stop()
	<-s.done
}

// Calls returns how many evaluations the server received.
func (s *Server) Calls() int64 { return s.calls.Load() }

// Tags returns the tag of every request received, in order.
func (s *Server) Tags() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tags...)
}

// EvaluateFunction implements the protocol.
func (s *Server) EvaluateFunction(ctx context.Context, req *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error) {
	s.calls.Add(1)
	s.mu.Lock()
	s.tags = append(s.tags, req.Tag)
	s.mu.Unlock()
	name := req.Image
	bare := name
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		bare = name[:i]
	}
	for _, n := range []string{name, bare} {
		if h, ok := s.opts.Handlers[n]; ok {
			return h(ctx, req)
		}
	}
	for _, n := range []string{name, bare} {
		if p, ok := s.opts.Programs[n]; ok {
			return run(ctx, p, req)
		}
	}
	return nil, status.Errorf(codes.NotFound, "function %q not found", req.Image)
}

func run(ctx context.Context, program string, req *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, program)
	cmd.Stdin = bytes.NewReader(req.ResourceList)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, status.Errorf(codes.Internal, "failed to evaluate function %q: exit code %d, stderr: %s", req.Image, ee.ExitCode(), stderr.String())
		}
		return nil, status.Errorf(codes.Internal, "failed to execute function %q: %v", req.Image, err)
	}
	return &evaluatorpb.EvaluateFunctionResponse{ResourceList: stdout.Bytes(), Log: stderr.Bytes()}, nil
}

// Echo is a handler that returns the input unchanged with log as the log.
func Echo(log string) Handler {
	return func(_ context.Context, req *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error) {
		return &evaluatorpb.EvaluateFunctionResponse{ResourceList: req.ResourceList, Log: []byte(log)}, nil
	}
}

// FailFirst returns a handler that answers with code for the first n
// calls and then calls next.
func FailFirst(n int64, code codes.Code, next Handler) Handler {
	var calls atomic.Int64
	return func(ctx context.Context, req *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error) {
		if c := calls.Add(1); c <= n {
			return nil, status.Error(code, fmt.Sprintf("failing call %d of %d", c, n))
		}
		return next(ctx, req)
	}
}
