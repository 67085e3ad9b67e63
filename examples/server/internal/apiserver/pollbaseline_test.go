package apiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// watchEvents starts a watch of every PackageRevision (from
// resourceVersion rv, "" for now) and returns its events as "TYPE name".
func watchEvents(t *testing.T, ts *testServer, rv string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", ts.URL+prPath+"?watch=true&resourceVersion="+rv, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	t.Cleanup(func() { resp.Body.Close() })
	out := make(chan string, 1000)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var ev struct {
				Type   string `json:"type"`
				Object struct {
					Metadata struct {
						Name string `json:"name"`
					} `json:"metadata"`
				} `json:"object"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				out <- ev.Type + " " + ev.Object.Metadata.Name
			}
		}
	}()
	return out
}

// collect returns the events of ch until it has been quiet for quiet
// (at most 30 s).
func collect(ch <-chan string, quiet time.Duration) map[string]bool {
	got := map[string]bool{}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return got
			}
			got[ev] = true
		case <-time.After(quiet):
			return got
		case <-deadline:
			return got
		}
	}
}

// pushApproval publishes revision rev of package pkg (workspace v<rev>)
// with the git CLI into the repository at url, through a clone at work
// (made when missing), as Porch writes an approval: a commit on main and
// a tag <pkg>/v<rev>.
func pushApproval(t testing.TB, url, work, pkg string, rev int) {
	t.Helper()
	if _, err := os.Stat(work); err != nil {
		gitRun(t, "", "clone", "-q", "-b", "main", url, work)
	}
	kf := fmt.Sprintf("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: %s\ninfo:\n  description: pushed revision %d\n", pkg, rev)
	if err := os.MkdirAll(filepath.Join(work, pkg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, pkg, "Kptfile"), []byte(kf), 0o644); err != nil {
		t.Fatal(err)
	}
	msg := fmt.Sprintf("Approving package revision %s/%d\n\nkpt:{\"package\":%q,\"workspaceName\":\"v%d\",\"revision\":\"%d\"}\n", pkg, rev, pkg, rev, rev)
	gitRun(t, work, "add", pkg)
	gitRun(t, work, "commit", "-q", "-m", msg)
	tag := fmt.Sprintf("%s/v%d", pkg, rev)
	gitRun(t, work, "tag", tag)
	gitRun(t, work, "push", "-q", "origin", "main", tag)
}

// At a cold start with nobody watching, the first poll of a registration
// publishes nothing (it takes its baseline from the revisions' metadata);
// a watch that comes later gets every object from its own list, and a
// push afterwards publishes only what it changed: the new revision and
// the one that lost the latest label, never the revisions it left alone.
func TestFirstPollUnwatchedPublishesNothing(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, "", func(o *Options) {
		o.NoDefaultRepository = true
		o.RepositoryRoots = append(o.RepositoryRoots, root)
	})
	dir := filepath.Join(root, "cold")
	porchRepo(t, dir, 2, 1)
	repo := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
		"metadata": map[string]any{"name": "cold"},
		"spec":     map[string]any{"type": "git", "git": map[string]any{"repo": dir, "branch": "main"}}}
	if code := ts.doJSON("POST", repoPath, repo, nil); code != http.StatusCreated {
		t.Fatalf("create repository: %d", code)
	}
	e, ok := ts.entry("default", "cold")
	if !ok {
		t.Fatal("no registration")
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		e.pollMu.Lock()
		polled, n := e.polled, len(e.pollObjs)
		e.pollMu.Unlock()
		if polled {
			if n != 4 {
				t.Fatalf("first poll's baseline holds %d objects, want 4", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the repository was not polled")
		}
	}
	ts.hub.mu.Lock()
	published := len(ts.hub.recent)
	ts.hub.mu.Unlock()
	if published != 0 {
		t.Fatalf("the first poll, nobody watching, published %d objects", published)
	}

	events := watchEvents(t, ts, "")
	initial := collect(events, time.Second)
	for _, name := range []string{"cold.pkg-000.v1", "cold.pkg-001.v1", "cold.pkg-000.main", "cold.pkg-001.main"} {
		if !initial["ADDED "+name] {
			t.Errorf("the watch's first events %v lack ADDED %s", initial, name)
		}
	}
	pushApproval(t, dir, filepath.Join(t.TempDir(), "work"), "pkg-000", 2)
	after := collect(events, 2*time.Second)
	if !after["ADDED cold.pkg-000.v2"] || !after["MODIFIED cold.pkg-000.v1"] {
		t.Errorf("after the push the watch sent %v, want ADDED cold.pkg-000.v2 and MODIFIED cold.pkg-000.v1", after)
	}
	if after["MODIFIED cold.pkg-001.v1"] || after["ADDED cold.pkg-001.v1"] {
		t.Errorf("after the push the watch sent %v: cold.pkg-001.v1 did not change", after)
	}
}

// A watch subscribed before a repository is registered gets its objects
// from the first poll.
func TestFirstPollWatchedPublishes(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, "", func(o *Options) {
		o.NoDefaultRepository = true
		o.RepositoryRoots = append(o.RepositoryRoots, root)
	})
	events := watchEvents(t, ts, "")
	ts.waitWatchers(t, 1)
	dir := filepath.Join(root, "late")
	porchRepo(t, dir, 2, 1)
	repo := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
		"metadata": map[string]any{"name": "late"},
		"spec":     map[string]any{"type": "git", "git": map[string]any{"repo": dir, "branch": "main"}}}
	if code := ts.doJSON("POST", repoPath, repo, nil); code != http.StatusCreated {
		t.Fatalf("create repository: %d", code)
	}
	got := collect(events, 2*time.Second)
	for _, name := range []string{"late.pkg-000.v1", "late.pkg-001.v1", "late.pkg-000.main", "late.pkg-001.main"} {
		if !got["ADDED "+name] {
			t.Errorf("the watch sent %v, want ADDED %s", got, name)
		}
	}
}
