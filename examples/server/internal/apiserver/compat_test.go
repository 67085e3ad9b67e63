package apiserver

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/revision"
)

// These tests check the points where Porch's own CLI end-to-end cases
// (nephio-project/porch test/e2e/cli/testdata) found cad's answers to
// differ from Porch's: the expected values are those cases' own.

// porchNamespace creates namespace ns and registers in it a git
// Repository "git" over a new bare repository, as porchctl repo reg does:
// with neither spec.content nor a branch.
func porchNamespace(t *testing.T, k *kubectl, ns string) {
	t.Helper()
	bare := filepath.Join(t.TempDir(), ns+".git")
	if out, err := exec.Command("git", "init", "--quiet", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
		t.Skipf("git init --bare: %v %s", err, out)
	}
	k.ok("", "create", "namespace", ns)
	k.ok(fmt.Sprintf(`apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata:
  name: git
  namespace: %s
spec:
  type: git
  git:
    repo: %s
    createBranch: true
`, ns, bare), "create", "-f", "-")
}

const porchInitPR = `apiVersion: porch.kpt.dev/v1alpha1
kind: PackageRevision
metadata:
  namespace: %s
spec:
  packageName: %s
  repository: git
  workspaceName: %s
  tasks:
  - type: init
    init:
      description: sample description
`

// A PackageRevision's uid is Porch's (rpkg-init: 45ee0692-...), and so is
// its PackageRevisionResources' (which .KptRevisionMetadata carries); a
// second init of the package is refused in Porch's words.
func TestPorchCompatUIDAndSecondInit(t *testing.T) {
	ts := startServer(t, "", nil)
	k := newKubectl(t, ts.URL)
	porchNamespace(t, k, "rpkg-init")
	k.ok(fmt.Sprintf(porchInitPR, "rpkg-init", "init-package", "init-1"), "create", "-f", "-")
	const want = "45ee0692-730a-51b2-9a1d-ad4f4ad55dc8"
	for _, res := range []string{"packagerevision", "packagerevisionresources"} {
		got := k.ok("", "get", res, "-n", "rpkg-init", "git.init-package.init-1", "-o", "jsonpath={.metadata.uid}")
		assert.Equal(t, want, got, res)
	}
	// In a list too (the listing's objects).
	got := k.ok("", "get", "packagerevisions", "-n", "rpkg-init", "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{"\n"}{end}`)
	assert.Contains(t, got, "git.init-package.init-1="+want)

	errOut := k.fails(fmt.Sprintf(porchInitPR, "rpkg-init", "init-package", "init-2"), "create", "-f", "-")
	assert.Contains(t, errOut, `(AlreadyExists)`)
	assert.Contains(t, errOut, `package "init-package" already exists in repository "git"`)
}

// A Repository registered without spec.content or a git branch reads back
// with Porch's defaults, Package and main, and is stored with them; an
// update without them keeps them.
func TestPorchCompatRepositoryDefaults(t *testing.T) {
	ts := startServer(t, "", nil)
	k := newKubectl(t, ts.URL)
	porchNamespace(t, k, "repo-register")
	get := func() string {
		return k.ok("", "get", "repository", "git", "-n", "repo-register", "-o", "jsonpath={.spec.content} {.spec.git.branch}")
	}
	assert.Equal(t, "Package main", get())
	out := k.ok("", "get", "repositories", "-n", "repo-register")
	assert.Contains(t, out, "Package")

	// The stored object has them (what a restart reads).
	stored, err := ts.store.Get(resRepositories, "repo-register", "git")
	require.NoError(t, err)
	spec, _ := stored.Object["spec"].(map[string]any)
	gitSpec, _ := spec["git"].(map[string]any)
	assert.Equal(t, "Package", spec["content"])
	assert.Equal(t, "main", gitSpec["branch"])

	// An update (replace) without them: defaulted again, and not an
	// immutable-branch change.
	var r porchapi.Repository
	require.NoError(t, json.Unmarshal([]byte(k.ok("", "get", "repository", "git", "-n", "repo-register", "-o", "json")), &r))
	r.Spec.Content = ""
	r.Spec.Git.Branch = ""
	r.Spec.Description = "updated"
	body, _ := json.Marshal(&r)
	k.ok(string(body), "replace", "-f", "-")
	assert.Equal(t, "Package main", get())
	assert.Equal(t, "updated", k.ok("", "get", "repository", "git", "-n", "repo-register", "-o", "jsonpath={.spec.description}"))
}

// kubectl get packagerevisions --field-selector
// 'spec.packageMetadata.labels[KEY]=VALUE' selects on the Kptfile's labels,
// as Porch does (TestPackageMetadataFieldSelectors), alone and with other
// fields, for packagerevisionresources too.
func TestPorchCompatPackageMetadataFieldSelector(t *testing.T) {
	ts := startServer(t, "", nil)
	k := newKubectl(t, ts.URL)
	for _, p := range []struct{ pkg, labels string }{
		{"basens", "{team: blue, tier: web}"},
		{"other", "{team: red}"},
		{"plain", "{}"},
	} {
		k.ok(fmt.Sprintf(`apiVersion: porch.kpt.dev/v1alpha1
kind: PackageRevision
metadata:
  namespace: default
spec:
  packageName: %s
  repository: default
  workspaceName: ws
  packageMetadata:
    labels: %s
  tasks:
  - type: init
    init:
      description: test
`, p.pkg, p.labels), "create", "-f", "-")
	}
	require.Contains(t, k.ok("", "get", "prr", "default.basens.ws", "-o", "jsonpath={.spec.resources.Kptfile}"), "team: blue")

	names := func(res, sel string) string {
		t.Helper()
		return strings.TrimSpace(k.ok("", "get", res, "--field-selector", sel, "-o", "name"))
	}
	for _, tc := range []struct{ sel, want string }{
		{"spec.packageMetadata.labels[team]=blue", "default.basens.ws"},
		{"spec.packageMetadata.labels[team]==red", "default.other.ws"},
		{"spec.packageMetadata.labels[team]=blue,spec.packageMetadata.labels[tier]=web", "default.basens.ws"},
		{"spec.packageMetadata.labels[team]=blue,spec.packageMetadata.labels[tier]=db", ""},
		// With spec.packageName the revisions are listed without their
		// Kptfiles first: the label still decides.
		{"spec.packageName=basens,spec.packageMetadata.labels[team]=blue", "default.basens.ws"},
		{"spec.packageName=other,spec.packageMetadata.labels[team]=blue", ""},
		{"spec.lifecycle=Draft,spec.packageMetadata.labels[team]=red", "default.other.ws"},
		{"spec.packageMetadata.labels[nope]=x", ""},
	} {
		for _, res := range []struct{ name, prefix string }{
			{"packagerevisions", "packagerevision.porch.kpt.dev/"},
			{"packagerevisionresources", "packagerevisionresources.porch.kpt.dev/"},
		} {
			want := ""
			if tc.want != "" {
				want = res.prefix + tc.want
			}
			assert.Equal(t, want, names(res.name, tc.sel), "%s %s", res.name, tc.sel)
		}
	}
	// A watch selects the same way.
	w := k.watch("get", "packagerevisions", "--watch", "--field-selector", "spec.packageMetadata.labels[team]=red")
	w.expect(t, 20*time.Second, "default.other.ws")

	for _, tc := range []struct{ sel, want string }{
		{"spec.packageMetadata.labels[]=x", "label key cannot be empty"},
		{"spec.packageMetadata.labels[team]!=blue", "unsupported fieldSelector operator"},
		{"spec.packageMetadata.annotations[team]=blue", "field label not supported"},
	} {
		errOut := k.fails("", "get", "packagerevisions", "--field-selector", tc.sel)
		assert.Contains(t, errOut, tc.want, tc.sel)
		assert.Contains(t, errOut, "BadRequest", tc.sel)
	}
}

// After a clone (from git with porchctl's leading slash, and from a
// registered revision) and a copy, the Kptfile is Porch's: its own
// upstream-identifier of its new name, the directory without the slash,
// no updateStrategy; a second clone into the package is refused in
// Porch's words.
func TestPorchCompatCloneKptfile(t *testing.T) {
	ts := startServer(t, "", nil)
	k := newKubectl(t, ts.URL)
	require.Equal(t, 201, ts.doJSON("POST", prPath, initPR("basens", "v1"), nil))
	approve(t, ts, "default.basens.v1")

	clonePR := func(pkg, ws, upstream string) string {
		return fmt.Sprintf(`apiVersion: porch.kpt.dev/v1alpha1
kind: PackageRevision
metadata:
  namespace: default
spec:
  packageName: %s
  repository: default
  workspaceName: %s
  tasks:
  - type: clone
    clone:
      upstreamRef:
%s`, pkg, ws, upstream)
	}
	gitUp := fmt.Sprintf(`        type: git
        git:
          repo: %s
          ref: basens/v1
          directory: /basens
`, filepath.Join(ts.dataDir, "git", "default.git"))
	k.ok(clonePR("basens-clone", "clone-2", gitUp), "create", "-f", "-")
	k.ok(clonePR("empty-clone", "clone-1", "        upstreamRef:\n          name: default.basens.v1\n"), "create", "-f", "-")

	kptfile := func(name string) *revision.Kptfile {
		t.Helper()
		data := k.ok("", "get", "prr", name, "-o", "jsonpath={.spec.resources.Kptfile}")
		kf, err := revision.ParseKptfile([]byte(data))
		require.NoError(t, err, data)
		return kf
	}
	for _, tc := range []struct{ name, pkg, dir string }{
		{"default.basens-clone.clone-2", "basens-clone", "basens"},
		{"default.empty-clone.clone-1", "empty-clone", "basens"},
	} {
		kf := kptfile(tc.name)
		assert.Equal(t, tc.pkg, kf.Metadata.Name, tc.name)
		assert.Equal(t, "kpt.dev|Kptfile|default|"+tc.pkg, kf.Metadata.Annotations["internal.kpt.dev/upstream-identifier"], tc.name)
		require.NotNil(t, kf.Upstream, tc.name)
		assert.Equal(t, revision.UpdateStrategy(""), kf.Upstream.UpdateStrategy, tc.name)
		assert.Equal(t, tc.dir, kf.Upstream.Git.Directory, tc.name)
		assert.Equal(t, tc.dir, kf.UpstreamLock.Git.Directory, tc.name)
		assert.Equal(t, "basens/v1", kf.Upstream.Git.Ref, tc.name)
	}
	// The package's metadata shows it too, as Porch's does.
	assert.Equal(t, "kpt.dev|Kptfile|default|basens-clone", k.ok("", "get", "rpkg", "default.basens-clone.clone-2", "-o",
		`jsonpath={.spec.packageMetadata.annotations.internal\.kpt\.dev/upstream-identifier}`))

	// A copy keeps the clone's Kptfile.
	approve(t, ts, "default.basens-clone.clone-2")
	k.ok(`apiVersion: porch.kpt.dev/v1alpha1
kind: PackageRevision
metadata:
  namespace: default
spec:
  packageName: basens-clone
  repository: default
  workspaceName: copy-2
  tasks:
  - type: edit
    edit:
      sourceRef:
        name: default.basens-clone.clone-2
`, "create", "-f", "-")
	kf := kptfile("default.basens-clone.copy-2")
	assert.Equal(t, "kpt.dev|Kptfile|default|basens-clone", kf.Metadata.Annotations["internal.kpt.dev/upstream-identifier"])
	assert.Equal(t, "basens", kf.Upstream.Git.Directory)
	assert.Equal(t, revision.UpdateStrategy(""), kf.Upstream.UpdateStrategy)

	// A clone task that asks for a strategy gets it written.
	k.ok(clonePR("with-strategy", "ws", "        upstreamRef:\n          name: default.basens.v1\n      strategy: fast-forward\n"), "create", "-f", "-")
	assert.Equal(t, revision.FastForward, kptfile("default.with-strategy.ws").Upstream.UpdateStrategy)

	// A second clone into the package: 409 AlreadyExists, Porch's words.
	errOut := k.fails(clonePR("basens-clone", "clone-3", gitUp), "create", "-f", "-")
	assert.Contains(t, errOut, "(AlreadyExists)")
	assert.Contains(t, errOut, "`clone` cannot create a new revision for package \"basens-clone\" that already exists in repo \"default\"; make subsequent revisions using `copy`")
}

// porchctl rpkg push's failures (rpkg-push): no resourceVersion, a stale
// one, a failed render; each with its status code and Porch's message.
func TestPorchCompatPushErrors(t *testing.T) {
	ts := startServer(t, "", nil)
	require.Equal(t, 201, ts.doJSON("POST", prPath, initPR("test-package", "push"), nil))
	const name = "default.test-package.push"
	var prr porchapi.PackageRevisionResources
	require.Equal(t, 200, ts.doJSON("GET", prrPath+"/"+name, nil, &prr))
	current := prr.ResourceVersion

	put := func(rv, kptfileTail string) (int, metav1.Status) {
		t.Helper()
		in := prr
		in.ResourceVersion = rv
		in.Spec.Resources = map[string]string{}
		for p, c := range prr.Spec.Resources {
			in.Spec.Resources[p] = c
		}
		in.Spec.Resources["Kptfile"] += kptfileTail
		code, data := ts.do("PUT", prrPath+"/"+name, "application/json", mustMarshal(&in))
		return code, decodeStatus(t, data)
	}

	code, st := put("", "")
	assert.Equal(t, 422, code)
	assert.Equal(t, "Invalid", string(st.Reason))
	assert.Equal(t, "resourceVersion must be specified for an update", st.Message)
	require.NotNil(t, st.Details)
	require.NotEmpty(t, st.Details.Causes)
	assert.Equal(t, "metadata.resourceVersion", st.Details.Causes[0].Field)

	code, st = put("1", "")
	assert.Equal(t, 409, code)
	assert.Equal(t, "Conflict", string(st.Reason))
	assert.Equal(t, `Operation cannot be fulfilled on packagerevisionresources.porch.kpt.dev "`+name+
		`": the object has been modified; please apply your changes to the latest version and try again`, st.Message)

	// rpkg-push's broken pipeline: set-annotations without its config.
	const broken = "pipeline:\n  mutators:\n  - image: ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.0\n    configMap:\n      namespace: example-ns\n  - image: ghcr.io/kptdev/krm-functions-catalog/set-annotations:v0.1.4\n"
	code, st = put(current, broken)
	assert.Equal(t, 422, code)
	assert.True(t, strings.HasPrefix(st.Message, "error rendering package in kpt function pipeline. Package NOT pushed to remote. Fix locally (until 'kpt fn render' succeeds) and retry. Details: "), st.Message)
	// Nothing was pushed.
	var after porchapi.PackageRevisionResources
	require.Equal(t, 200, ts.doJSON("GET", prrPath+"/"+name, nil, &after))
	assert.Equal(t, current, after.ResourceVersion)

	// With push-on-render-failure, it is saved and says so.
	code, data := ts.do("PATCH", prPath+"/"+name, "application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"porch.kpt.dev/push-on-render-failure":"true"}}}`))
	require.Equal(t, 200, code, "%s", data)
	require.Equal(t, 200, ts.doJSON("GET", prrPath+"/"+name, nil, &prr))
	_, st = put(prr.ResourceVersion, broken)
	assert.True(t, strings.HasPrefix(st.Message, "error rendering package in kpt function pipeline. Package pushed to remote despite render failure. Details: "), st.Message)
}
