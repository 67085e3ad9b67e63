package apiserver

import (
	"context"
	"sync"
	"testing"
)

// A repository's listing is built once per state of its refs: lists that
// find the refs as they were share it (concurrent ones included), and a
// write makes the next list build it again, with the change. (The
// benchmark covers the cache turned off: swapping it here would race with
// the server's watches.)
func TestRepositoryListing(t *testing.T) {
	ts := startServer(t, "", nil)
	ctx, release := withScope(context.Background(), ts.pool)
	defer release()
	if code := ts.doJSON("POST", prPath, initPR("a", "ws"), nil); code != 201 {
		t.Fatalf("create: %d", code)
	}
	var e *repoEntry
	for _, x := range ts.entries("default") {
		if x.name == "default" {
			e = x
		}
	}
	if e == nil {
		t.Fatal("no default repository")
	}
	first, ok, err := ts.listing(ctx, e, false)
	if err != nil || !ok || len(first) != 1 || first[0].obj == nil {
		t.Fatalf("listing: %d revisions, %v, %v", len(first), ok, err)
	}
	var wg sync.WaitGroup
	got := make([][]listedRevision, 8)
	for i := range got {
		wg.Go(func() {
			revs, _, err := ts.listing(ctx, e, false)
			if err != nil {
				t.Error(err)
			}
			got[i] = revs
		})
	}
	wg.Wait()
	for _, revs := range got {
		if len(revs) != 1 || revs[0].obj != first[0].obj {
			t.Fatal("a list of the same refs built the listing again")
		}
	}
	if code := ts.doJSON("POST", prPath, initPR("b", "ws"), nil); code != 201 {
		t.Fatalf("create: %d", code)
	}
	after, _, err := ts.listing(ctx, e, false)
	if err != nil || len(after) != 2 {
		t.Fatalf("after a write: %d revisions, %v", len(after), err)
	}
	// Through the API, too: the list shows the new revision.
	var list struct {
		Items []map[string]any `json:"items"`
	}
	ts.doJSON("GET", prPath, nil, &list)
	if len(list.Items) != 2 {
		t.Fatalf("listed %d", len(list.Items))
	}
}
