package gitrepo_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// A remote's refs are not read atomically: git writes the refs of one
// push one after another (refs/cad/metadata first, in name order), so a
// fetch during an approval can see the approval's metadata commit while
// the proposal still exists. A condition change planned on that torn
// state passes its Version check (the approval's metadata commit changes
// no revision's metadata) and its compare-and-swap of the metadata ref
// matches; it must still lose, for the proposal it changes is gone by the
// time it pushes. Both the approval and the condition change winning
// would publish a revision whose condition is False.
//
// The proposal goes either before the push asks for the remote's refs,
// or after, just before the push's commands reach the server.
func TestRemoteConditionChangeOnTornApproval(t *testing.T) {
	for _, when := range []string{"refs", "commands"} {
		t.Run(when, func(t *testing.T) { testConditionChangeOnTornApproval(t, when) })
	}
}

func testConditionChangeOnTornApproval(t *testing.T, when string) {
	ctx := context.Background()
	dir := newBare(t)
	srv := gitServer(t, filepath.Dir(dir), "", "")
	a := mustOpen(t, gitSpec(srv.URL+"/"+filepath.Base(dir)), nil)
	defer a.Close()
	key := revision.Key{Package: "p", Workspace: "ws"}
	propose(t, a, "p", "ws")
	gate := revision.ReadinessGate{ConditionType: "example.com/checked"}
	cond := func(s revision.ConditionStatus) revision.Metadata {
		md := revision.Metadata{ReadinessGates: []revision.ReadinessGate{gate}}
		return md.WithCondition(revision.Condition{Type: gate.ConditionType, Status: s, Reason: "Checker"})
	}
	ready, err := a.SetMetadata(ctx, key, cond(revision.ConditionTrue), repository.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := ready.Meta().Version
	proposal := git(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/proposed/")
	if proposal == "" || strings.Contains(proposal, "\n") {
		t.Fatalf("proposal refs %q, want one", proposal)
	}

	// The approval half done on the remote: its metadata commit (the same
	// tree, a new commit) is in, the proposal not yet deleted.
	md := git(t, dir, "rev-parse", "refs/cad/metadata")
	guard := git(t, dir, "commit-tree", "-p", md, "-m", "guard", md+"^{tree}")
	git(t, dir, "update-ref", "refs/cad/metadata", guard, md)

	// The approval completes when the second writer starts its push.
	var once sync.Once
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		advert := r.URL.Query().Get("service") == "git-receive-pack"
		push := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack")
		if when == "refs" && advert || when == "commands" && push {
			once.Do(func() { git(t, dir, "update-ref", "-d", proposal) })
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	b := mustOpen(t, gitSpec(front.URL+"/"+filepath.Base(dir)), nil)
	defer b.Close()

	_, err = b.SetMetadata(ctx, key, cond(revision.ConditionFalse), repository.UpdateOptions{Version: v})
	if !errors.Is(err, repository.ErrConflict) {
		t.Fatalf("a condition change planned on a torn approval returned %v, want ErrConflict", err)
	}
	t.Logf("the condition change: %v", err)
	if got := git(t, dir, "rev-parse", "refs/cad/metadata"); got != guard {
		t.Fatalf("the metadata ref moved to %s; the losing condition change must write nothing", got)
	}
}
