package variant_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/variant"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
)

// refsState returns every ref file and packed-refs of the bare repository
// dir with its content.
func refsState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(filepath.Join(dir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(data)
		return err
	})
	require.NoError(t, err)
	if data, err := os.ReadFile(filepath.Join(dir, "packed-refs")); err == nil {
		out["packed-refs"] = string(data)
	}
	return out
}

// A variant sync never creates or deletes downstreams because a
// repository is damaged: when the downstream package's owned draft is
// behind a damaged ref, Sync and Remove fail with the damage and write
// nothing (not a second draft "because there is none"); when the
// upstream's latest tag is damaged, Sync fails rather than take the
// revision before it as the latest.
func TestSyncRefusesDamage(t *testing.T) {
	needGit(t)
	root := t.TempDir()
	dirs := map[string]string{}
	repos := engine.Repos{}
	for _, name := range []string{"blueprints", "deployments"} {
		dir := filepath.Join(root, name+".git")
		out, err := exec.Command("git", "init", "--quiet", "--bare", "-b", "main", dir).CombinedOutput()
		require.NoError(t, err, "%s", out)
		r, err := gitrepo.Open(context.Background(), repository.Spec{Name: name, Type: repository.TypeGit,
			Git: &repository.GitSpec{Repo: dir, CreateBranch: true}}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { r.Close() })
		dirs[name], repos[name] = dir, r
	}
	e, err := engine.New(&engine.Options{Repositories: repos})
	require.NoError(t, err)
	objs := &variant.Objects{}
	v := &env{t: t, ctx: context.Background(), repos: repos, e: e, objs: objs,
		opts: &variant.Options{Repositories: repos, Objects: objs}}
	v.publish("blueprints", "bucket", upstreamFiles())
	pv := newPV("pv")
	res, err := variant.Sync(v.ctx, v.e, pv, v.opts)
	require.NoError(t, err)
	require.Equal(t, variant.ActionCreated, res.Action)

	// The owned draft's ref damaged: the package seems to hold nothing.
	ds := dirs["deployments"]
	draftRef := filepath.Join(ds, "refs/heads/drafts/my-bucket/packagevariant-1")
	good, err := os.ReadFile(draftRef)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(draftRef, []byte("not a hash\n"), 0o644))
	before := refsState(t, ds)
	res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
	require.ErrorIs(t, err, repository.ErrDamaged)
	var dr *gitrepo.DamagedRefError
	require.ErrorAs(t, err, &dr)
	require.Equal(t, "refs/heads/drafts/my-bucket/packagevariant-1", dr.Ref)
	require.False(t, res.Ready())
	require.Equal(t, before, refsState(t, ds), "a sync over damage wrote")
	_, err = variant.Remove(v.ctx, v.e, pv, v.opts)
	require.ErrorIs(t, err, repository.ErrDamaged)
	require.Equal(t, before, refsState(t, ds), "a removal over damage wrote")

	// Repaired, the sync goes on with its draft; then the upstream moves
	// to v2 and the draft follows.
	require.NoError(t, os.WriteFile(draftRef, good, 0o644))
	v.publish("blueprints", "bucket", upstreamFiles())
	res, err = variant.Sync(v.ctx, v.e, pv, v.opts)
	require.NoError(t, err)
	require.Equal(t, "packagevariant-1", res.Key.Workspace)
	require.Equal(t, "bucket/v2", v.kptfile(res.Key).UpstreamLock.Git.Ref)

	// The upstream's v2 tag damaged: v1 is not taken for the latest.
	up := dirs["blueprints"]
	require.NoError(t, os.WriteFile(filepath.Join(up, "refs/tags/bucket/v2"), []byte(strings.Repeat("ab", 20)+"\n"), 0o644))
	before = refsState(t, ds)
	res2, err := variant.Sync(v.ctx, v.e, pv, v.opts)
	require.ErrorIs(t, err, repository.ErrDamaged)
	require.False(t, errors.Is(err, repository.ErrNotFound))
	require.False(t, res2.Ready())
	require.False(t, meta.IsStatusConditionTrue(res2.Conditions, variant.ConditionStalled), "damage is not a missing upstream")
	require.Equal(t, before, refsState(t, ds), "a sync over a damaged upstream wrote")
	require.Equal(t, "bucket/v2", v.kptfile(res.Key).UpstreamLock.Git.Ref)
}
