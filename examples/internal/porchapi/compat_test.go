package porchapi

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/fields"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
)

func TestDefaultRepository(t *testing.T) {
	r := Repository{Spec: RepositorySpec{Type: configv1alpha1.RepositoryTypeGit, Git: &configv1alpha1.GitRepository{Repo: "https://example/x.git"}}}
	DefaultRepository(&r)
	if r.Spec.Content != ContentPackage || r.Spec.Git.Branch != "main" || r.Spec.Git.Directory != "" {
		t.Errorf("defaulted %+v %+v", r.Spec, r.Spec.Git)
	}
	r.Spec.Git.Branch = "release"
	DefaultRepository(&r)
	if r.Spec.Git.Branch != "release" {
		t.Errorf("branch overwritten: %q", r.Spec.Git.Branch)
	}
	oci := Repository{Spec: RepositorySpec{Type: configv1alpha1.RepositoryTypeOCI, Oci: &configv1alpha1.OciRepository{Registry: "r.example/x"}}}
	DefaultRepository(&oci)
	if oci.Spec.Content != ContentPackage || oci.Spec.Git != nil {
		t.Errorf("oci defaulted %+v", oci.Spec)
	}
}

func TestPackageRevisionSelector(t *testing.T) {
	pr := &PackageRevision{Spec: PackageRevisionSpec{PackageName: "basens", RepositoryName: "git", WorkspaceName: "v1", Revision: 1,
		Lifecycle: LifecyclePublished, PackageMetadata: &PackageMetadata{Labels: map[string]string{"team": "blue", "app.kubernetes.io/name": "x"}}}}
	for _, tc := range []struct {
		sel  string
		want bool
	}{
		{"spec.packageMetadata.labels[team]=blue", true},
		{"spec.packageMetadata.labels[team]==blue", true},
		{"spec.packageMetadata.labels[app.kubernetes.io/name]=x", true},
		{"spec.packageMetadata.labels[team]=red", false},
		{"spec.packageMetadata.labels[nope]=blue", false},
		{"spec.packageName=basens,spec.packageMetadata.labels[team]=blue", true},
		{"spec.revision=1,spec.lifecycle=Published", true},
	} {
		sel, err := fields.ParseSelector(tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckPackageRevisionSelector(sel); err != nil {
			t.Errorf("%s: %v", tc.sel, err)
		}
		if got := sel.Matches(PackageRevisionFieldSet(pr)); got != tc.want {
			t.Errorf("%s matches = %v, want %v", tc.sel, got, tc.want)
		}
		if got := MatchesPackageMetadata(sel, pr.Spec.PackageMetadata.Labels); got != tc.want && SelectsPackageMetadata(sel) {
			t.Errorf("%s MatchesPackageMetadata = %v, want %v", tc.sel, got, tc.want)
		}
		// Without its Kptfile labels, a revision passes the rest.
		pre := WithoutPackageMetadataFields(sel)
		if SelectsPackageMetadata(pre) || !pre.Matches(PackageRevisionFieldSet(&PackageRevision{Spec: PackageRevisionSpec{
			PackageName: "basens", Revision: 1, Lifecycle: LifecyclePublished}})) {
			t.Errorf("%s: WithoutPackageMetadataFields = %s", tc.sel, pre)
		}
	}
	for sel, want := range map[string]string{
		"spec.packageMetadata.labels[]=x":         "label key cannot be empty",
		"spec.packageMetadata.labels[team]!=blue": "unsupported fieldSelector operator",
		"spec.packageMetadata.labels[team]=":      "unsupported fieldSelector value",
		"spec.color=blue":                         "field label not supported: spec.color",
	} {
		s, err := fields.ParseSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckPackageRevisionSelector(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", sel, err, want)
		}
	}
	prr := &PackageRevisionResources{Spec: PackageRevisionResourcesSpec{Resources: map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n  labels:\n    team: blue\n"}}}
	if l := ResourcesKptfileLabels(prr); l["team"] != "blue" {
		t.Errorf("ResourcesKptfileLabels = %v", l)
	}
	if l := ResourcesKptfileLabels(&PackageRevisionResources{}); l != nil {
		t.Errorf("no Kptfile: %v", l)
	}
}

// The messages are those Porch's CLI end-to-end cases print
// (test/e2e/cli/testdata rpkg-init, rpkg-clone, rpkg-push), after
// porchctl's "Error: Internal error occurred: ".
func TestPorchMessages(t *testing.T) {
	initErr := fmt.Errorf("init: %w", &repository.Error{Op: "init", Repository: "git",
		Err: &engine.PackageExistsError{Op: "init", Repository: "git", Package: "init-package"}})
	if m, ok := Message(initErr); !ok || m != `package "init-package" already exists in repository "git"` {
		t.Errorf("init: %q %v", m, ok)
	}
	cloneErr := &engine.PackageExistsError{Op: "clone", Repository: "git", Package: "basens-clone"}
	if m, ok := Message(cloneErr); !ok || m != "`clone` cannot create a new revision for package \"basens-clone\" that already exists in repo \"git\"; make subsequent revisions using `copy`" {
		t.Errorf("clone: %q %v", m, ok)
	}
	if !errors.Is(cloneErr, repository.ErrAlreadyExists) {
		t.Error("PackageExistsError does not match ErrAlreadyExists")
	}
	if _, ok := Message(repository.ErrAlreadyExists); ok {
		t.Error("Message for a plain ErrAlreadyExists")
	}
	if got := ConflictMessage("packagerevisionresources.porch.kpt.dev", "git.test-package.push"); got !=
		`Operation cannot be fulfilled on packagerevisionresources.porch.kpt.dev "git.test-package.push": the object has been modified; please apply your changes to the latest version and try again` {
		t.Errorf("conflict: %q", got)
	}
	if got := RenderFailureMessage(errors.New("boom"), false); got !=
		"error rendering package in kpt function pipeline. Package NOT pushed to remote. Fix locally (until 'kpt fn render' succeeds) and retry. Details: boom" {
		t.Errorf("render: %q", got)
	}
	if got := RenderFailureMessage(errors.New("boom"), true); got !=
		"error rendering package in kpt function pipeline. Package pushed to remote despite render failure. Details: boom" {
		t.Errorf("render pushed: %q", got)
	}
}
