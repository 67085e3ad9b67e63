package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/repository/repotest"
)

// The first discovery of a remote repository over http asks the remote
// for its refs a few times, not once per object: the reconciles of the
// objects it made read the mirror the discovery fetched.
func TestRemoteDiscoveryRequests(t *testing.T) {
	root := t.TempDir()
	const pkgs, revs = 6, 4
	require.NoError(t, fillRepository(filepath.Join(root, "remote.git"), "remote", pkgs, revs))
	srv := repotest.NewGitServer(t, root, nil)
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.c.Create(ctx, &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: "remote", Namespace: e.ns},
		Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
			Git: &configv1alpha1.GitRepository{Repo: srv.RepoURL("remote.git"), Branch: "main"}},
	}))
	want := pkgs * (revs + 1)
	before := srv.Requests()
	e.run(Options{Poll: time.Minute})
	require.Eventually(t, func() bool {
		var l porchv1alpha2.PackageRevisionList
		require.NoError(t, e.c.List(ctx, &l, client.InNamespace(e.ns)))
		n := 0
		for _, pr := range l.Items {
			if pr.Status.ObservedGeneration == pr.Generation && pr.Status.ObservedGeneration > 0 && ready(&pr) {
				n++
			}
		}
		return n == want
	}, 60*time.Second, 100*time.Millisecond, "discovery of %d objects", want)
	n := srv.Requests() - before
	t.Logf("%d requests to discover and reconcile %d objects", n, want)
	require.Less(t, n, int64(want)/2, fmt.Sprintf("%d requests for %d objects", n, want))
}
