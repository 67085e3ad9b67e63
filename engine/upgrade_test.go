package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/internal/upstreamid"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// upgPublish creates a draft of key in r with files and publishes it.
func upgPublish(t *testing.T, e *engine.Engine, r repository.Repository, key revision.Key, files map[string]string) revision.PackageRevision {
	t.Helper()
	ctx := context.Background()
	d, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: revision.MustFiles(files)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{Message: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Propose(ctx, r.Name(), key); err != nil {
		t.Fatal(err)
	}
	pr, err := e.Approve(ctx, r.Name(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

const upgNamespaceV1 = `apiVersion: v1
kind: Namespace
metadata:
  name: example
`

const upgConfigMapV1 = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: example
data:
  size: small
  owner: nobody
`

const upgConfigMapV2 = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: example
data:
  size: large
  owner: nobody
`

const upgQuota = `apiVersion: v1
kind: ResourceQuota
metadata:
  name: default
  namespace: example
spec:
  hard:
    cpu: "40"
`

type upgFixture struct {
	e          *engine.Engine
	up, down   repository.Repository
	v1, v2     revision.PackageRevision
	downstream revision.PackageRevision
}

// newUpgFixture builds, by hand, what Clone would: upstream basens v1, a
// downstream "backend" cloned from it (renamed namespace, a local edit, a
// local file, Kptfile upstream and lock naming v1), and upstream v2.
func newUpgFixture(t *testing.T) *upgFixture {
	t.Helper()
	up, down := memrepo.New("catalog", nil), memrepo.New("deploy", nil)
	t.Cleanup(func() { up.Close(); down.Close() })
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"catalog": up, "deploy": down}})
	if err != nil {
		t.Fatal(err)
	}
	f := &upgFixture{e: e, up: up, down: down}
	upKptfile := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: basens\ninfo:\n  description: namespace blueprint\n"
	f.v1 = upgPublish(t, e, up, revision.Key{Package: "basens", Workspace: "v1"}, map[string]string{
		"Kptfile": upKptfile, "namespace.yaml": upgNamespaceV1, "configmap.yaml": upgConfigMapV1,
	})

	kf := revision.NewKptfile("backend")
	kf.Info = &revision.PackageInfo{Description: "namespace blueprint"}
	kf.Upstream = &revision.Upstream{Type: revision.GitOrigin,
		Git: &revision.Git{Repo: "https://example.com/catalog.git", Directory: "basens", Ref: "basens/v1"}, UpdateStrategy: revision.ResourceMerge}
	kf.UpstreamLock = &revision.UpstreamLock{Type: revision.GitOrigin,
		Git: &revision.GitLock{Repo: "https://example.com/catalog.git", Directory: "basens", Ref: "basens/v1", Commit: f.v1.Meta().Commit}}
	kfb, err := kf.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f.downstream = upgPublish(t, e, down, revision.Key{Package: "backend", Workspace: "v1"}, map[string]string{
		"Kptfile": string(kfb),
		"namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: # kpt-merge: /example\n  name: backend\n" +
			"  annotations:\n    internal.kpt.dev/upstream-identifier: '|Namespace|default|example'\n",
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: example/settings\n  name: settings\n  namespace: backend\n" +
			"  annotations:\n    internal.kpt.dev/upstream-identifier: '|ConfigMap|example|settings'\ndata:\n  size: small\n  owner: team-a\n",
		"local.txt": "local notes\n",
	})
	f.v2 = upgPublish(t, e, up, revision.Key{Package: "basens", Workspace: "v2"}, map[string]string{
		"Kptfile": upKptfile, "namespace.yaml": upgNamespaceV1, "configmap.yaml": upgConfigMapV2, "quota.yaml": upgQuota,
	})
	return f
}

func (f *upgFixture) refs() (old, new engine.Ref) {
	return engine.Ref{Repository: "catalog", Key: f.v1.Meta().Key}, engine.Ref{Repository: "catalog", Key: f.v2.Meta().Key}
}

func upgResource(t *testing.T, files revision.Files, p string) *yaml.RNode {
	t.Helper()
	b, ok := files.Get(p)
	if !ok {
		t.Fatalf("no %s in %v", p, files.Paths())
	}
	rn, err := yaml.Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

func upgValue(t *testing.T, rn *yaml.RNode, path ...string) string {
	t.Helper()
	v, err := rn.Pipe(yaml.Lookup(path...))
	if err != nil || v == nil {
		return ""
	}
	return v.YNode().Value
}

func TestUpgradeResourceMerge(t *testing.T) {
	ctx := context.Background()
	f := newUpgFixture(t)
	oldRef, newRef := f.refs()
	pr, err := f.e.Upgrade(ctx, "deploy", f.downstream.Meta().Key, oldRef, newRef, "v2", engine.UpgradeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := pr.Meta()
	if m.Lifecycle != revision.LifecycleDraft || m.Key.Package != "backend" || m.Key.Workspace != "v2" || m.Key.Repository != "deploy" {
		t.Fatalf("meta %+v", m)
	}
	got := files(t, pr)
	if got.Paths()[0] != "Kptfile" || !got.Has("local.txt") || !got.Has("quota.yaml") {
		t.Fatalf("files %v", got.Paths())
	}
	ns := upgResource(t, got, "namespace.yaml")
	if n := upgValue(t, ns, "metadata", "name"); n != "backend" {
		t.Errorf("namespace name %q, want the local backend", n)
	}
	cm := upgResource(t, got, "configmap.yaml")
	if s, o, n := upgValue(t, cm, "data", "size"), upgValue(t, cm, "data", "owner"), upgValue(t, cm, "metadata", "namespace"); s != "large" || o != "team-a" || n != "backend" {
		t.Errorf("configmap size=%q owner=%q namespace=%q, want large team-a backend", s, o, n)
	}
	q := upgResource(t, got, "quota.yaml")
	if id := q.GetAnnotations()["internal.kpt.dev/upstream-identifier"]; id != "|ResourceQuota|example|default" {
		t.Errorf("quota upstream-identifier %q", id)
	}
	kfb, _ := got.Get("Kptfile")
	kf, err := revision.ParseKptfile(kfb)
	if err != nil {
		t.Fatal(err)
	}
	if kf.Metadata.Name != "backend" || kf.Upstream == nil || kf.Upstream.Git.Ref != "basens/v2" ||
		kf.Upstream.Git.Repo != "https://example.com/catalog.git" || kf.Upstream.UpdateStrategy != revision.ResourceMerge ||
		kf.UpstreamLock == nil || kf.UpstreamLock.Git.Commit != f.v2.Meta().Commit || kf.UpstreamLock.Git.Ref != "basens/v2" {
		t.Errorf("Kptfile:\n%s", kfb)
	}
}

func TestUpgradeStrategies(t *testing.T) {
	ctx := context.Background()
	f := newUpgFixture(t)
	oldRef, newRef := f.refs()
	local := f.downstream.Meta().Key

	_, err := f.e.Upgrade(ctx, "deploy", local, oldRef, newRef, "ff", engine.UpgradeOptions{Strategy: revision.FastForward})
	if !errors.Is(err, engine.ErrLocalModified) || !strings.Contains(err.Error(), "local package files have been modified") {
		t.Fatalf("fast-forward over local changes: %v", err)
	}
	revs, err := f.down.List(ctx, repository.ListOptions{Workspace: "ff"})
	if err != nil || len(revs) != 0 {
		t.Fatalf("failed upgrade left %d revisions (%v)", len(revs), err)
	}

	// An unmodified clone (merge keys added, Kptfile renamed and locked)
	// fast-forwards.
	pristine, err := upstreamid.StampFiles(files(t, f.v1))
	if err != nil {
		t.Fatal(err)
	}
	kf := revision.NewKptfile("pristine")
	kf.Info = &revision.PackageInfo{Description: "namespace blueprint"}
	kf.UpstreamLock = &revision.UpstreamLock{Type: revision.GitOrigin, Git: &revision.GitLock{Commit: f.v1.Meta().Commit}}
	kfb, err := kf.Encode()
	if err != nil {
		t.Fatal(err)
	}
	pristine, _ = pristine.With(revision.KptfileName, kfb)
	pp := upgPublish(t, f.e, f.down, revision.Key{Package: "pristine", Workspace: "v1"}, pristine.Strings())
	pr, err := f.e.Upgrade(ctx, "deploy", pp.Meta().Key, oldRef, newRef, "ff", engine.UpgradeOptions{Strategy: revision.FastForward})
	if err != nil {
		t.Fatalf("fast-forward of an unmodified clone: %v", err)
	}
	if got := files(t, pr); !got.Has("quota.yaml") || upgValue(t, upgResource(t, got, "configmap.yaml"), "data", "size") != "large" {
		t.Errorf("fast-forward files %v", got.Strings())
	}

	pr, err = f.e.Upgrade(ctx, "deploy", local, oldRef, newRef, "replace", engine.UpgradeOptions{Strategy: revision.ForceDeleteReplace})
	if err != nil {
		t.Fatal(err)
	}
	got := files(t, pr)
	if got.Has("local.txt") || !got.Has("quota.yaml") {
		t.Errorf("force-delete-replace files %v", got.Paths())
	}
	if n := upgValue(t, upgResource(t, got, "namespace.yaml"), "metadata", "name"); n != "example" {
		t.Errorf("force-delete-replace namespace %q, want upstream example", n)
	}

	pr, err = f.e.Upgrade(ctx, "deploy", local, oldRef, newRef, "copy", engine.UpgradeOptions{Strategy: revision.CopyMerge})
	if err != nil {
		t.Fatal(err)
	}
	got = files(t, pr)
	if !got.Has("local.txt") || !got.Has("quota.yaml") {
		t.Errorf("copy-merge files %v", got.Paths())
	}
}

func TestUpgradeRefusals(t *testing.T) {
	ctx := context.Background()
	f := newUpgFixture(t)
	oldRef, newRef := f.refs()
	local := f.downstream.Meta().Key

	placeholder := newRef
	placeholder.Key.Revision = revision.Placeholder
	placeholder.Key.Workspace = ""
	var pe *engine.PlaceholderError
	if _, err := f.e.Upgrade(ctx, "deploy", local, oldRef, placeholder, "x", engine.UpgradeOptions{}); !errors.As(err, &pe) || !errors.Is(err, repository.ErrInvalidInput) {
		t.Errorf("placeholder upstream: %v", err)
	}
	lp := local
	lp.Revision, lp.Workspace = revision.Placeholder, ""
	if _, err := f.e.Upgrade(ctx, "deploy", lp, oldRef, newRef, "x", engine.UpgradeOptions{}); !errors.As(err, &pe) {
		t.Errorf("placeholder local: %v", err)
	}

	// A draft upstream is refused.
	d, err := f.up.CreateDraft(ctx, revision.Key{Package: "basens", Workspace: "v3"}, repository.CreateDraftOptions{Files: files(t, f.v2)})
	if err != nil {
		t.Fatal(err)
	}
	draft, err := d.Commit(ctx, revision.CommitOptions{Message: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Upgrade(ctx, "deploy", local, oldRef, engine.Ref{Repository: "catalog", Key: draft.Meta().Key}, "x", engine.UpgradeOptions{}); !errors.Is(err, repository.ErrInvalidInput) {
		t.Errorf("draft upstream: %v", err)
	}
	if _, err := f.e.Upgrade(ctx, "deploy", local, oldRef, newRef, "x", engine.UpgradeOptions{Strategy: "bogus"}); !errors.Is(err, repository.ErrInvalidInput) {
		t.Errorf("unknown strategy: %v", err)
	}
	if _, err := f.e.Upgrade(ctx, "deploy", local, oldRef, newRef, "v1", engine.UpgradeOptions{}); !errors.Is(err, repository.ErrAlreadyExists) {
		t.Errorf("taken workspace: %v", err)
	}
	revs, err := f.down.List(ctx, repository.ListOptions{Package: "backend", Lifecycles: []revision.Lifecycle{revision.LifecycleDraft}})
	if err != nil || len(revs) != 0 {
		t.Errorf("refused upgrades wrote revisions: %d (%v)", len(revs), err)
	}
}

// UpgradeDraft merges a draft in place, keeping the edits made to it.
func TestUpgradeDraft(t *testing.T) {
	ctx := context.Background()
	f := newUpgFixture(t)
	oldRef, newRef := f.refs()
	local := f.downstream.Meta().Key
	d, err := f.e.Copy(ctx, "deploy", local, "edit", engine.CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := d.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err = files.With("notes.txt", []byte("edited in the draft\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err = f.e.Update(ctx, "deploy", d.Meta().Key, files, engine.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	md := revision.Metadata{Labels: map[string]string{"upgraded": "yes"}}
	up, err := f.e.UpgradeDraft(ctx, "deploy", d.Meta().Key, oldRef, newRef, engine.UpgradeOptions{Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	if up.Meta().Key != d.Meta().Key || up.Meta().Lifecycle != revision.LifecycleDraft {
		t.Fatalf("UpgradeDraft made %s (%s), want the draft %s", up.Meta().Key, up.Meta().Lifecycle, d.Meta().Key)
	}
	got, err := up.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Has("notes.txt") || !got.Has("quota.yaml") || !got.Has("local.txt") {
		t.Fatalf("upgraded draft files: %v", got.Paths())
	}
	cm := upgResource(t, got, "configmap.yaml")
	if upgValue(t, cm, "data", "size") != "large" || upgValue(t, cm, "data", "owner") != "team-a" {
		t.Fatalf("configmap after the draft upgrade:\n%s", cm.MustString())
	}
	info, err := up.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.UpstreamLock == nil || info.UpstreamLock.Git.Ref != "basens/v2" {
		t.Fatalf("upstream lock after the draft upgrade: %+v", info.UpstreamLock)
	}
	if !up.Meta().Metadata.Equal(md) {
		t.Fatalf("metadata after the draft upgrade: %+v", up.Meta().Metadata)
	}
	// Again: nothing to change, nothing written.
	again, err := f.e.UpgradeDraft(ctx, "deploy", d.Meta().Key, newRef, newRef, engine.UpgradeOptions{})
	if err != nil || again.Meta().Version != up.Meta().Version {
		t.Fatalf("a second UpgradeDraft to the same upstream: %v, %v", again, err)
	}
	if _, err := f.e.UpgradeDraft(ctx, "deploy", local, oldRef, newRef, engine.UpgradeOptions{}); !errors.Is(err, repository.ErrImmutable) {
		t.Fatalf("UpgradeDraft of a published revision: %v, want ErrImmutable", err)
	}
	if _, err := f.e.UpgradeDraft(ctx, "deploy", d.Meta().Key, oldRef, newRef, engine.UpgradeOptions{Strategy: "bogus"}); !errors.Is(err, repository.ErrInvalidInput) {
		t.Fatalf("UpgradeDraft with a bad strategy: %v", err)
	}
}
