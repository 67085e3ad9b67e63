// Package fnrunnertest runs a function runner for tests, as
// net/http/httptest runs an HTTP server: a server of Porch's
// function-evaluator protocol on a free loopback port that evaluates each
// image it knows by running a local program over the ResourceList (stdin
// in, stdout out), as Porch's executable evaluator does. It answers as
// Porch's runner answers: NotFound for an image it does not know,
// Internal with the function's standard error for a program that exits
// non-zero, the output and the standard error as the log otherwise.
//
// Tests of programs that embed cad (an operator, a server) point a
// fnrunner.Client at Server.URL to run functions that are not built in.
package fnrunnertest

import (
	"testing"

	"github.com/configasdata/cad/fnrunner/internal/testrunner"
)

// Server is a running function runner. It is safe for concurrent use.
type Server struct {
	// URL is grpc://host:port on the loopback interface, for fnrunner.New.
	URL string

	s *testrunner.Server
}

// Start starts a runner on a free loopback port that runs, for each image
// of programs (looked up as sent, then without its tag), the program at
// its path; it stops the runner when the test ends and fails the test when
// it cannot listen.
func Start(t testing.TB, programs map[string]string) *Server {
	t.Helper()
	s := testrunner.Start(t, testrunner.Options{Programs: programs})
	return &Server{URL: s.URL, s: s}
}

// Calls returns how many evaluations the runner received.
func (s *Server) Calls() int64 { return s.s.Calls() }

// Tags returns the tag field of every evaluation request received, in
// order (the name fnrunner gives each evaluation).
func (s *Server) Tags() []string { return s.s.Tags() }
