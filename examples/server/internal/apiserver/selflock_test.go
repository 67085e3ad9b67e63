package apiserver

import (
	"context"
	"testing"
	"time"

	porchv1alpha1 "github.com/configasdata/cad/api/porch/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Every served revision of a git repository has Porch's status.selfLock:
// the repository, the package's directory, its ref and its commit.
func TestSelfLock(t *testing.T) {
	ts := startServer(t, "", nil)
	c := porchClient(t, ts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	v1 := publishUpstream(ctx, t, c, "app")
	draft := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default"},
		Spec: porchv1alpha1.PackageRevisionSpec{PackageName: "app", RepositoryName: "default", WorkspaceName: "v2",
			Tasks: []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeEdit, Edit: &porchv1alpha1.PackageEditTaskSpec{
				Source: &porchv1alpha1.PackageRevisionRef{Name: v1.Name}}}}},
	}
	if err := c.Create(ctx, draft); err != nil {
		t.Fatal(err)
	}
	var prs porchv1alpha1.PackageRevisionList
	if err := c.List(ctx, &prs, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"default.app.v1": "app/v1", "default.app.v2": "drafts/app/v2", "default.app.main": "main"}
	for _, pr := range prs.Items {
		l := pr.Status.SelfLock
		if l == nil || l.Git == nil {
			t.Fatalf("%s has no self lock", pr.Name)
		}
		if l.Type != "git" || l.Git.Repo == "" || l.Git.Directory != "app" || l.Git.Ref != want[pr.Name] || len(l.Git.Commit) != 40 {
			t.Errorf("%s self lock %+v", pr.Name, *l.Git)
		}
		delete(want, pr.Name)
	}
	if len(want) != 0 {
		t.Fatalf("not listed: %v", want)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(v1), v1); err != nil || v1.Status.SelfLock == nil || v1.Status.SelfLock.Git.Ref != "app/v1" {
		t.Fatalf("get: %v %+v", err, v1.Status.SelfLock)
	}
}
