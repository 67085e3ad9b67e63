package repotest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Harness tells Run how to get repositories of the backend under test.
type Harness struct {
	// New returns a fresh, empty repository. Run closes it at the end of
	// the test. Required.
	New func(t *testing.T) repository.Repository
	// Reopen, when set, returns a second, independent handle on the same
	// storage as r, as another process would open it. It enables the
	// tests of visibility and compare-and-swap across handles.
	Reopen func(t *testing.T, r repository.Repository) repository.Repository
	// NoPlaceholder says the backend has no branch placeholder revisions
	// (revision -1), as an OCI registry has none.
	NoPlaceholder bool
	// NoCreation says the backend does not record how revisions were
	// created (revision.CommitOptions.Creation): Meta.Creation is always
	// nil. Without it, a backend that returns no Creation fails the
	// Creation test.
	NoCreation bool
	// NoBatch says the backend cannot batch writes: the Batch test then
	// checks that repository.BeginBatch refuses with ErrNotSupported.
	// Without it, the Batch test runs a batched sync through the backend's
	// repository.Batch.
	NoBatch bool
	// Concurrency is the number of goroutines of the race tests; default 8.
	Concurrency int
	// Damage, when set, damages what r's storage holds for the published
	// revision key so that it cannot be read (as a crash, a careless copy
	// or a hostile writer leaves it: in git a tag naming a missing
	// object), and returns a text the damage's error names (the ref, the
	// tag). It enables the Damage test: List returns the other revisions
	// with an error matching repository.ErrDamaged. A backend whose
	// storage cannot be damaged (memory) leaves it nil.
	Damage func(t *testing.T, r repository.Repository, key revision.Key) string
}

// Run runs the conformance suite as subtests of t.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("repotest.Harness.New is required")
	}
	if h.Concurrency == 0 {
		h.Concurrency = 8
	}
	s := &suite{h: h}
	tests := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"Empty", s.testEmpty},
		{"CreateAndCommit", s.testCreateAndCommit},
		{"NothingBeforeCommit", s.testNothingBeforeCommit},
		{"InvalidKeys", s.testInvalidKeys},
		{"UnsafePaths", s.testUnsafePaths},
		{"DuplicateWorkspace", s.testDuplicateWorkspace},
		{"EditDraft", s.testEditDraft},
		{"StaleDraftCommit", s.testStaleDraftCommit},
		{"Lifecycle", s.testLifecycle},
		{"InvalidTransitions", s.testInvalidTransitions},
		{"RevisionNumbers", s.testRevisionNumbers},
		{"Placeholder", s.testPlaceholder},
		{"DeletePublished", s.testDeletePublished},
		{"VersionPrecondition", s.testVersionPrecondition},
		{"ListFilters", s.testListFilters},
		{"Range", s.testRange},
		{"GetNotFound", s.testGetNotFound},
		{"ErrorType", s.testErrorType},
		{"Cancelled", s.testCancelled},
		{"RaceCreate", s.testRaceCreate},
		{"RaceCommit", s.testRaceCommit},
		{"RaceApprove", s.testRaceApprove},
		{"Reopen", s.testReopen},
		{"Watch", s.testWatch},
		{"Version", s.testVersion},
		{"Metadata", s.testMetadata},
		{"NoKptfile", s.testNoKptfile},
		{"Adopt", s.testAdopt},
		{"Batch", s.testBatch},
		{"Readiness", s.testReadiness},
		{"Creation", s.testCreation},
		{"PlaceholderPublished", s.testPlaceholderPublished},
		{"Close", s.testClose},
		{"Damage", s.testDamage},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.fn)
	}
}

type suite struct{ h Harness }

func (s *suite) open(t *testing.T) repository.Repository {
	t.Helper()
	r := s.h.New(t)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// pkgFiles returns a small kpt package named after the last path element.
func pkgFiles(pkg, marker string) revision.Files {
	name := pkg
	if i := lastSlash(pkg); i >= 0 {
		name = pkg[i+1:]
	}
	return revision.MustFiles(map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  marker: " + marker + "\n",
	})
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

func key(pkg, ws string) revision.Key { return revision.Key{Package: pkg, Workspace: ws} }

// createDraft creates and commits a draft; it fails the test on error.
func createDraft(t *testing.T, r repository.Repository, pkg, ws, marker string) revision.PackageRevision {
	t.Helper()
	d, err := r.CreateDraft(ctx(t), key(pkg, ws), repository.CreateDraftOptions{Files: pkgFiles(pkg, marker)})
	if err != nil {
		t.Fatalf("CreateDraft(%s, %s): %v", pkg, ws, err)
	}
	pr, err := d.Commit(ctx(t), revision.CommitOptions{Message: "test draft"})
	if err != nil {
		t.Fatalf("Commit(%s, %s): %v", pkg, ws, err)
	}
	return pr
}

func move(t *testing.T, r repository.Repository, k revision.Key, to revision.Lifecycle) revision.PackageRevision {
	t.Helper()
	pr, err := r.UpdateLifecycle(ctx(t), k, to, repository.UpdateOptions{})
	if err != nil {
		t.Fatalf("UpdateLifecycle(%s, %s): %v", k, to, err)
	}
	if got := pr.Meta().Lifecycle; got != to {
		t.Fatalf("UpdateLifecycle(%s, %s) returned lifecycle %s", k, to, got)
	}
	return pr
}

// publish creates a draft, proposes and approves it.
func publish(t *testing.T, r repository.Repository, pkg, ws, marker string) revision.PackageRevision {
	t.Helper()
	createDraft(t, r, pkg, ws, marker)
	move(t, r, key(pkg, ws), revision.LifecycleProposed)
	return move(t, r, key(pkg, ws), revision.LifecyclePublished)
}

func files(t *testing.T, pr revision.PackageRevision) revision.Files {
	t.Helper()
	f, err := pr.Files(ctx(t))
	if err != nil {
		t.Fatalf("Files(%s): %v", pr.Meta().Key, err)
	}
	return f
}

func wantErr(t *testing.T, err error, sentinel error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got no error, want %v", what, sentinel)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: got error %v, want one matching %v", what, err, sentinel)
	}
	var re *repository.Error
	if !errors.As(err, &re) {
		t.Fatalf("%s: error %v is not a *repository.Error", what, err)
	}
}

// keys returns the non-placeholder keys in revs, repository cleared.
func keys(revs []revision.PackageRevision, withPlaceholders bool) []revision.Key {
	var out []revision.Key
	for _, pr := range revs {
		k := pr.Meta().Key
		if k.IsPlaceholder() && !withPlaceholders {
			continue
		}
		k.Repository = ""
		out = append(out, k)
	}
	return out
}

func list(t *testing.T, r repository.Repository, opts repository.ListOptions) []revision.PackageRevision {
	t.Helper()
	revs, err := r.List(ctx(t), opts)
	if err != nil {
		t.Fatalf("List(%+v): %v", opts, err)
	}
	return revs
}

func (s *suite) testEmpty(t *testing.T) {
	r := s.open(t)
	if revs := list(t, r, repository.ListOptions{}); len(revs) != 0 {
		t.Fatalf("a new repository lists %v, want nothing", keys(revs, true))
	}
	if r.Name() == "" {
		t.Fatal("Name() is empty")
	}
}

func (s *suite) testCreateAndCommit(t *testing.T) {
	r := s.open(t)
	want := pkgFiles("net/istio", "one")
	d, err := r.CreateDraft(ctx(t), key("net/istio", "ws1"), repository.CreateDraftOptions{Files: want})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Files().Equal(want) {
		t.Fatal("a new draft does not start from CreateDraftOptions.Files")
	}
	pr, err := d.Commit(ctx(t), revision.CommitOptions{Message: "first"})
	if err != nil {
		t.Fatal(err)
	}
	m := pr.Meta()
	if m.Key.Package != "net/istio" || m.Key.Workspace != "ws1" || m.Key.Revision != 0 || m.Lifecycle != revision.LifecycleDraft {
		t.Fatalf("committed draft has meta %+v", m)
	}
	if m.Key.Repository != r.Name() {
		t.Fatalf("key repository %q, want %q", m.Key.Repository, r.Name())
	}
	if m.Version == "" {
		t.Fatal("committed draft has no Version")
	}
	if got := files(t, pr); !got.Equal(want) {
		t.Fatalf("committed files %v, want %v", got.Paths(), want.Paths())
	}
	got, err := r.Get(ctx(t), key("net/istio", "ws1"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta().Version != m.Version || !files(t, got).Equal(want) {
		t.Fatalf("Get returns %+v, want the committed draft %+v", got.Meta(), m)
	}
	revs := list(t, r, repository.ListOptions{})
	if k := keys(revs, true); len(k) != 1 || k[0] != (revision.Key{Package: "net/istio", Workspace: "ws1"}) {
		t.Fatalf("List = %v, want the one draft", k)
	}
	if d.Base().Version != m.Version {
		t.Fatal("after Commit, Draft.Base is not the committed revision")
	}
}

func (s *suite) testNothingBeforeCommit(t *testing.T) {
	r := s.open(t)
	d, err := r.CreateDraft(ctx(t), key("p", "ws"), repository.CreateDraftOptions{Files: pkgFiles("p", "x")})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetFile("more.yaml", []byte("a: b\n")); err != nil {
		t.Fatal(err)
	}
	if revs := list(t, r, repository.ListOptions{}); len(revs) != 0 {
		t.Fatalf("an uncommitted draft is visible: %v", keys(revs, true))
	}
	_, err = r.Get(ctx(t), key("p", "ws"))
	wantErr(t, err, repository.ErrNotFound, "Get of an uncommitted draft")
}

func (s *suite) testInvalidKeys(t *testing.T) {
	r := s.open(t)
	bad := []revision.Key{
		{Package: "", Workspace: "ws"},
		{Package: "p", Workspace: ""},
		{Package: "/abs", Workspace: "ws"},
		{Package: "a/../b", Workspace: "ws"},
		{Package: "a//b", Workspace: "ws"},
		{Package: "UPPER", Workspace: "ws"},
		{Package: "p", Workspace: "bad workspace"},
		{Package: "p", Workspace: "ws/slash"},
		{Package: "p", Workspace: "ws..x"},
		{Package: "p", Workspace: "-dash"},
		{Package: "p", Workspace: "x.lock"},
		{Package: "p", Workspace: "ws", Revision: 3},
		{Package: "p\x00", Workspace: "ws"},
	}
	for _, k := range bad {
		_, err := r.CreateDraft(ctx(t), k, repository.CreateDraftOptions{})
		wantErr(t, err, repository.ErrInvalidInput, fmt.Sprintf("CreateDraft(%q, %q, %d)", k.Package, k.Workspace, k.Revision))
	}
	_, err := r.Get(ctx(t), revision.Key{Package: "p"})
	wantErr(t, err, repository.ErrInvalidInput, "Get with neither workspace nor revision")
	if revs := list(t, r, repository.ListOptions{}); len(revs) != 0 {
		t.Fatalf("bad keys left %v behind", keys(revs, true))
	}
}

func (s *suite) testUnsafePaths(t *testing.T) {
	r := s.open(t)
	d, err := r.CreateDraft(ctx(t), key("p", "ws"), repository.CreateDraftOptions{Files: pkgFiles("p", "x")})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/etc/passwd", "../x", "a/../../x", "a\\b", "a\x00b", "", "a//b", ".git/config", "a/"} {
		err := d.SetFile(p, []byte("x"))
		if !errors.Is(err, repository.ErrInvalidInput) {
			t.Errorf("SetFile(%q) = %v, want ErrInvalidInput", p, err)
		}
	}
	pr, err := d.Commit(ctx(t), revision.CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := files(t, pr).Paths(); !slices.Equal(got, []string{"Kptfile", "cm.yaml"}) {
		t.Fatalf("unsafe paths changed the draft: %v", got)
	}
}

func (s *suite) testDuplicateWorkspace(t *testing.T) {
	r := s.open(t)
	createDraft(t, r, "p", "ws", "one")
	_, err := r.CreateDraft(ctx(t), key("p", "ws"), repository.CreateDraftOptions{})
	wantErr(t, err, repository.ErrAlreadyExists, "CreateDraft of a taken workspace")
	// The same workspace in another package is fine.
	createDraft(t, r, "q", "ws", "two")
	// A published revision keeps its workspace.
	publish(t, r, "z", "v1ws", "three")
	_, err = r.CreateDraft(ctx(t), key("z", "v1ws"), repository.CreateDraftOptions{})
	wantErr(t, err, repository.ErrAlreadyExists, "CreateDraft of a published revision's workspace")
}

func (s *suite) testEditDraft(t *testing.T) {
	r := s.open(t)
	first := createDraft(t, r, "p", "ws", "one")
	d, err := r.OpenDraft(ctx(t), key("p", "ws"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Base().Version != first.Meta().Version || !d.Files().Equal(files(t, first)) {
		t.Fatal("OpenDraft does not start from the committed state")
	}
	if err := d.SetFile("dir/extra.yaml", []byte("x: y\n")); err != nil {
		t.Fatal(err)
	}
	d.RemoveFile("cm.yaml")
	second, err := d.Commit(ctx(t), revision.CommitOptions{Message: "second"})
	if err != nil {
		t.Fatal(err)
	}
	if second.Meta().Version == first.Meta().Version {
		t.Fatal("a commit that changed files kept the Version")
	}
	got, err := r.Get(ctx(t), key("p", "ws"))
	if err != nil {
		t.Fatal(err)
	}
	if paths := files(t, got).Paths(); !slices.Equal(paths, []string{"Kptfile", "dir/extra.yaml"}) {
		t.Fatalf("after edit the files are %v", paths)
	}
	// The view read before the edit is immutable.
	if paths := files(t, first).Paths(); !slices.Equal(paths, []string{"Kptfile", "cm.yaml"}) {
		t.Fatalf("an earlier PackageRevision changed: %v", paths)
	}
	// A second commit from the same Draft continues from the first.
	if err := d.SetFile("third.yaml", []byte("t: 3\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx(t), revision.CommitOptions{}); err != nil {
		t.Fatalf("second commit of one Draft: %v", err)
	}
}

func (s *suite) testStaleDraftCommit(t *testing.T) {
	r := s.open(t)
	createDraft(t, r, "p", "ws", "one")
	d1, err := r.OpenDraft(ctx(t), key("p", "ws"))
	if err != nil {
		t.Fatal(err)
	}
	d2, err := r.OpenDraft(ctx(t), key("p", "ws"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d1.SetFile("a.yaml", []byte("a: 1\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := d1.Commit(ctx(t), revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d2.SetFile("b.yaml", []byte("b: 1\n")); err != nil {
		t.Fatal(err)
	}
	_, err = d2.Commit(ctx(t), revision.CommitOptions{})
	wantErr(t, err, repository.ErrConflict, "Commit of a draft opened before another commit")
	got, err := r.Get(ctx(t), key("p", "ws"))
	if err != nil {
		t.Fatal(err)
	}
	if f := files(t, got); f.Has("b.yaml") || !f.Has("a.yaml") {
		t.Fatalf("the losing commit left files behind: %v", f.Paths())
	}
}

func (s *suite) testLifecycle(t *testing.T) {
	r := s.open(t)
	createDraft(t, r, "p", "ws", "one")
	k := key("p", "ws")
	proposed := move(t, r, k, revision.LifecycleProposed)
	_, err := r.OpenDraft(ctx(t), k)
	wantErr(t, err, repository.ErrImmutable, "OpenDraft of a Proposed revision")
	move(t, r, k, revision.LifecycleDraft)
	if _, err := r.OpenDraft(ctx(t), k); err != nil {
		t.Fatalf("OpenDraft after reject: %v", err)
	}
	move(t, r, k, revision.LifecycleProposed)
	pub := move(t, r, k, revision.LifecyclePublished)
	if pub.Meta().Key.Revision != 1 {
		t.Fatalf("first approval got revision %d, want 1", pub.Meta().Key.Revision)
	}
	if pub.Meta().Key.Workspace != "ws" {
		t.Fatalf("published revision has workspace %q, want the draft's", pub.Meta().Key.Workspace)
	}
	if !files(t, pub).Equal(files(t, proposed)) {
		t.Fatal("approval changed the content")
	}
	_, err = r.OpenDraft(ctx(t), k)
	wantErr(t, err, repository.ErrImmutable, "OpenDraft of a Published revision")
	byNumber, err := r.Get(ctx(t), revision.Key{Package: "p", Revision: 1})
	if err != nil {
		t.Fatalf("Get by revision number: %v", err)
	}
	if byNumber.Meta().Key.Workspace != "ws" || byNumber.Meta().Lifecycle != revision.LifecyclePublished {
		t.Fatalf("Get(p, 1) = %+v", byNumber.Meta())
	}
	dp := move(t, r, revision.Key{Package: "p", Revision: 1}, revision.LifecycleDeletionProposed)
	if !files(t, dp).Equal(files(t, pub)) {
		t.Fatal("proposing deletion changed the content")
	}
	if dp.Meta().Version == pub.Meta().Version {
		t.Fatal("proposing deletion kept the Version; it must change with the lifecycle")
	}
	if c := pub.Meta().Commit; c != "" && dp.Meta().Commit != c {
		t.Fatalf("proposing deletion changed Meta.Commit from %q to %q; it names the content", c, dp.Meta().Commit)
	}
	move(t, r, revision.Key{Package: "p", Revision: 1}, revision.LifecyclePublished)
	move(t, r, revision.Key{Package: "p", Revision: 1}, revision.LifecycleDeletionProposed)
	if err := r.Delete(ctx(t), revision.Key{Package: "p", Revision: 1}, repository.UpdateOptions{}); err != nil {
		t.Fatalf("Delete of a DeletionProposed revision: %v", err)
	}
	_, err = r.Get(ctx(t), revision.Key{Package: "p", Revision: 1})
	wantErr(t, err, repository.ErrNotFound, "Get after Delete")
	// Drafts and proposals delete directly.
	createDraft(t, r, "q", "d", "x")
	if err := r.Delete(ctx(t), key("q", "d"), repository.UpdateOptions{}); err != nil {
		t.Fatalf("Delete of a draft: %v", err)
	}
	createDraft(t, r, "q", "e", "x")
	move(t, r, key("q", "e"), revision.LifecycleProposed)
	if err := r.Delete(ctx(t), key("q", "e"), repository.UpdateOptions{}); err != nil {
		t.Fatalf("Delete of a proposal: %v", err)
	}
	if k := keys(list(t, r, repository.ListOptions{Package: "q"}), true); len(k) != 0 {
		t.Fatalf("deleted drafts still listed: %v", k)
	}
}

func (s *suite) testInvalidTransitions(t *testing.T) {
	r := s.open(t)
	createDraft(t, r, "p", "ws", "one")
	k := key("p", "ws")
	for _, to := range []revision.Lifecycle{revision.LifecyclePublished, revision.LifecycleDeletionProposed, revision.LifecycleDraft, "Bogus"} {
		_, err := r.UpdateLifecycle(ctx(t), k, to, repository.UpdateOptions{})
		wantErr(t, err, repository.ErrInvalidTransition, "Draft to "+string(to))
	}
	move(t, r, k, revision.LifecycleProposed)
	_, err := r.UpdateLifecycle(ctx(t), k, revision.LifecycleDeletionProposed, repository.UpdateOptions{})
	wantErr(t, err, repository.ErrInvalidTransition, "Proposed to DeletionProposed")
	move(t, r, k, revision.LifecyclePublished)
	for _, to := range []revision.Lifecycle{revision.LifecycleDraft, revision.LifecycleProposed, revision.LifecyclePublished} {
		_, err := r.UpdateLifecycle(ctx(t), revision.Key{Package: "p", Revision: 1}, to, repository.UpdateOptions{})
		wantErr(t, err, repository.ErrInvalidTransition, "Published to "+string(to))
	}
	got, err := r.Get(ctx(t), revision.Key{Package: "p", Revision: 1})
	if err != nil || got.Meta().Lifecycle != revision.LifecyclePublished {
		t.Fatalf("refused transitions changed the revision: %v %v", got, err)
	}
}

func (s *suite) testRevisionNumbers(t *testing.T) {
	r := s.open(t)
	for i := 1; i <= 3; i++ {
		pr := publish(t, r, "p", fmt.Sprintf("ws%d", i), fmt.Sprint(i))
		if pr.Meta().Key.Revision != i {
			t.Fatalf("approval %d got revision %d", i, pr.Meta().Key.Revision)
		}
	}
	// Another package numbers on its own.
	if pr := publish(t, r, "other", "ws1", "o"); pr.Meta().Key.Revision != 1 {
		t.Fatalf("first revision of another package got %d", pr.Meta().Key.Revision)
	}
	// A revision proposed for deletion still counts.
	move(t, r, revision.Key{Package: "p", Revision: 3}, revision.LifecycleDeletionProposed)
	if pr := publish(t, r, "p", "ws4", "4"); pr.Meta().Key.Revision != 4 {
		t.Fatalf("approval after a deletion proposal got %d, want 4", pr.Meta().Key.Revision)
	}
	got := keys(list(t, r, repository.ListOptions{Package: "p", Lifecycles: []revision.Lifecycle{revision.LifecyclePublished, revision.LifecycleDeletionProposed}}), false)
	var nums []int
	for _, k := range got {
		nums = append(nums, k.Revision)
	}
	if !slices.Equal(nums, []int{1, 2, 3, 4}) {
		t.Fatalf("published revisions of p are %v, want 1..4 in order", nums)
	}
	// Numbers are one more than the highest existing one, as in Porch:
	// deleting a lower revision frees nothing, deleting the highest frees
	// its number for the next approval.
	del := func(n int) {
		t.Helper()
		k := revision.Key{Package: "p", Revision: n}
		if n != 3 {
			move(t, r, k, revision.LifecycleDeletionProposed)
		}
		if err := r.Delete(ctx(t), k, repository.UpdateOptions{}); err != nil {
			t.Fatalf("Delete(%s): %v", k, err)
		}
	}
	del(3)
	if pr := publish(t, r, "p", "ws5", "5"); pr.Meta().Key.Revision != 5 {
		t.Fatalf("approval after deleting a lower revision got %d, want 5", pr.Meta().Key.Revision)
	}
	del(4)
	del(5)
	if pr := publish(t, r, "p", "ws6", "6"); pr.Meta().Key.Revision != 3 {
		t.Fatalf("approval after deleting the highest revisions got %d, want 3 (one more than the highest left)", pr.Meta().Key.Revision)
	}
}

func (s *suite) testPlaceholder(t *testing.T) {
	if s.h.NoPlaceholder {
		t.Skip("backend has no placeholder revisions")
	}
	r := s.open(t)
	publish(t, r, "p", "ws1", "one")
	ph, err := r.Get(ctx(t), revision.Key{Package: "p", Revision: revision.Placeholder})
	if err != nil {
		t.Fatalf("Get placeholder after the first approval: %v", err)
	}
	if ph.Meta().Lifecycle != revision.LifecyclePublished || ph.Meta().Key.Workspace == "" {
		t.Fatalf("placeholder meta %+v", ph.Meta())
	}
	if v, _ := files(t, ph).Get("cm.yaml"); !contains(string(v), "marker: one") {
		t.Fatalf("placeholder content is not the approved content: %q", v)
	}
	publish(t, r, "p", "ws2", "two")
	ph, err = r.Get(ctx(t), revision.Key{Package: "p", Revision: revision.Placeholder})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := files(t, ph).Get("cm.yaml"); !contains(string(v), "marker: two") {
		t.Fatalf("placeholder did not follow the latest approval: %q", v)
	}
	if _, err := r.CreateDraft(ctx(t), key("p", ph.Meta().Key.Workspace), repository.CreateDraftOptions{}); !errors.Is(err, repository.ErrAlreadyExists) {
		t.Fatalf("CreateDraft with the branch's workspace = %v, want ErrAlreadyExists", err)
	}
	_, err = r.OpenDraft(ctx(t), ph.Meta().Key)
	wantErr(t, err, repository.ErrImmutable, "OpenDraft of the placeholder")
	err = r.Delete(ctx(t), ph.Meta().Key, repository.UpdateOptions{})
	wantErr(t, err, repository.ErrImmutable, "Delete of the Published placeholder")
	move(t, r, ph.Meta().Key, revision.LifecycleDeletionProposed)
	if err := r.Delete(ctx(t), ph.Meta().Key, repository.UpdateOptions{}); err != nil {
		t.Fatalf("Delete of the placeholder proposed for deletion: %v", err)
	}
	_, err = r.Get(ctx(t), revision.Key{Package: "p", Revision: revision.Placeholder})
	wantErr(t, err, repository.ErrNotFound, "Get placeholder after deleting it")
	// The tagged revisions stay.
	if _, err := r.Get(ctx(t), revision.Key{Package: "p", Revision: 2}); err != nil {
		t.Fatalf("deleting the placeholder removed revision 2: %v", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func (s *suite) testDeletePublished(t *testing.T) {
	r := s.open(t)
	publish(t, r, "p", "ws", "one")
	err := r.Delete(ctx(t), revision.Key{Package: "p", Revision: 1}, repository.UpdateOptions{})
	wantErr(t, err, repository.ErrImmutable, "Delete of a Published revision")
	if _, err := r.Get(ctx(t), revision.Key{Package: "p", Revision: 1}); err != nil {
		t.Fatalf("a refused delete removed the revision: %v", err)
	}
	err = r.Delete(ctx(t), revision.Key{Package: "nope", Workspace: "ws"}, repository.UpdateOptions{})
	wantErr(t, err, repository.ErrNotFound, "Delete of a missing revision")
}

func (s *suite) testVersionPrecondition(t *testing.T) {
	r := s.open(t)
	first := createDraft(t, r, "p", "ws", "one")
	d, err := r.OpenDraft(ctx(t), key("p", "ws"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetFile("x.yaml", []byte("x: 1\n")); err != nil {
		t.Fatal(err)
	}
	second, err := d.Commit(ctx(t), revision.CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.UpdateLifecycle(ctx(t), key("p", "ws"), revision.LifecycleProposed, repository.UpdateOptions{Version: first.Meta().Version})
	wantErr(t, err, repository.ErrConflict, "UpdateLifecycle with a stale Version")
	err = r.Delete(ctx(t), key("p", "ws"), repository.UpdateOptions{Version: first.Meta().Version})
	wantErr(t, err, repository.ErrConflict, "Delete with a stale Version")
	if _, err := r.UpdateLifecycle(ctx(t), key("p", "ws"), revision.LifecycleProposed, repository.UpdateOptions{Version: second.Meta().Version}); err != nil {
		t.Fatalf("UpdateLifecycle with the current Version: %v", err)
	}
}

// listFiltersRepo fills r with the revisions listFilterCases select from.
func listFiltersRepo(t *testing.T, r repository.Repository) {
	t.Helper()
	publish(t, r, "a", "ws1", "1")
	createDraft(t, r, "a", "ws2", "2")
	createDraft(t, r, "b/c", "ws1", "3")
	createDraft(t, r, "b/d", "ws3", "4")
	move(t, r, key("b/d", "ws3"), revision.LifecycleProposed)
	publish(t, r, "b/e", "ws9", "5")
	createDraft(t, r, "bb", "ws7", "6")
}

// listCase is list options and the non-placeholder revisions they select.
type listCase struct {
	opts repository.ListOptions
	want []revision.Key
}

// listFilterCases are list options and the non-placeholder revisions they
// select, in List order, from what listFiltersRepo writes.
func listFilterCases() []listCase {
	return []listCase{
		{repository.ListOptions{Package: "a"}, []revision.Key{{Package: "a", Workspace: "ws2"}, {Package: "a", Workspace: "ws1", Revision: 1}}},
		{repository.ListOptions{Workspace: "ws1"}, []revision.Key{{Package: "a", Workspace: "ws1", Revision: 1}, {Package: "b/c", Workspace: "ws1"}}},
		{repository.ListOptions{Lifecycles: []revision.Lifecycle{revision.LifecycleDraft}}, []revision.Key{{Package: "a", Workspace: "ws2"}, {Package: "b/c", Workspace: "ws1"}, {Package: "bb", Workspace: "ws7"}}},
		{repository.ListOptions{Lifecycles: []revision.Lifecycle{revision.LifecycleProposed}}, []revision.Key{{Package: "b/d", Workspace: "ws3"}}},
		{repository.ListOptions{Revision: 1}, []revision.Key{{Package: "a", Workspace: "ws1", Revision: 1}, {Package: "b/e", Workspace: "ws9", Revision: 1}}},
		{repository.ListOptions{Package: "b"}, nil},
		{repository.ListOptions{PackagePrefix: "b"}, []revision.Key{{Package: "b/c", Workspace: "ws1"}, {Package: "b/d", Workspace: "ws3"}, {Package: "b/e", Workspace: "ws9", Revision: 1}}},
		{repository.ListOptions{PackagePrefix: "b/c"}, []revision.Key{{Package: "b/c", Workspace: "ws1"}}},
		{repository.ListOptions{PackagePrefix: "b", Lifecycles: []revision.Lifecycle{revision.LifecyclePublished}}, []revision.Key{{Package: "b/e", Workspace: "ws9", Revision: 1}}},
		{repository.ListOptions{PackagePrefix: "bb"}, []revision.Key{{Package: "bb", Workspace: "ws7"}}},
		{repository.ListOptions{PackagePrefix: "b/c/x"}, nil},
		{repository.ListOptions{PackagePrefix: "b", Package: "b/d"}, []revision.Key{{Package: "b/d", Workspace: "ws3"}}},
	}
}

func (s *suite) testListFilters(t *testing.T) {
	r := s.open(t)
	listFiltersRepo(t, r)

	cases := listFilterCases()
	for _, c := range cases {
		got := keys(list(t, r, c.opts), false)
		if !slices.Equal(got, c.want) {
			t.Errorf("List(%+v) = %v, want %v", c.opts, got, c.want)
		}
	}
	all := list(t, r, repository.ListOptions{})
	if n := len(keys(all, false)); n != 6 {
		t.Errorf("List() has %d non-placeholder revisions, want 6", n)
	}
	if !s.h.NoPlaceholder {
		// A prefix selects placeholders too, and only those under it.
		var phs []string
		for _, k := range keys(list(t, r, repository.ListOptions{PackagePrefix: "b"}), true) {
			if k.IsPlaceholder() {
				phs = append(phs, k.Package)
			}
		}
		if !slices.Equal(phs, []string{"b/e"}) {
			t.Errorf("placeholders under prefix b: %v, want [b/e]", phs)
		}
	}
}

func (s *suite) testGetNotFound(t *testing.T) {
	r := s.open(t)
	for _, k := range []revision.Key{key("missing", "ws"), {Package: "missing", Revision: 1}, {Package: "missing", Revision: revision.Placeholder}} {
		_, err := r.Get(ctx(t), k)
		wantErr(t, err, repository.ErrNotFound, "Get("+k.String()+")")
	}
	createDraft(t, r, "p", "ws", "x")
	_, err := r.Get(ctx(t), revision.Key{Package: "p", Workspace: "ws", Revision: 2})
	wantErr(t, err, repository.ErrNotFound, "Get with a revision the workspace does not have")
	_, err = r.OpenDraft(ctx(t), key("p", "other"))
	wantErr(t, err, repository.ErrNotFound, "OpenDraft of a missing draft")
	_, err = r.UpdateLifecycle(ctx(t), key("p", "other"), revision.LifecycleProposed, repository.UpdateOptions{})
	wantErr(t, err, repository.ErrNotFound, "UpdateLifecycle of a missing draft")
}

func (s *suite) testErrorType(t *testing.T) {
	r := s.open(t)
	_, err := r.Get(ctx(t), key("missing", "ws"))
	var re *repository.Error
	if !errors.As(err, &re) {
		t.Fatalf("error %v is not a *repository.Error", err)
	}
	if re.Op == "" || re.Repository != r.Name() || re.Key.Package != "missing" {
		t.Fatalf("*repository.Error = %+v, want Op, Repository %q and the key", re, r.Name())
	}
}

func (s *suite) testCancelled(t *testing.T) {
	r := s.open(t)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.List(c, repository.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context = %v, want context.Canceled", err)
	}
	d, err := r.CreateDraft(ctx(t), key("p", "ws"), repository.CreateDraftOptions{Files: pkgFiles("p", "x")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(c, revision.CommitOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit with a cancelled context = %v, want context.Canceled", err)
	}
	if revs := list(t, r, repository.ListOptions{}); len(revs) != 0 {
		t.Fatalf("a cancelled commit wrote %v", keys(revs, true))
	}
}

// race runs fn(i) on n goroutines started together and returns the errors.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

func (s *suite) testRaceCreate(t *testing.T) {
	r := s.open(t)
	n := s.h.Concurrency
	drafts := make([]revision.Draft, n)
	for i := range drafts {
		d, err := r.CreateDraft(ctx(t), key("p", "ws"), repository.CreateDraftOptions{Files: pkgFiles("p", fmt.Sprint(i))})
		if err != nil {
			t.Fatal(err)
		}
		drafts[i] = d
	}
	errs := race(n, func(i int) error {
		_, err := drafts[i].Commit(ctx(t), revision.CommitOptions{})
		return err
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("drafts %d and %d both created p/ws", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, repository.ErrAlreadyExists) && !errors.Is(err, repository.ErrConflict):
			t.Fatalf("losing create: %v, want ErrAlreadyExists or ErrConflict", err)
		}
	}
	if winner < 0 {
		t.Fatal("no create won")
	}
	got, err := r.Get(ctx(t), key("p", "ws"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := files(t, got).Get("cm.yaml"); !contains(string(v), fmt.Sprintf("marker: %d\n", winner)) {
		t.Fatalf("stored content is not the winner's: %q", v)
	}
}

func (s *suite) testRaceCommit(t *testing.T) {
	r := s.open(t)
	createDraft(t, r, "p", "ws", "base")
	n := s.h.Concurrency
	drafts := make([]revision.Draft, n)
	for i := range drafts {
		d, err := r.OpenDraft(ctx(t), key("p", "ws"))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SetFile(fmt.Sprintf("f%d.yaml", i), []byte("x: 1\n")); err != nil {
			t.Fatal(err)
		}
		drafts[i] = d
	}
	errs := race(n, func(i int) error {
		_, err := drafts[i].Commit(ctx(t), revision.CommitOptions{})
		return err
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("commits %d and %d both won from the same base", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, repository.ErrConflict):
			t.Fatalf("losing commit: %v, want ErrConflict", err)
		}
	}
	if winner < 0 {
		t.Fatal("no commit won")
	}
	got, err := r.Get(ctx(t), key("p", "ws"))
	if err != nil {
		t.Fatal(err)
	}
	f := files(t, got)
	for i := range n {
		if f.Has(fmt.Sprintf("f%d.yaml", i)) != (i == winner) {
			t.Fatalf("after the race the draft has %v; only f%d.yaml should be there", f.Paths(), winner)
		}
	}
}

// approveRetrying approves k, retrying on ErrConflict as a caller would.
func approveRetrying(c context.Context, r repository.Repository, k revision.Key) (revision.PackageRevision, error) {
	for attempt := 0; ; attempt++ {
		pr, err := r.UpdateLifecycle(c, k, revision.LifecyclePublished, repository.UpdateOptions{})
		if err == nil || !errors.Is(err, repository.ErrConflict) || attempt >= 50 {
			return pr, err
		}
		time.Sleep(time.Duration(attempt+1) * time.Millisecond)
	}
}

func (s *suite) testRaceApprove(t *testing.T) {
	r := s.open(t)
	n := s.h.Concurrency
	for i := range n {
		createDraft(t, r, "p", fmt.Sprintf("ws%d", i), fmt.Sprint(i))
		move(t, r, key("p", fmt.Sprintf("ws%d", i)), revision.LifecycleProposed)
	}
	// Another package approves in the same race, moving the branch.
	createDraft(t, r, "q", "ws", "q")
	move(t, r, key("q", "ws"), revision.LifecycleProposed)
	nums := make([]int, n)
	errs := race(n+1, func(i int) error {
		if i == n {
			_, err := approveRetrying(ctx(t), r, key("q", "ws"))
			return err
		}
		pr, err := approveRetrying(ctx(t), r, key("p", fmt.Sprintf("ws%d", i)))
		if err == nil {
			nums[i] = pr.Meta().Key.Revision
		}
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("approval %d failed after retries: %v", i, err)
		}
	}
	slices.Sort(nums)
	for i, got := range nums {
		if got != i+1 {
			t.Fatalf("concurrent approvals got revisions %v, want 1..%d each once", nums, n)
		}
	}
	pub := keys(list(t, r, repository.ListOptions{Package: "p", Lifecycles: []revision.Lifecycle{revision.LifecyclePublished}}), false)
	if len(pub) != n {
		t.Fatalf("%d published revisions listed, want %d", len(pub), n)
	}
}

func (s *suite) testReopen(t *testing.T) {
	if s.h.Reopen == nil {
		t.Skip("backend harness has no Reopen")
	}
	r1 := s.open(t)
	r2 := s.h.Reopen(t, r1)
	t.Cleanup(func() { _ = r2.Close() })
	createDraft(t, r1, "p", "ws", "one")
	got, err := r2.Get(ctx(t), key("p", "ws"))
	if err != nil {
		t.Fatalf("a second handle does not see the first's draft: %v", err)
	}
	if v, _ := files(t, got).Get("cm.yaml"); !contains(string(v), "marker: one") {
		t.Fatalf("second handle reads %q", v)
	}
	// Commit from both handles against the same base: one wins.
	d1, err := r1.OpenDraft(ctx(t), key("p", "ws"))
	if err != nil {
		t.Fatal(err)
	}
	d2, err := r2.OpenDraft(ctx(t), key("p", "ws"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d1.Commit(ctx(t), revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = d2.Commit(ctx(t), revision.CommitOptions{})
	wantErr(t, err, repository.ErrConflict, "Commit from a second handle on a stale base")
	// Numbers are shared across handles.
	move(t, r1, key("p", "ws"), revision.LifecycleProposed)
	if pr := move(t, r2, key("p", "ws"), revision.LifecyclePublished); pr.Meta().Key.Revision != 1 {
		t.Fatalf("approval through the second handle got %d", pr.Meta().Key.Revision)
	}
	createDraft(t, r2, "p", "ws2", "two")
	move(t, r2, key("p", "ws2"), revision.LifecycleProposed)
	if pr := move(t, r1, key("p", "ws2"), revision.LifecyclePublished); pr.Meta().Key.Revision != 2 {
		t.Fatalf("approval through the first handle after the second's got %d, want 2", pr.Meta().Key.Revision)
	}
}

func (s *suite) testWatch(t *testing.T) {
	r := s.open(t)
	if _, ok := r.(repository.Watcher); !ok {
		err := repository.Watch(ctx(t), r, repository.ListOptions{}, func(repository.Event) error { return nil })
		if !errors.Is(err, repository.ErrNotSupported) {
			t.Fatalf("repository.Watch on a non-Watcher = %v, want ErrNotSupported", err)
		}
		return
	}
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := make(chan repository.Event, 16)
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- repository.Watch(c, r, repository.ListOptions{Package: "w"}, func(ev repository.Event) error {
			events <- ev
			return nil
		})
	}()
	go func() {
		// Give the watch time to register; writes before it may be missed.
		time.Sleep(200 * time.Millisecond)
		close(started)
	}()
	<-started
	createDraft(t, r, "other", "ws", "x") // not selected
	createDraft(t, r, "w", "ws", "x")
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Revision.Meta().Key.Package != "w" {
				t.Fatalf("watch of package w saw %s", ev.Revision.Meta().Key)
			}
			if ev.Type == repository.Added {
				cancel()
				if err := <-done; err != nil {
					t.Fatalf("Watch returned %v after cancel, want nil", err)
				}
				return
			}
		case <-deadline:
			t.Fatal("no ADDED event for a new draft within 20s")
		}
	}
}

func (s *suite) testVersion(t *testing.T) {
	r := s.open(t)
	if _, ok := r.(repository.Versioner); !ok {
		_, err := repository.Version(ctx(t), r)
		if !errors.Is(err, repository.ErrNotSupported) {
			t.Fatalf("repository.Version on a non-Versioner = %v, want ErrNotSupported", err)
		}
		return
	}
	v1, err := repository.Version(ctx(t), r)
	if err != nil {
		t.Fatal(err)
	}
	again, err := repository.Version(ctx(t), r)
	if err != nil || again != v1 {
		t.Fatalf("Version changed without a write: %q then %q (%v)", v1, again, err)
	}
	createDraft(t, r, "p", "ws", "x")
	v2, err := repository.Version(ctx(t), r)
	if err != nil {
		t.Fatal(err)
	}
	if v2 == v1 {
		t.Fatal("Version did not change after a commit")
	}
	if err := r.Delete(ctx(t), key("p", "ws"), repository.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	v3, err := repository.Version(ctx(t), r)
	if err != nil {
		t.Fatal(err)
	}
	if v3 == v2 {
		t.Fatal("Version did not change after a delete")
	}
}

func (s *suite) testClose(t *testing.T) {
	r := s.h.New(t)
	createDraft(t, r, "p", "ws", "x")
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err := r.List(ctx(t), repository.ListOptions{})
	wantErr(t, err, repository.ErrClosed, "List after Close")
	_, err = r.CreateDraft(ctx(t), key("p", "ws2"), repository.CreateDraftOptions{})
	wantErr(t, err, repository.ErrClosed, "CreateDraft after Close")
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
