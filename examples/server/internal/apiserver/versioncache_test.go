package apiserver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
)

// versionFixture makes a bare repository with two commits on main, tagged
// p/v1 and p/v2 as loose refs, opens it, and returns it with its git
// directory and the two commits.
func versionFixture(t *testing.T) (r *gitrepo.Repository, dir, c1, c2 string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir = filepath.Join(t.TempDir(), "r.git")
	runGit(t, filepath.Dir(dir), "init", "--quiet", "--bare", "-b", "main", dir)
	in := "commit refs/heads/main\nmark :1\ncommitter a <a@b> 1767225600 +0000\ndata 2\nm\nM 100644 inline p/Kptfile\ndata 2\nx\n\n" +
		"commit refs/heads/main\nmark :2\ncommitter a <a@b> 1767225601 +0000\ndata 2\nm\nfrom :1\nM 100644 inline p/Kptfile\ndata 2\ny\n\n" +
		"reset refs/tags/p/v1\nfrom :1\n\nreset refs/tags/p/v2\nfrom :2\n\n"
	cmd := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	cmd.Stdin = strings.NewReader(in)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	c1 = strings.TrimSpace(runGit(t, dir, "rev-parse", "refs/tags/p/v1"))
	c2 = strings.TrimSpace(runGit(t, dir, "rev-parse", "refs/tags/p/v2"))
	r, err = gitrepo.Open(context.Background(), repository.Spec{Name: "r", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir, Branch: "main"}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r, dir, c1, c2
}

// rewriteInPlace writes data over the file at p without renaming it and
// sets its modification time to mtime, as a writer in the same clock
// tick as the last change would leave it.
func rewriteInPlace(t *testing.T, p, data string, mtime time.Time) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	_, err = f.WriteString(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, os.Chtimes(p, mtime, mtime))
}

// While the refs' files keep their stamps (old enough to be trusted), the
// kept token is returned without reading the refs: a change that keeps
// every stamp, which no writer makes, goes unseen, proving the fast
// path. Any change of a stamp is seen.
func TestVersionCacheTrustsOldStamps(t *testing.T) {
	r, dir, c1, c2 := versionFixture(t)
	ctx := context.Background()
	vc := newVersionCache(r.GitDir())
	ageRefs(t, dir)
	v1, err := vc.Version(ctx, r)
	require.NoError(t, err)
	want, err := r.Version(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, v1)

	tag := filepath.Join(dir, "refs", "tags", "p", "v1")
	fi, err := os.Stat(tag)
	require.NoError(t, err)
	rewriteInPlace(t, tag, c2+"\n", fi.ModTime())
	fresh, err := r.Version(ctx)
	require.NoError(t, err)
	require.NotEqual(t, v1, fresh)
	got, err := vc.Version(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, v1, got, "the stamps did not change: the kept token")

	// The same write with its real modification time is seen.
	rewriteInPlace(t, tag, c2+"\n", time.Now())
	got, err = vc.Version(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, fresh, got)

	// A new tag (a new file in a stamped directory), by git.
	ageRefs(t, dir)
	_, err = vc.Version(ctx, r)
	require.NoError(t, err)
	runGit(t, dir, "tag", "p/v3", c2)
	got, err = vc.Version(ctx, r)
	require.NoError(t, err)
	fresh, err = r.Version(ctx)
	require.NoError(t, err)
	assert.Equal(t, fresh, got)

	// Packing the refs keeps the token; deleting a packed tag changes it.
	runGit(t, dir, "pack-refs", "--all")
	got, err = vc.Version(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, fresh, got)
	ageRefs(t, dir)
	_, err = vc.Version(ctx, r)
	require.NoError(t, err)
	runGit(t, dir, "tag", "-d", "p/v3")
	got, err = vc.Version(ctx, r)
	require.NoError(t, err)
	fresh, err = r.Version(ctx)
	require.NoError(t, err)
	assert.Equal(t, fresh, got)

	// cad's metadata ref appears (refs/cad was missing), then changes.
	for _, c := range []string{c2, c1} {
		ageRefs(t, dir)
		_, err = vc.Version(ctx, r)
		require.NoError(t, err)
		runGit(t, dir, "update-ref", "refs/cad/metadata", c)
		got, err = vc.Version(ctx, r)
		require.NoError(t, err)
		fresh, err = r.Version(ctx)
		require.NoError(t, err)
		assert.Equal(t, fresh, got)
	}

	// A closed repository: Version's error.
	require.NoError(t, r.Close())
	_, err = vc.Version(ctx, r)
	require.ErrorIs(t, err, repository.ErrClosed)
}

// Stamps younger than a second are not trusted: a change in the same
// clock tick as the last one, which keeps every stamp, is still seen.
func TestVersionCacheDistrustsRecentStamps(t *testing.T) {
	r, dir, c1, c2 := versionFixture(t)
	ctx := context.Background()
	vc := newVersionCache(r.GitDir())
	tag := filepath.Join(dir, "refs", "tags", "p", "v1")
	now := time.Now()
	rewriteInPlace(t, tag, c1+"\n", now)
	v1, err := vc.Version(ctx, r)
	require.NoError(t, err)
	rewriteInPlace(t, tag, c2+"\n", now)
	got, err := vc.Version(ctx, r)
	require.NoError(t, err)
	fresh, err := r.Version(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, v1, fresh)
	assert.Equal(t, fresh, got)
}
