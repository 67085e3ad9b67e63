package engine_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/repository/ocirepo"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
)

const noKptDeploy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
`

// noKptBackend opens the upstream repository "blueprints" and the
// downstream "deploy", and puts a plain directory base/ (no Kptfile, no
// marker) into blueprints outside cad's layout, returning the ref to adopt
// it at.
type noKptBackend struct {
	name string
	open func(t *testing.T) (up, down repository.Repository, ref string)
}

var noKptBackends = []noKptBackend{
	{"memrepo", func(t *testing.T) (repository.Repository, repository.Repository, string) {
		up, down := memrepo.New("blueprints", nil), memrepo.New("deploy", nil)
		t.Cleanup(func() { up.Close(); down.Close() })
		// memrepo has no history outside revisions: the content to adopt
		// is a draft's commit, deleted once adopted.
		d, err := up.CreateDraft(context.Background(), revision.Key{Package: "base", Workspace: "import"},
			repository.CreateDraftOptions{Files: revision.MustFiles(map[string]string{"deploy.yaml": noKptDeploy, "README.md": "base\n"})})
		if err != nil {
			t.Fatal(err)
		}
		pr, err := d.Commit(context.Background(), revision.CommitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return up, down, pr.Meta().Commit
	}},
	{"ocirepo", func(t *testing.T) (repository.Repository, repository.Repository, string) {
		// An image pushed by another tool (crane), one tar layer of files.
		srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		t.Cleanup(srv.Close)
		host := strings.TrimPrefix(srv.URL, "http://")
		layer, err := crane.Layer(map[string][]byte{"deploy.yaml": []byte(noKptDeploy), "README.md": []byte("base\n")})
		if err != nil {
			t.Fatal(err)
		}
		img, err := mutate.AppendLayers(empty.Image, layer)
		if err != nil {
			t.Fatal(err)
		}
		if err := crane.Push(img, host+"/blueprints/base:imported", crane.Insecure); err != nil {
			t.Fatal(err)
		}
		up, err := ocirepo.Open(context.Background(), repository.Spec{Name: "blueprints", Type: repository.TypeOCI,
			OCI: &repository.OCISpec{Registry: host + "/blueprints"}}, &ocirepo.Options{Insecure: true})
		if err != nil {
			t.Fatal(err)
		}
		down := memrepo.New("deploy", nil)
		t.Cleanup(func() { up.Close(); down.Close() })
		return up, down, "imported"
	}},
	{"gitrepo", func(t *testing.T) (repository.Repository, repository.Repository, string) {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("no git CLI to write a plain commit with")
		}
		dir := t.TempDir()
		bare := filepath.Join(dir, "blueprints.git")
		work := filepath.Join(dir, "work")
		run := func(dir string, args ...string) {
			t.Helper()
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
				"GIT_AUTHOR_NAME=User", "GIT_AUTHOR_EMAIL=user@example.com", "GIT_COMMITTER_NAME=User", "GIT_COMMITTER_EMAIL=user@example.com")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		run("", "init", "--quiet", "--bare", "-b", "main", bare)
		run("", "init", "--quiet", "-b", "import", work)
		if err := os.MkdirAll(filepath.Join(work, "base"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range map[string]string{"base/deploy.yaml": noKptDeploy, "base/README.md": "base\n"} {
			if err := os.WriteFile(filepath.Join(work, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run(work, "add", "-A")
		run(work, "commit", "--quiet", "-m", "plain directory")
		run(work, "push", "--quiet", bare, "import")
		open := func(name, url string) repository.Repository {
			r, err := gitrepo.Open(context.Background(), repository.Spec{Name: name, Type: repository.TypeGit,
				Git: &repository.GitSpec{Repo: url, CreateBranch: true}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r
		}
		return open("blueprints", bare), open("deploy", "mem://"), "import"
	}},
}

// TestE2ENoKptfile runs the roadmap's flow on packages that never have a
// Kptfile: adopt a plain directory as a published revision, clone it,
// publish a new upstream revision, discover and upgrade, derive a variant
// (whose pipeline function runs from cad's package file), adopt an
// existing draft into a variant, and approve through readiness gates kept
// in the package file.
func TestE2ENoKptfile(t *testing.T) {
	for _, b := range noKptBackends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			up, down, ref := b.open(t)
			e, err := engine.New(&engine.Options{
				Repositories: engine.Repos{"blueprints": up, "deploy": down},
				Pipeline:     pipeline.NewKptfile(fnruntime.NewRegistry(nil), nil),
				AuthorName:   "Test", AuthorEmail: "test@example.com",
			})
			if err != nil {
				t.Fatal(err)
			}
			noKptfile := func(pr revision.PackageRevision) revision.Files {
				t.Helper()
				f := files(t, pr)
				if f.Has(revision.KptfileName) {
					t.Fatalf("%s has a Kptfile", pr.Meta().Key)
				}
				return f
			}
			approve := func(repo string, k revision.Key) revision.PackageRevision {
				t.Helper()
				if _, err := e.Propose(ctx, repo, k); err != nil {
					t.Fatal(err)
				}
				pr, err := e.Approve(ctx, repo, k)
				if err != nil {
					t.Fatal(err)
				}
				return pr
			}

			// Adopt the plain directory as base v1, without rewriting it.
			base1, err := e.Adopt(ctx, "blueprints", revision.Key{Package: "base", Revision: 1}, repository.AdoptOptions{Ref: ref})
			if err != nil {
				t.Fatal(err)
			}
			if f := noKptfile(base1); f.Len() != 2 {
				t.Fatalf("adopted files %v", f.Paths())
			}
			if b.name == "memrepo" {
				if err := e.Delete(ctx, "blueprints", revision.Key{Package: "base", Workspace: "import"}); err != nil {
					t.Fatal(err)
				}
			}

			// Clone: no Kptfile; the upstream is recorded in the package file.
			web := revision.Key{Package: "web", Workspace: "ws1"}
			cl, err := e.Clone(ctx, "deploy", web, engine.CloneSource{Revision: &revision.Key{Repository: "blueprints", Package: "base", Revision: 1}}, engine.CloneOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f := noKptfile(cl)
			if !f.Has(revision.PackageFileName) {
				t.Fatalf("clone has no package file: %v", f.Paths())
			}
			info, err := cl.Info(ctx)
			if ref, commit := lockOf(info); err != nil || ref != "base/v1" || commit != base1.Meta().Commit {
				t.Fatalf("clone's upstream lock %+v, %v", info.UpstreamLock, err)
			}
			web1 := approve("deploy", web)

			// A new upstream revision.
			cp, err := e.Copy(ctx, "blueprints", revision.Key{Package: "base", Revision: 1}, "ws2", engine.CopyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			nf, _ := files(t, cp).With("deploy.yaml", []byte(strings.Replace(noKptDeploy, "replicas: 1", "replicas: 3", 1)))
			if _, err := e.Update(ctx, "blueprints", cp.Meta().Key, nf, engine.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			base2 := approve("blueprints", cp.Meta().Key)
			if base2.Meta().Key.Revision != 2 {
				t.Fatalf("new upstream is revision %d", base2.Meta().Key.Revision)
			}

			// Discover and upgrade.
			cands, err := e.DiscoverUpgrades(ctx, []string{"deploy"})
			if err != nil {
				t.Fatal(err)
			}
			if len(cands) != 1 || cands[0].Downstream.Package != "web" || cands[0].Latest().Revision != 2 {
				t.Fatalf("DiscoverUpgrades = %+v", cands)
			}
			upg, err := e.Upgrade(ctx, "deploy", web1.Meta().Key,
				engine.Ref{Repository: "blueprints", Key: revision.Key{Package: "base", Revision: 1}},
				engine.Ref{Repository: "blueprints", Key: revision.Key{Package: "base", Revision: 2}}, "ws2", engine.UpgradeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			uf := noKptfile(upg)
			if d, _ := uf.Get("deploy.yaml"); !strings.Contains(string(d), "replicas: 3") {
				t.Fatalf("upgrade did not merge the upstream change:\n%s", d)
			}
			if info, _ := upg.Info(ctx); refOf(info) != "base/v2" {
				t.Fatalf("upgraded lock %+v", info.UpstreamLock)
			}
			approve("deploy", upg.Meta().Key)

			// A variant: its pipeline function goes into the package file and
			// runs in the render.
			pv := &variant.PackageVariant{
				TypeMeta:   metav1.TypeMeta{APIVersion: variant.PackageVariantAPIVersion, Kind: variant.PackageVariantKind},
				ObjectMeta: metav1.ObjectMeta{Name: "edge"},
				Spec: variant.PackageVariantSpec{
					Upstream:   &variant.Upstream{Repo: "blueprints", Package: "base"},
					Downstream: &variant.Downstream{Repo: "deploy", Package: "edge"},
					Pipeline: &revision.Pipeline{Mutators: []revision.Function{{
						Image: "set-labels:v0.2.0", Name: "labels", ConfigMap: map[string]string{"tier": "edge"}}}},
				},
			}
			res, err := variant.Sync(ctx, e, pv, nil)
			if err != nil {
				t.Fatal(err)
			}
			vpr, err := e.Get(ctx, "deploy", res.Key)
			if err != nil {
				t.Fatal(err)
			}
			vf := noKptfile(vpr)
			if pf, _ := vf.Get(revision.PackageFileName); !strings.Contains(string(pf), "PackageVariant.edge.labels.0") {
				t.Fatalf("variant's function not in the package file:\n%s", pf)
			}
			if d, _ := vf.Get("deploy.yaml"); !strings.Contains(string(d), "tier: edge") {
				t.Fatalf("the package file's pipeline did not run:\n%s", d)
			}
			if res2, err := variant.Sync(ctx, e, pv, nil); err != nil || res2.Action != variant.ActionUnchanged {
				t.Fatalf("second sync: %v, %v", res2.Action, err)
			}

			// Readiness gates in the package file hold the approval back.
			gated, _ := files(t, vpr).Get(revision.PackageFileName)
			gated = []byte(strings.Replace(string(gated), "spec:\n", "spec:\n  readinessGates:\n  - conditionType: Tested\n", 1))
			vf2, _ := vf.With(revision.PackageFileName, gated)
			if _, err := e.Update(ctx, "deploy", res.Key, vf2, engine.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Propose(ctx, "deploy", res.Key); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Approve(ctx, "deploy", res.Key); !errors.Is(err, engine.ErrNotReady) {
				t.Fatalf("Approve with an unsatisfied gate in the package file: %v, want ErrNotReady", err)
			}
			// A checker sets the condition on the proposal itself, as
			// revision data: the proposal's files do not change.
			before, _ := e.Get(ctx, "deploy", res.Key)
			checked, err := e.SetConditions(ctx, "deploy", res.Key, revision.Condition{Type: "Tested", Status: revision.ConditionTrue, Reason: "CI"})
			if err != nil {
				t.Fatalf("set a condition on the proposal: %v", err)
			}
			if m := checked.Meta(); m.Lifecycle != revision.LifecycleProposed || m.Commit != before.Meta().Commit || !files(t, checked).Equal(files(t, before)) {
				t.Fatalf("setting a condition changed the proposal: %s, commit %s -> %s", m.Lifecycle, before.Meta().Commit, m.Commit)
			}
			pub, err := e.Approve(ctx, "deploy", res.Key)
			if err != nil || pub.Meta().Key.Revision != 1 {
				t.Fatalf("approve after the check: %v", err)
			}
			if pub.Meta().Conditions[0].Status != revision.ConditionTrue {
				t.Fatalf("published without the condition it was approved on: %+v", pub.Meta().Metadata)
			}

			// adoptExisting: an existing unowned draft without a Kptfile or an
			// upstream lock is taken over in place, its edits kept.
			ek := revision.Key{Package: "legacy", Workspace: "hand-made"}
			if _, err := e.Init(ctx, "deploy", ek, engine.InitOptions{NoKptfile: true}); err != nil {
				t.Fatal(err)
			}
			d0, _ := e.Get(ctx, "deploy", ek)
			edited, _ := files(t, d0).With("local.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n"))
			if _, err := e.Update(ctx, "deploy", ek, edited, engine.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			apv := &variant.PackageVariant{
				TypeMeta:   pv.TypeMeta,
				ObjectMeta: metav1.ObjectMeta{Name: "legacy"},
				Spec: variant.PackageVariantSpec{
					Upstream:       &variant.Upstream{Repo: "blueprints", Package: "base"},
					Downstream:     &variant.Downstream{Repo: "deploy", Package: "legacy"},
					AdoptionPolicy: variant.AdoptExisting,
				},
			}
			ares, err := variant.Sync(ctx, e, apv, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ares.Key != (revision.Key{Repository: "deploy", Package: "legacy", Workspace: "hand-made"}) {
				t.Fatalf("adoptExisting targets %s, want the existing draft", ares.Key)
			}
			got, err := e.Get(ctx, "deploy", ek)
			if err != nil {
				t.Fatalf("the adopted draft is gone: %v", err)
			}
			gf := noKptfile(got)
			if !gf.Has("local.yaml") {
				t.Fatalf("the adopted draft lost its edit: %v", gf.Paths())
			}
			if info, _ := got.Info(ctx); refOf(info) != "base/v2" {
				t.Fatalf("the adopted draft does not track the upstream: %+v", info.UpstreamLock)
			}
			if got.Meta().Metadata.Annotations[variant.OwnerAnnotation] == "" {
				t.Fatal("the adopted draft is not owned by the variant")
			}
			approve("deploy", ek)
		})
	}
}

// lockOf returns the ref and commit of info's upstream lock, git or
// generic (an OCI upstream).
func lockOf(info revision.Info) (ref, commit string) {
	switch l := info.UpstreamLock; {
	case l == nil:
	case l.Git != nil:
		return l.Git.Ref, l.Git.Commit
	case l.Generic != nil:
		return l.Generic.ResourceID, l.Generic.ResourceVersion
	}
	return "", ""
}

func refOf(info revision.Info) string {
	ref, _ := lockOf(info)
	return ref
}
