package porchapi

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
	"github.com/configasdata/cad/revision"
)

func TestNameRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		repo, pkg, ws, name string
	}{
		{"blueprints", "net/istio", "ws1", "blueprints.net.istio.ws1"},
		{"r", "p", "main", "r.p.main"},
		{"deploy", "a/b/c", "v1", "deploy.a.b.c.v1"},
	} {
		if got := PackageRevisionName(tc.repo, tc.pkg, tc.ws); got != tc.name {
			t.Errorf("PackageRevisionName(%q, %q, %q) = %q, want %q", tc.repo, tc.pkg, tc.ws, got, tc.name)
		}
		k, err := ParseName(tc.name)
		if err != nil {
			t.Fatalf("ParseName(%q): %v", tc.name, err)
		}
		want := revision.Key{Repository: tc.repo, Package: tc.pkg, Workspace: tc.ws}
		if k != want {
			t.Errorf("ParseName(%q) = %+v, want %+v", tc.name, k, want)
		}
		if NameOf(k) != tc.name {
			t.Errorf("NameOf(%+v) = %q", k, NameOf(k))
		}
	}
	for _, bad := range []string{"", "a", "a.b", "a..b", ".a.b"} {
		if _, err := ParseName(bad); !errors.Is(err, revision.ErrInvalid) {
			t.Errorf("ParseName(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// TestPackageRevisionUID checks the UIDs against those Porch served in its
// own CLI end-to-end cases (test/e2e/cli/testdata: rpkg-clone, rpkg-copy,
// rpkg-init and rpkg-push, the uid of .KptRevisionMetadata).
func TestPackageRevisionUID(t *testing.T) {
	for _, tc := range []struct{ ns, name, want string }{
		{"rpkg-clone", "git.basens-clone.clone-2", "710e4f9b-b21f-5786-bf04-1d1d9b32d57c"},
		{"rpkg-clone", "git.empty-clone.clone-1", "e8317a47-90ce-5c75-b548-26e7de2e2508"},
		{"rpkg-copy", "git.basens-edit.copy-2", "dc403caa-3f59-5a61-8a79-adcdf40bc52a"},
		{"rpkg-init", "git.init-package.init-1", "45ee0692-730a-51b2-9a1d-ad4f4ad55dc8"},
		{"rpkg-push", "git.test-package.push", "0e7dd104-514e-5455-b077-6f196b04165c"},
		// Porch lowercases namespace and name.
		{"RPKG-Push", "Git.Test-Package.Push", "0e7dd104-514e-5455-b077-6f196b04165c"},
	} {
		if got := PackageRevisionUID(tc.ns, tc.name); string(got) != tc.want {
			t.Errorf("PackageRevisionUID(%q, %q) = %s, want %s", tc.ns, tc.name, got, tc.want)
		}
	}
	m := revision.Meta{Key: revision.Key{Repository: "git", Package: "test-package", Workspace: "push"}}
	pr := FromRevision(m, RevisionOptions{Namespace: "rpkg-push"})
	prr := FromFiles("rpkg-push", m, revision.Files{})
	if pr.UID != "0e7dd104-514e-5455-b077-6f196b04165c" || prr.UID != pr.UID {
		t.Errorf("FromRevision uid %s, FromFiles uid %s", pr.UID, prr.UID)
	}
}

// porchJSON is a PackageRevision as Porch serves it.
const porchJSON = `{
  "apiVersion": "porch.kpt.dev/v1alpha1",
  "kind": "PackageRevision",
  "metadata": {"name": "blueprints.basens.v1", "namespace": "default", "resourceVersion": "abc",
    "labels": {"kpt.dev/latest-revision": "true"}},
  "spec": {
    "packageName": "basens", "repository": "blueprints", "workspaceName": "v1", "revision": 1,
    "lifecycle": "Published",
    "tasks": [{"type": "clone", "clone": {"upstreamRef": {"type": "git",
      "git": {"repo": "https://example/x.git", "ref": "basens/v1", "directory": "basens", "secretRef": {"name": "s"}}}}}],
    "readinessGates": [{"conditionType": "Ready"}]
  },
  "status": {
    "upstreamLock": {"type": "git", "git": {"repo": "https://example/x.git", "directory": "basens", "ref": "basens/v1", "commit": "123"}},
    "publishedBy": "me@example", "publishTimestamp": "2025-01-02T03:04:05Z", "deployment": true,
    "conditions": [{"type": "Ready", "status": "True"}]
  }
}`

func TestPorchJSON(t *testing.T) {
	var pr PackageRevision
	if err := json.Unmarshal([]byte(porchJSON), &pr); err != nil {
		t.Fatal(err)
	}
	if pr.Spec.Revision != 1 || pr.Spec.Lifecycle != LifecyclePublished || !IsLatest(&pr) ||
		pr.Spec.Tasks[0].Clone.Upstream.Git.Ref != "basens/v1" || pr.Status.UpstreamLock.Git.Commit != "123" ||
		!pr.Status.PublishedAt.Equal(&pr.Status.PublishedAt) || pr.Status.PublishedAt.Year() != 2025 {
		t.Errorf("decoded %+v", pr)
	}
	if err := ValidateTask(pr.Spec.Tasks[0]); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if md := MetadataOf(&pr); !md.IsZero() {
		t.Errorf("Metadata kept the latest label: %+v", md)
	}
}

func TestFromRevision(t *testing.T) {
	kf, err := revision.ParseKptfile([]byte(`apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: p
  labels: {a: b}
info:
  readinessGates:
  - conditionType: G
status:
  conditions:
  - type: G
    status: "False"
`))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	m := revision.Meta{
		Key:       revision.Key{Repository: "r", Package: "a/p", Workspace: "ws", Revision: 2},
		Lifecycle: revision.LifecyclePublished, Version: "v9", PublishedBy: "x", PublishedAt: at,
		Metadata: revision.Metadata{Labels: map[string]string{LatestRevisionLabel: "true", "k": "v"}},
	}
	pr := FromRevision(m, RevisionOptions{Namespace: "ns", Kptfile: kf, Deployment: true})
	if pr.Name != "r.a.p.ws" || pr.ResourceVersion != "v9" || IsLatest(&pr) || pr.Labels["k"] != "v" ||
		pr.Spec.Revision != 2 || len(pr.Spec.ReadinessGates) != 1 || len(pr.Status.Conditions) != 1 ||
		pr.Spec.PackageMetadata == nil || pr.Spec.PackageMetadata.Labels["a"] != "b" || !pr.Status.Deployment {
		t.Errorf("FromRevision = %+v", pr)
	}
	pr = FromRevision(m, RevisionOptions{Namespace: "ns", Latest: true})
	if !IsLatest(&pr) {
		t.Errorf("no latest label: %v", pr.Labels)
	}
}

func TestCreationTask(t *testing.T) {
	pr := PackageRevision{Spec: PackageRevisionSpec{PackageName: "p"}}
	task, err := CreationTask(&pr)
	if err != nil || task.Type != TaskTypeInit || task.Init.Description != "p description" {
		t.Errorf("default task = %+v, %v", task, err)
	}
	for _, bad := range [][]Task{
		{{Type: TaskTypeInit}, {Type: TaskTypeInit}},
		{{Type: "render"}},
		{{Type: TaskTypeClone}},
		{{Type: TaskTypeClone, Clone: &PackageCloneTaskSpec{}}},
		{{Type: TaskTypeEdit, Edit: &PackageEditTaskSpec{}}},
		{{Type: TaskTypeUpgrade, Upgrade: &PackageUpgradeTaskSpec{}}},
		{{Type: TaskTypeInit, Init: &PackageInitTaskSpec{}, Edit: &PackageEditTaskSpec{}}},
	} {
		pr.Spec.Tasks = bad
		if _, err := CreationTask(&pr); !errors.Is(err, ErrInvalidTask) || !errors.Is(err, revision.ErrInvalid) {
			t.Errorf("CreationTask(%+v) = %v", bad, err)
		}
	}
}

func TestRepositorySpec(t *testing.T) {
	var r Repository
	if err := json.Unmarshal([]byte(`{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"Repository",
		"metadata":{"name":"blueprints","namespace":"default","labels":{"x":"y"}},
		"spec":{"type":"git","content":"Package","git":{"repo":"https://example/x.git","directory":"/pkgs/"}}}`), &r); err != nil {
		t.Fatal(err)
	}
	s := RepositoryToSpec(&r)
	if s.Name != "blueprints" || s.Git.Branch != "main" || s.Git.Directory != "pkgs" || s.Labels["x"] != "y" {
		t.Errorf("RepositoryToSpec = %+v %+v", s, s.Git)
	}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
	back := RepositoryFromSpec("default", s)
	if back.Spec.Git.Repo != "https://example/x.git" || back.Kind != KindRepository {
		t.Errorf("RepositoryFromSpec = %+v", back)
	}
}

func TestVariantTyped(t *testing.T) {
	var pv PackageVariant
	if err := json.Unmarshal([]byte(`{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"PackageVariant",
		"metadata":{"name":"pv"},"spec":{"upstream":{"repo":"r","package":"p","revision":"v2"},
		"downstream":{"repo":"d","package":"q"},"dependencies":{"providerRepos":["catalog"],"gate":true}}}`), &pv); err != nil {
		t.Fatal(err)
	}
	if pv.Spec.Upstream.Revision != 2 {
		t.Errorf("revision \"v2\" read as %d", pv.Spec.Upstream.Revision)
	}
	typed, err := TypedVariant(&pv)
	if err != nil || typed.Spec.Upstream.Revision != 2 || typed.Spec.Downstream.Package != "q" {
		t.Errorf("Typed = %+v, %v", typed, err)
	}
	if d := typed.Spec.Dependencies; d == nil || !d.Gate || len(d.ProviderRepos) != 1 || d.ProviderRepos[0] != "catalog" {
		t.Errorf("Typed dependencies = %+v", d)
	}
	if err := json.Unmarshal([]byte(`{"spec":{"upstream":{"revision":"two"}}}`), &pv); err == nil {
		t.Error("a revision that is not a number decoded")
	}
	pvs := PackageVariantSet{}
	pvs.Spec.Targets = []configv1alpha2.Target{{}}
	if _, err := TypedVariantSet(&pvs); err != nil {
		t.Errorf("set: %v", err)
	}
}
