package gitrepo

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/gitobj"
	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
)

// failingStorage fails the check-and-set of one ref, as if another
// writer had moved it between the check and the swap.
type failingStorage struct {
	*memory.Storage
	fail plumbing.ReferenceName
}

func (s failingStorage) CheckAndSetReference(new, old *plumbing.Reference) error {
	if new.Name() == s.fail {
		return storage.ErrReferenceHasChanged
	}
	return s.Storage.CheckAndSetReference(new, old)
}

// TestApplyRefsRollsBack checks that a multi-ref update whose second swap
// fails leaves every ref as it was.
func TestApplyRefsRollsBack(t *testing.T) {
	mem := memory.NewStorage()
	h1 := plumbing.NewHash("1111111111111111111111111111111111111111")
	h2 := plumbing.NewHash("2222222222222222222222222222222222222222")
	for _, r := range []*plumbing.Reference{
		plumbing.NewHashReference("refs/heads/main", h1),
		plumbing.NewHashReference("refs/heads/proposed/p/ws", h1),
	} {
		if err := mem.SetReference(r); err != nil {
			t.Fatal(err)
		}
	}
	v := &view{s: failingStorage{Storage: mem, fail: "refs/heads/main"}}
	err := applyRefs(v, []refstore.RefUpdate{
		{Name: "refs/tags/p/v1", Old: plumbing.ZeroHash, New: h2},
		{Name: "refs/heads/main", Old: h1, New: h2},
		{Name: "refs/heads/proposed/p/ws", Old: h1},
	}, true)
	if !errors.Is(err, repository.ErrConflict) {
		t.Fatalf("applyRefs = %v, want a conflict", err)
	}
	want := map[plumbing.ReferenceName]plumbing.Hash{"refs/heads/main": h1, "refs/heads/proposed/p/ws": h1}
	got, err := v.allRefs()
	if err != nil {
		t.Fatal(err)
	}
	main, _ := got.Get("refs/heads/main")
	proposed, _ := got.Get("refs/heads/proposed/p/ws")
	if got.Len() != len(want) || main != h1 || proposed != h1 {
		t.Fatalf("after a failed update the refs are %v, want %v", got.Names, want)
	}
	// A stale expected value is refused before anything changes.
	v = &view{s: mem}
	err = applyRefs(v, []refstore.RefUpdate{
		{Name: "refs/tags/p/v1", Old: plumbing.ZeroHash, New: h2},
		{Name: "refs/heads/main", Old: h2, New: h1},
	}, true)
	if !errors.Is(err, repository.ErrConflict) {
		t.Fatalf("applyRefs with a stale old value = %v", err)
	}
	if _, ok, _ := v.ref("refs/tags/p/v1"); ok {
		t.Fatal("a refused update created a ref")
	}
}

func TestClassifyURL(t *testing.T) {
	for u, want := range map[string]urlKind{
		"mem://":                      urlMemory,
		"mem://x":                     urlMemory,
		"/srv/git/repo.git":           urlLocal,
		"./repo":                      urlLocal,
		"file:///srv/git/repo.git":    urlLocal,
		"relative/dir":                urlLocal,
		"https://example.com/r.git":   urlRemote,
		"http://example.com/r.git":    urlRemote,
		"ssh://git@example.com/r.git": urlRemote,
		"git@github.com:org/repo.git": urlRemote,
		"ftp://example.com/r.git":     urlUnknown,
	} {
		if got := classifyURL(u); got != want {
			t.Errorf("classifyURL(%q) = %v, want %v", u, got, want)
		}
	}
}

func TestCredentialsOutOfURL(t *testing.T) {
	clean, auth := splitURLCredentials("https://bob:hunter22@example.com/r.git")
	if clean != "https://example.com/r.git" || auth == nil || auth.Username != "bob" || auth.Password != "hunter22" {
		t.Fatalf("splitURLCredentials = %q, %+v", clean, auth)
	}
	if got := redactURL("https://bob:hunter22@example.com/r.git"); strings.Contains(got, "hunter22") || strings.Contains(got, "bob") {
		t.Fatalf("redactURL = %q", got)
	}
	rm, err := newRemote("https://tok3n-value@example.com/r.git", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rm.url != "https://example.com/r.git" {
		t.Fatalf("remote URL %q keeps the credentials", rm.url)
	}
	err = rm.redact(errors.New("failed for tok3n-value"))
	if strings.Contains(err.Error(), "tok3n-value") {
		t.Fatalf("redact left the token: %v", err)
	}
	rm, _ = newRemote("https://example.com/r.git", Options{Auth: &githttp.TokenAuth{Token: "secret-token"}})
	if msg := rm.redact(errors.New("x secret-token y")).Error(); msg != "x *** y" {
		t.Fatalf("redact = %q", msg)
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]int{"v1": 1, "v10": 10, "v0": -1, "v01": -1, "v2.0.0": -1, "main": -1, "3": -1, "v": -1} {
		if got := parseVersion(in); got != want {
			t.Errorf("parseVersion(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestCompareEntries(t *testing.T) {
	// git's order: "a-" < "a" (a directory, "a/") < "a0", and file "a" < "a-".
	entries := []gitobj.TreeEntry{
		{Name: "a0", Mode: modeRegular},
		{Name: "a", Mode: modeDir},
		{Name: "a-", Mode: modeRegular},
		{Name: "b", Mode: modeRegular},
		{Name: "ab", Mode: modeDir},
	}
	slices.SortFunc(entries, gitobj.CompareEntries)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name)
	}
	if want := []string{"a-", "a", "a0", "ab", "b"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// Spec reports the spec without the credentials a URL carried.
func TestSpecRedacted(t *testing.T) {
	r := &Repository{core: &core{spec: repository.Spec{Name: "x", Type: repository.TypeGit, Deployment: true,
		Git: &repository.GitSpec{Repo: "https://user:secret@example.com/repo.git", Branch: "main"}}}}
	s := r.Spec()
	if s.Git.Repo != "https://example.com/repo.git" || !s.Deployment || s.Git.Branch != "main" {
		t.Fatalf("Spec() = %+v, git %+v", s, s.Git)
	}
	if r.spec.Git.Repo != "https://user:secret@example.com/repo.git" {
		t.Fatal("Spec changed the repository's own spec")
	}
}
