package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/kubetest"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

// BenchmarkDiscover measures cold discovery, Porch's load-test shape: 20
// git repositories of 100 package revisions each (2,000) are registered at
// once with an operator that has never seen them, and the clock stops when
// every PackageRevision object exists with Ready True. Each iteration uses
// a new namespace and a new operator.
func BenchmarkDiscover(b *testing.B) {
	const repos, perRepo = 20, 100
	dirs := make([]string, repos)
	var wg sync.WaitGroup
	errs := make(chan error, repos)
	for i := range repos {
		dirs[i] = filepath.Join(b.TempDir(), fmt.Sprintf("r%d.git", i))
		wg.Add(1)
		go func(dir, name string) {
			defer wg.Done()
			errs <- fillRepo(dir, name, perRepo)
		}(dirs[i], fmt.Sprintf("r%d", i))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}

	c := kubetest.Start(b)
	crds, _ := filepath.Glob(filepath.Join("..", "..", "api", "crds", "*.yaml"))
	c.ApplyCRDs(b, crds...)
	s, err := scheme()
	if err != nil {
		b.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: s})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		space := fmt.Sprintf("bench%d", i)
		if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: space}}); err != nil {
			b.Fatal(err)
		}
		op, err := newOperator(c.Config, Options{Namespace: space, Poll: time.Minute, inProcessReplica: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := op.addRepositories(); err != nil {
			b.Fatal(err)
		}
		if err := op.addPackageRevisions(); err != nil {
			b.Fatal(err)
		}
		octx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- op.mgr.Start(octx) }()
		b.StartTimer()
		start := time.Now()
		for j, dir := range dirs {
			r := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d", j), Namespace: space},
				Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit, Git: &configv1alpha1.GitRepository{Repo: dir}}}
			if err := cl.Create(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		for {
			var list porchv1alpha2.PackageRevisionList
			if err := cl.List(ctx, &list, client.InNamespace(space)); err != nil {
				b.Fatal(err)
			}
			n := 0
			for k := range list.Items {
				if ready(&list.Items[k]) {
					n++
				}
			}
			if n == repos*perRepo {
				break
			}
			if time.Since(start) > 10*time.Minute {
				b.Fatalf("%d of %d revisions discovered after 10 minutes", n, repos*perRepo)
			}
			time.Sleep(100 * time.Millisecond)
		}
		b.StopTimer()
		b.ReportMetric(float64(repos*perRepo)/time.Since(start).Seconds(), "revisions/s")
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// fillRepo creates a bare git repository at dir with n draft packages.
func fillRepo(dir, name string, n int) error {
	if _, err := git.PlainInit(dir, true); err != nil {
		return err
	}
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, repository.Spec{Name: name, Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir, CreateBranch: true}}, &gitrepo.Options{Sync: gitrepo.SyncNone})
	if err != nil {
		return err
	}
	defer r.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{name: r}})
	if err != nil {
		return err
	}
	for i := range n {
		if _, err := e.Init(ctx, name, revision.Key{Package: fmt.Sprintf("pkg%03d", i), Workspace: "ws"}, engine.InitOptions{}); err != nil {
			return err
		}
	}
	return nil
}
