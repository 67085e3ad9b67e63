package apiserver

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/configasdata/cad/api/porch/v1alpha1"
)

// The Kubernetes API contract that k8s.io/apiserver gives the server, tried
// with the tools users have: kubectl's server-side apply (with a conflict
// between two field managers), diff, explain and --dry-run=server on every
// verb, and controller-runtime's client.Apply.

func repoManifest(name, repo, description string) string {
	return fmt.Sprintf(`apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata:
  name: %s
  namespace: default
spec:
  description: %q
  type: git
  git:
    repo: %s
    branch: main
    createBranch: true
`, name, description, repo)
}

func TestKubectlServerSideApply(t *testing.T) {
	ts := startServer(t, "", nil)
	k := newKubectl(t, ts.URL)
	bare := filepath.Join(t.TempDir(), "ssa.git")
	gitInitBare(t, bare)

	// A Repository that does not exist yet is created by an apply.
	out := k.ok(repoManifest("ssa", bare, "first"), "apply", "--server-side", "-f", "-")
	assert.Contains(t, out, "repository.config.porch.kpt.dev/ssa serverside-applied")
	managers := k.ok("", "get", "repository", "ssa", "-o", "jsonpath={.metadata.managedFields[*].manager}")
	assert.Equal(t, "kubectl", managers)

	// An apply by the same manager updates it.
	k.ok(repoManifest("ssa", bare, "second"), "apply", "--server-side", "-f", "-")
	assert.Equal(t, "second", k.ok("", "get", "repository", "ssa", "-o", "jsonpath={.spec.description}"))

	// Another manager changing a field kubectl owns conflicts, and wins
	// with --force-conflicts.
	errOut := k.fails(repoManifest("ssa", bare, "third"), "apply", "--server-side", "--field-manager", "flux", "-f", "-")
	assert.Contains(t, errOut, "conflict")
	assert.Contains(t, errOut, `conflict with "kubectl"`)
	assert.Contains(t, errOut, ".spec.description")
	assert.Equal(t, "second", k.ok("", "get", "repository", "ssa", "-o", "jsonpath={.spec.description}"))
	k.ok(repoManifest("ssa", bare, "third"), "apply", "--server-side", "--field-manager", "flux", "--force-conflicts", "-f", "-")
	assert.Equal(t, "third", k.ok("", "get", "repository", "ssa", "-o", "jsonpath={.spec.description}"))
	managers = k.ok("", "get", "repository", "ssa", "-o", "jsonpath={.metadata.managedFields[*].manager}")
	assert.Contains(t, managers, "flux")

	// A PackageRevision's labels applied server-side.
	k.ok(kubectlInitPR, "create", "-f", "-")
	k.ok(`apiVersion: porch.kpt.dev/v1alpha1
kind: PackageRevision
metadata:
  name: default.basens.ws1
  namespace: default
  labels:
    stage: dev
spec:
  packageName: basens
  repository: default
  workspaceName: ws1
`, "apply", "--server-side", "--force-conflicts", "-f", "-")
	assert.Equal(t, "dev", k.ok("", "get", "packagerevision", "default.basens.ws1", "-o", "jsonpath={.metadata.labels.stage}"))
}

func TestKubectlDiffAndExplain(t *testing.T) {
	ts := startServer(t, "", nil)
	k := newKubectl(t, ts.URL)
	bare := filepath.Join(t.TempDir(), "d.git")
	gitInitBare(t, bare)
	k.ok(repoManifest("d", bare, "one"), "apply", "-f", "-")

	// kubectl diff runs a server-side dry run of the apply: exit status 1
	// with the difference, 0 without.
	out, _, err := k.run(repoManifest("d", bare, "two"), "diff", "-f", "-")
	require.Error(t, err)
	assert.Contains(t, out, "-  description: one")
	assert.Contains(t, out, "+  description: two")
	assert.Equal(t, "one", k.ok("", "get", "repository", "d", "-o", "jsonpath={.spec.description}"), "a diff writes nothing")
	k.ok(repoManifest("d", bare, "one"), "diff", "-f", "-")

	// kubectl explain reads the OpenAPI schemas.
	out = k.ok("", "explain", "packagerevisions.spec")
	assert.Contains(t, out, "KIND:       PackageRevision")
	assert.Contains(t, out, "lifecycle")
	assert.Contains(t, out, "packageName")
	out = k.ok("", "explain", "repositories.spec.git")
	assert.Contains(t, out, "branch")
	for _, v := range []string{"/openapi/v2", "/openapi/v3/apis/porch.kpt.dev/v1alpha1"} {
		code, body := ts.do("GET", v, "", nil)
		assert.Equal(t, 200, code, v)
		assert.Contains(t, string(body), "com.github.configasdata.cad.api.porch.v1alpha1.PackageRevision", v)
	}
}

// Every write verb with --dry-run=server answers as the write would and
// writes nothing, for stored objects and for package revisions.
func TestDryRunEveryVerb(t *testing.T) {
	ts := startServer(t, "", nil)
	k := newKubectl(t, ts.URL)
	bare := filepath.Join(t.TempDir(), "dry.git")
	gitInitBare(t, bare)

	// create, apply (client and server side)
	assert.Contains(t, k.ok(repoManifest("dry", bare, "x"), "create", "--dry-run=server", "-f", "-"), "(server dry run)")
	assert.Contains(t, k.ok(repoManifest("dry", bare, "x"), "apply", "--dry-run=server", "-f", "-"), "(server dry run)")
	assert.Contains(t, k.ok(repoManifest("dry", bare, "x"), "apply", "--server-side", "--dry-run=server", "-f", "-"), "(server dry run)")
	assert.Contains(t, k.fails("", "get", "repository", "dry"), "NotFound")
	// A dry run is checked as the write is.
	assert.Contains(t, k.fails(repoManifest("bad", "relative/path", "x"), "create", "--dry-run=server", "-f", "-"), "is invalid")

	k.ok(repoManifest("dry", bare, "x"), "create", "-f", "-")
	rv := k.ok("", "get", "repository", "dry", "-o", "jsonpath={.metadata.resourceVersion}")
	// replace, patch, label, annotate, delete
	k.ok(repoManifest("dry", bare, "y"), "replace", "--dry-run=server", "-f", "-")
	k.ok("", "patch", "repository", "dry", "--dry-run=server", "--type=merge", "-p", `{"spec":{"description":"z"}}`)
	k.ok("", "label", "repository", "dry", "--dry-run=server", "a=b")
	k.ok("", "annotate", "repository", "dry", "--dry-run=server", "a=b")
	assert.Contains(t, k.ok("", "delete", "repository", "dry", "--dry-run=server"), "(server dry run)")
	assert.Equal(t, rv, k.ok("", "get", "repository", "dry", "-o", "jsonpath={.metadata.resourceVersion}"), "dry runs changed the Repository")
	assert.Equal(t, "x", k.ok("", "get", "repository", "dry", "-o", "jsonpath={.spec.description}"))

	// Package revisions: the write runs in a write batch that is
	// discarded.
	assert.Contains(t, k.ok(kubectlInitPR, "create", "--dry-run=server", "-f", "-"), "(server dry run)")
	assert.Contains(t, k.fails("", "get", "packagerevision", "default.basens.ws1"), "NotFound")
	// A server-side apply that would create it (the update's dry run
	// hands the create its own batch).
	named := strings.Replace(kubectlInitPR, "metadata:\n", "metadata:\n  name: default.basens.ws1\n", 1)
	assert.Contains(t, k.ok(named, "apply", "--server-side", "--dry-run=server", "-f", "-"), "(server dry run)")
	assert.Contains(t, k.fails("", "get", "packagerevision", "default.basens.ws1"), "NotFound")
	k.ok(kubectlInitPR, "create", "-f", "-")
	prRV := k.ok("", "get", "packagerevision", "default.basens.ws1", "-o", "jsonpath={.metadata.resourceVersion}")
	k.ok("", "patch", "packagerevision", "default.basens.ws1", "--dry-run=server", "--type=merge", "-p", `{"spec":{"lifecycle":"Proposed"}}`)
	k.ok("", "label", "packagerevision", "default.basens.ws1", "--dry-run=server", "stage=x")
	assert.Contains(t, k.ok("", "delete", "packagerevision", "default.basens.ws1", "--dry-run=server"), "(server dry run)")
	assert.Equal(t, prRV, k.ok("", "get", "packagerevision", "default.basens.ws1", "-o", "jsonpath={.metadata.resourceVersion}"))
	assert.Equal(t, "Draft", k.ok("", "get", "packagerevision", "default.basens.ws1", "-o", "jsonpath={.spec.lifecycle}"))

	// Approval through the subresource, dry: still Proposed afterwards.
	k.ok("", "patch", "packagerevision", "default.basens.ws1", "--type=merge", "-p", `{"spec":{"lifecycle":"Proposed"}}`)
	proposed := k.ok("", "get", "packagerevision", "default.basens.ws1", "-o", "yaml")
	approved := strings.Replace(proposed, "lifecycle: Proposed", "lifecycle: Published", 1)
	out := k.ok(approved, "replace", "--subresource", "approval", "--dry-run=server", "-f", "-")
	assert.Contains(t, out, "(server dry run)")
	// The answer is read through the dry run's batch: the approval as it
	// would be, revision 1, the latest.
	out = k.ok(approved, "replace", "--subresource", "approval", "--dry-run=server", "-f", "-",
		"-o", `jsonpath={.spec.lifecycle} {.spec.revision} {.metadata.labels.kpt\.dev/latest-revision}`)
	assert.Equal(t, "Published 1 true", out)
	assert.Equal(t, "Proposed", k.ok("", "get", "packagerevision", "default.basens.ws1", "-o", "jsonpath={.spec.lifecycle}"))
	assert.Empty(t, k.ok("", "get", "packagerevisions", "-l", "kpt.dev/latest-revision=true", "-o", "name"))
}

// controller-runtime's client.Apply creates and updates a Repository and
// a PackageRevision's labels.
func TestControllerRuntimeApply(t *testing.T) {
	ts := startServer(t, "", nil)
	bare := filepath.Join(t.TempDir(), "cr.git")
	gitInitBare(t, bare)
	c, err := ctrlclient.New(&rest.Config{Host: ts.URL}, ctrlclient.Options{Scheme: runtime.NewScheme()})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	repo := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
			"metadata": map[string]any{"name": "cr", "namespace": "default"},
			"spec": map[string]any{"type": "git", "description": "by controller-runtime",
				"git": map[string]any{"repo": bare, "branch": "main", "createBranch": true}},
		}}
	}
	u := repo()
	require.NoError(t, c.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), ctrlclient.FieldOwner("my-controller")))
	got := &unstructured.Unstructured{}
	got.SetAPIVersion("config.porch.kpt.dev/v1alpha1")
	got.SetKind("Repository")
	require.NoError(t, c.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "cr"}, got))
	desc, _, _ := unstructured.NestedString(got.Object, "spec", "description")
	assert.Equal(t, "by controller-runtime", desc)
	var managers []string
	for _, m := range got.GetManagedFields() {
		managers = append(managers, m.Manager+"/"+string(m.Operation))
	}
	assert.Contains(t, managers, "my-controller/"+string(metav1.ManagedFieldsOperationApply))

	// A second apply that drops the description removes it (the manager
	// owned it); another manager's conflicting apply is refused.
	u = repo()
	unstructured.RemoveNestedField(u.Object, "spec", "description")
	require.NoError(t, c.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), ctrlclient.FieldOwner("my-controller")))
	require.NoError(t, c.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "cr"}, got))
	_, found, _ := unstructured.NestedString(got.Object, "spec", "description")
	assert.False(t, found, "the description the manager stopped applying is removed")
	other := repo()
	unstructured.RemoveNestedField(other.Object, "spec", "description")
	require.NoError(t, unstructured.SetNestedField(other.Object, "dev", "spec", "git", "branch"))
	err = c.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(other), ctrlclient.FieldOwner("someone-else"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "conflict")

	// The labels of a package revision.
	ts.doJSON("POST", prPath, initPR("crpkg", "ws"), nil)
	pr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": porchv1alpha1.SchemeGroupVersion.String(), "kind": "PackageRevision",
		"metadata": map[string]any{"name": "default.crpkg.ws", "namespace": "default", "labels": map[string]any{"owner": "ctrl"}},
	}}
	require.NoError(t, c.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(pr), ctrlclient.FieldOwner("my-controller"), ctrlclient.ForceOwnership))
	got = &unstructured.Unstructured{}
	got.SetAPIVersion(porchv1alpha1.SchemeGroupVersion.String())
	got.SetKind("PackageRevision")
	require.NoError(t, c.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "default.crpkg.ws"}, got))
	assert.Equal(t, "ctrl", got.GetLabels()["owner"])
}
