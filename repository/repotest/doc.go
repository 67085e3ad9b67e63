// Package repotest checks that a repository backend keeps the contract of
// package repository, and helps users test code that calls a repository.
//
// A backend's tests call [Run] with a [Harness] that opens fresh, empty
// repositories:
//
//	func TestConformance(t *testing.T) {
//		repotest.Run(t, repotest.Harness{
//			New: func(t *testing.T) repository.Repository { return memrepo.New("test", nil) },
//		})
//	}
//
// [Intercept] wraps any repository with per-method hooks, to inject errors
// or observe calls in a user's tests without a mock.
//
// [NewGitServer] serves bare git repositories over smart HTTP on loopback
// (with the git binary's http-backend), for tests of remote git
// repositories that must not reach the network.
package repotest
