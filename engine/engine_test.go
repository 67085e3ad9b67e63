package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
)

// fakePipeline fails when any file contains "fail", and otherwise adds
// rendered.txt (idempotently), so a render is visible in the content.
type fakePipeline struct{}

func (fakePipeline) Render(_ context.Context, files revision.Files) (*pipeline.Output, error) {
	for _, p := range files.Paths() {
		data, _ := files.Get(p)
		if bytes.Contains(data, []byte("fail")) {
			return nil, &pipeline.RenderError{Package: ".", Err: fmt.Errorf("function failed on %s", p),
				Output: &pipeline.Output{Files: files}}
		}
	}
	out, err := files.With("rendered.txt", []byte("rendered\n"))
	if err != nil {
		return nil, err
	}
	return &pipeline.Output{Files: out}, nil
}

const repoName = "blueprints"

type backend struct {
	name string
	open func(t *testing.T, name string) repository.Repository
}

var backends = []backend{
	{"memrepo", func(t *testing.T, name string) repository.Repository {
		r := memrepo.New(name, nil)
		t.Cleanup(func() { r.Close() })
		return r
	}},
	{"gitrepo", func(t *testing.T, name string) repository.Repository {
		r, err := gitrepo.Open(context.Background(), repository.Spec{
			Name: name, Type: repository.TypeGit,
			Git: &repository.GitSpec{Repo: "mem://", CreateBranch: true},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}},
}

func newEngine(t *testing.T, r repository.Repository, p pipeline.Pipeline) *engine.Engine {
	t.Helper()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{r.Name(): r}, Pipeline: p,
		AuthorName: "Test", AuthorEmail: "test@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func files(t *testing.T, pr revision.PackageRevision) revision.Files {
	t.Helper()
	f, err := pr.Files(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// publish takes the draft key through propose and approve.
func publish(t *testing.T, e *engine.Engine, key revision.Key) revision.PackageRevision {
	t.Helper()
	ctx := context.Background()
	if _, err := e.Propose(ctx, repoName, key); err != nil {
		t.Fatal(err)
	}
	pr, err := e.Approve(ctx, repoName, key)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

func TestFlow(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEngine(t, b.open(t, repoName), fakePipeline{})
			key := revision.Key{Package: "net/istio", Workspace: "ws1"}
			pr, err := e.Init(ctx, repoName, key, engine.InitOptions{Description: "Istio", Keywords: []string{"mesh"}, Site: "https://istio.io"})
			if err != nil {
				t.Fatal(err)
			}
			if got := pr.Meta().Lifecycle; got != revision.LifecycleDraft {
				t.Fatalf("lifecycle %s, want Draft", got)
			}
			f := files(t, pr)
			if got, want := f.Paths(), []string{"Kptfile", "README.md", "package-context.yaml", "rendered.txt"}; !slices.Equal(got, want) {
				t.Fatalf("files %v, want %v", got, want)
			}
			kfData, _ := f.Get("Kptfile")
			kf, err := revision.ParseKptfile(kfData)
			if err != nil {
				t.Fatal(err)
			}
			if kf.Metadata.Name != "istio" || kf.Metadata.Annotations["config.kubernetes.io/local-config"] != "true" ||
				kf.Info == nil || kf.Info.Description != "Istio" || kf.Info.Site != "https://istio.io" || !slices.Equal(kf.Info.Keywords, []string{"mesh"}) {
				t.Fatalf("Kptfile:\n%s", kfData)
			}
			readme, _ := f.Get("README.md")
			if !strings.HasPrefix(string(readme), "# istio\n\n## Description\nIstio\n") {
				t.Fatalf("README.md:\n%s", readme)
			}

			// Nested packages are refused.
			for _, p := range []string{"net/istio/sub", "net"} {
				if _, err := e.Init(ctx, repoName, revision.Key{Package: p, Workspace: "ws1"}, engine.InitOptions{}); !errors.Is(err, repository.ErrInvalidInput) || !strings.Contains(err.Error(), "nested") {
					t.Fatalf("init %s: %v, want a nesting error", p, err)
				}
			}
			// A second init of the same package is refused.
			if _, err := e.Init(ctx, repoName, revision.Key{Package: "net/istio", Workspace: "ws2"}, engine.InitOptions{}); !errors.Is(err, repository.ErrAlreadyExists) {
				t.Fatalf("second init: %v, want ErrAlreadyExists", err)
			}

			next := f.Map()
			next["deployment.yaml"] = []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: istiod\n")
			nf, _ := revision.NewFiles(next)
			pr, err = e.Update(ctx, repoName, key, nf, engine.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !files(t, pr).Has("deployment.yaml") {
				t.Fatalf("update lost deployment.yaml: %v", files(t, pr).Paths())
			}

			pub := publish(t, e, key)
			if got := pub.Meta().Key.Revision; got != 1 {
				t.Fatalf("revision %d, want 1", got)
			}
			latest, err := e.Latest(ctx, repoName, "net/istio")
			if err != nil {
				t.Fatal(err)
			}
			if latest.Meta().Key.Revision != 1 || !files(t, latest).Equal(nf) {
				t.Fatalf("latest %s files %v", latest.Meta().Key, files(t, latest).Paths())
			}

			// Content of a published revision cannot be updated.
			if _, err := e.Update(ctx, repoName, revision.Key{Package: "net/istio", Revision: 1}, nf, engine.UpdateOptions{}); !errors.Is(err, repository.ErrImmutable) {
				t.Fatalf("update published: %v, want ErrImmutable", err)
			}
			// Approve needs a proposal.
			if _, err := e.Approve(ctx, repoName, revision.Key{Package: "net/istio", Revision: 1}); !errors.Is(err, repository.ErrInvalidTransition) {
				t.Fatalf("approve published: %v, want ErrInvalidTransition", err)
			}
		})
	}
}

const gatedKptfile = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
info:
  readinessGates:
  - conditionType: Tested
  - conditionType: Reviewed
status:
  conditions:
  - type: Tested
    status: "%s"
  - type: Reviewed
    status: "True"
`

func TestApproveReadinessGates(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEngine(t, b.open(t, repoName), nil)
			key := revision.Key{Package: "app", Workspace: "ws1"}
			if _, err := e.Init(ctx, repoName, key, engine.InitOptions{}); err != nil {
				t.Fatal(err)
			}
			unready := revision.MustFiles(map[string]string{"Kptfile": fmt.Sprintf(gatedKptfile, "False")})
			if _, err := e.Update(ctx, repoName, key, unready, engine.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Propose(ctx, repoName, key); err != nil {
				t.Fatal(err)
			}
			_, err := e.Approve(ctx, repoName, key)
			var ge *engine.GatesError
			if !errors.As(err, &ge) || !errors.Is(err, engine.ErrNotReady) || !slices.Equal(ge.Gates, []string{"Tested"}) {
				t.Fatalf("approve: %v, want a *GatesError naming Tested", err)
			}
			if !strings.Contains(err.Error(), "Tested") || strings.Contains(err.Error(), "Reviewed") {
				t.Fatalf("message %q", err)
			}

			// Back to draft, set the condition True, and approve.
			if _, err := e.Reject(ctx, repoName, key); err != nil {
				t.Fatal(err)
			}
			ready := revision.MustFiles(map[string]string{"Kptfile": fmt.Sprintf(gatedKptfile, "True")})
			if _, err := e.Update(ctx, repoName, key, ready, engine.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			pub := publish(t, e, key)
			if pub.Meta().Key.Revision != 1 || pub.Meta().Lifecycle != revision.LifecyclePublished {
				t.Fatalf("got %s %s", pub.Meta().Key, pub.Meta().Lifecycle)
			}
		})
	}
}

func TestCopy(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEngine(t, b.open(t, repoName), fakePipeline{})
			key := revision.Key{Package: "app", Workspace: "ws1"}
			if _, err := e.Init(ctx, repoName, key, engine.InitOptions{}); err != nil {
				t.Fatal(err)
			}
			v1 := publish(t, e, key)

			cp, err := e.Copy(ctx, repoName, revision.Key{Package: "app", Revision: 1}, "ws2", engine.CopyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if m := cp.Meta(); m.Lifecycle != revision.LifecycleDraft || m.Key.Workspace != "ws2" || m.Key.Package != "app" {
				t.Fatalf("copy %s %s", m.Key, m.Lifecycle)
			}
			if !files(t, cp).Equal(files(t, v1)) {
				t.Fatalf("copy files %v differ from v1 %v", files(t, cp).Paths(), files(t, v1).Paths())
			}
			v2 := publish(t, e, revision.Key{Package: "app", Workspace: "ws2"})
			if v2.Meta().Key.Revision != 2 {
				t.Fatalf("revision %d, want 2", v2.Meta().Key.Revision)
			}

			// The placeholder is refused, by key and by lookup.
			for _, src := range []revision.Key{{Package: "app", Revision: revision.Placeholder}, {Package: "app", Workspace: "main"}} {
				_, err = e.Copy(ctx, repoName, src, "ws3", engine.CopyOptions{})
				var pe *engine.PlaceholderError
				if !errors.As(err, &pe) || !errors.Is(err, repository.ErrInvalidInput) || !strings.Contains(err.Error(), "placeholder package revision") {
					t.Fatalf("copy from %s: %v, want a *PlaceholderError", src, err)
				}
			}
			// A draft is no source either.
			if _, err := e.Init(ctx, repoName, revision.Key{Package: "other", Workspace: "d"}, engine.InitOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Copy(ctx, repoName, revision.Key{Package: "other", Workspace: "d"}, "d2", engine.CopyOptions{}); !errors.Is(err, repository.ErrInvalidInput) {
				t.Fatalf("copy from draft: %v, want ErrInvalidInput", err)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			r := b.open(t, repoName)
			e := newEngine(t, r, fakePipeline{})
			key := revision.Key{Package: "app", Workspace: "ws1"}
			pr, err := e.Init(ctx, repoName, key, engine.InitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			base := files(t, pr)
			version := pr.Meta().Version

			t.Run("no-op", func(t *testing.T) {
				got, err := e.Update(ctx, repoName, key, base, engine.UpdateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got.Meta().Version != version {
					t.Fatalf("version %s, want unchanged %s", got.Meta().Version, version)
				}
			})
			t.Run("empty", func(t *testing.T) {
				_, err := e.Update(ctx, repoName, key, revision.Files{}, engine.UpdateOptions{})
				var re *repository.Error
				if !errors.Is(err, repository.ErrInvalidInput) || !errors.As(err, &re) {
					t.Fatalf("empty update: %v, want ErrInvalidInput", err)
				}
			})
			t.Run("render failure", func(t *testing.T) {
				bad, _ := base.With("cm.yaml", []byte("data: fail\n"))
				_, err := e.Update(ctx, repoName, key, bad, engine.UpdateOptions{})
				var re *pipeline.RenderError
				if !errors.As(err, &re) {
					t.Fatalf("update: %v, want a *pipeline.RenderError", err)
				}
				cur, err := r.Get(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if cur.Meta().Version != version || !files(t, cur).Equal(base) {
					t.Fatalf("render failure saved something: %s %v", cur.Meta().Version, files(t, cur).Paths())
				}
			})
			t.Run("save on render failure", func(t *testing.T) {
				bad, _ := base.With("cm.yaml", []byte("data: fail\n"))
				saved, err := e.Update(ctx, repoName, key, bad, engine.UpdateOptions{SaveOnRenderFailure: true})
				var re *pipeline.RenderError
				if !errors.As(err, &re) {
					t.Fatalf("update: %v, want a *pipeline.RenderError", err)
				}
				if saved == nil || !files(t, saved).Has("cm.yaml") {
					t.Fatalf("saved %v", saved)
				}
				cur, _ := r.Get(ctx, key)
				if !files(t, cur).Has("cm.yaml") {
					t.Fatalf("not saved: %v", files(t, cur).Paths())
				}
				// Propose re-renders, so it fails and the draft stays.
				if _, err := e.Propose(ctx, repoName, key); !errors.As(err, &re) {
					t.Fatalf("propose: %v, want a *pipeline.RenderError", err)
				}
				if cur, _ := r.Get(ctx, key); cur.Meta().Lifecycle != revision.LifecycleDraft {
					t.Fatalf("lifecycle %s after failed propose", cur.Meta().Lifecycle)
				}
			})
			t.Run("files left out are deleted", func(t *testing.T) {
				only := revision.MustFiles(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"})
				got, err := e.Update(ctx, repoName, key, only, engine.UpdateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if p := files(t, got).Paths(); !slices.Equal(p, []string{"Kptfile", "rendered.txt"}) {
					t.Fatalf("files %v", p)
				}
			})
		})
	}
}

func TestDelete(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEngine(t, b.open(t, repoName), nil)
			for i := 1; i <= 2; i++ {
				key := revision.Key{Package: "app", Workspace: fmt.Sprintf("ws%d", i)}
				var err error
				if i == 1 {
					_, err = e.Init(ctx, repoName, key, engine.InitOptions{})
				} else {
					_, err = e.Copy(ctx, repoName, revision.Key{Package: "app", Revision: 1}, key.Workspace, engine.CopyOptions{})
				}
				if err != nil {
					t.Fatal(err)
				}
				publish(t, e, key)
			}
			v2 := revision.Key{Package: "app", Revision: 2}
			latest, err := e.Latest(ctx, repoName, "app")
			if err != nil || latest.Meta().Key.Revision != 2 {
				t.Fatalf("latest %v %v", latest, err)
			}

			// Published: refused.
			if err := e.Delete(ctx, repoName, v2); !errors.Is(err, repository.ErrImmutable) {
				t.Fatalf("delete published: %v, want ErrImmutable", err)
			}
			// After a rejected deletion proposal, still refused.
			if _, err := e.ProposeDelete(ctx, repoName, v2); err != nil {
				t.Fatal(err)
			}
			if pr, err := e.Reject(ctx, repoName, v2); err != nil || pr.Meta().Lifecycle != revision.LifecyclePublished {
				t.Fatalf("reject deletion: %v", err)
			}
			if err := e.Delete(ctx, repoName, v2); !errors.Is(err, repository.ErrImmutable) {
				t.Fatalf("delete published: %v, want ErrImmutable", err)
			}
			// After propose-delete: deleted, and latest moves back.
			if _, err := e.ProposeDelete(ctx, repoName, v2); err != nil {
				t.Fatal(err)
			}
			if err := e.Delete(ctx, repoName, v2); err != nil {
				t.Fatal(err)
			}
			latest, err = e.Latest(ctx, repoName, "app")
			if err != nil || latest.Meta().Key.Revision != 1 {
				t.Fatalf("latest after delete: %v %v", latest, err)
			}

			// Drafts and proposals are deleted directly.
			for i, propose := range []bool{false, true} {
				key := revision.Key{Package: "app", Workspace: fmt.Sprintf("tmp%d", i)}
				if _, err := e.Copy(ctx, repoName, revision.Key{Package: "app", Revision: 1}, key.Workspace, engine.CopyOptions{}); err != nil {
					t.Fatal(err)
				}
				if propose {
					if _, err := e.Propose(ctx, repoName, key); err != nil {
						t.Fatal(err)
					}
				}
				if err := e.Delete(ctx, repoName, key); err != nil {
					t.Fatal(err)
				}
				if err := e.Delete(ctx, repoName, key); !errors.Is(err, repository.ErrNotFound) {
					t.Fatalf("second delete: %v, want ErrNotFound", err)
				}
			}

			// Deleting the last numbered revision leaves no latest, even with the
			// placeholder still on the branch.
			v1 := revision.Key{Package: "app", Revision: 1}
			if _, err := e.ProposeDelete(ctx, repoName, v1); err != nil {
				t.Fatal(err)
			}
			if err := e.Delete(ctx, repoName, v1); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Latest(ctx, repoName, "app"); !errors.Is(err, repository.ErrNotFound) {
				t.Fatalf("latest: %v, want ErrNotFound", err)
			}
		})
	}
}

// With Options.ProtectKptfileUpstreams, a revision whose Kptfile names a
// published revision as upstream keeps it; without, as in Porch, only
// creation records count, and the same delete goes through.
func TestDeleteReferencedUpstream(t *testing.T) {
	ctx := context.Background()
	up, down := memrepo.New("upstream", nil), memrepo.New("deployments", nil)
	repos := engine.Repos{"upstream": up, "deployments": down}
	e, err := engine.New(&engine.Options{Repositories: repos, ProtectKptfileUpstreams: true})
	if err != nil {
		t.Fatal(err)
	}
	porch, err := engine.New(&engine.Options{Repositories: repos})
	if err != nil {
		t.Fatal(err)
	}
	key := revision.Key{Package: "basens", Workspace: "ws1"}
	if _, err := e.Init(ctx, "upstream", key, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Propose(ctx, "upstream", key); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Approve(ctx, "upstream", key); err != nil {
		t.Fatal(err)
	}
	// A downstream draft whose Kptfile locks basens/v1.
	clone := revision.MustFiles(map[string]string{"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: ns1
upstream:
  type: git
  git:
    repo: https://example.com/upstream.git
    directory: /basens
    ref: basens/v1
upstreamLock:
  type: git
  git:
    repo: https://example.com/upstream.git
    directory: /basens
    ref: basens/v1
    commit: 0123456789abcdef
`})
	d, err := down.CreateDraft(ctx, revision.Key{Package: "ns1", Workspace: "ws1"}, repository.CreateDraftOptions{Files: clone})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		t.Fatal(err)
	}

	v1 := revision.Key{Package: "basens", Revision: 1}
	if _, err := e.ProposeDelete(ctx, "upstream", v1); err != nil {
		t.Fatal(err)
	}
	err = e.Delete(ctx, "upstream", v1)
	var re *engine.ReferencedError
	if !errors.As(err, &re) || !errors.Is(err, repository.ErrImmutable) || len(re.By) != 1 || re.By[0].Package != "ns1" {
		t.Fatalf("delete referenced: %v, want a *ReferencedError naming ns1", err)
	}
	if _, err := up.Get(ctx, v1); err != nil {
		t.Fatalf("the refused delete removed v1: %v", err)
	}
	if err := porch.Delete(ctx, "upstream", v1); err != nil {
		t.Fatalf("delete of an upstream only a Kptfile names, by Porch's rule: %v", err)
	}
	if err := e.Delete(ctx, "deployments", revision.Key{Package: "ns1", Workspace: "ws1"}); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentApprove(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			r := b.open(t, repoName)
			e := newEngine(t, r, nil)
			const n = 8
			var keys []revision.Key
			for i := range n {
				k := revision.Key{Package: "app", Workspace: fmt.Sprintf("ws%d", i)}
				d, err := r.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: revision.MustFiles(map[string]string{
					"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
					"cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\n", i),
				})})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := e.Propose(ctx, repoName, k); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k)
			}
			var wg sync.WaitGroup
			nums := make([]int, n)
			errs := make([]error, n)
			for i, k := range keys {
				wg.Go(func() {
					errs[i] = engine.RetryOnConflict(ctx, 50, func() error {
						pr, err := e.Approve(ctx, repoName, k)
						if err == nil {
							nums[i] = pr.Meta().Key.Revision
						}
						return err
					})
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("approve %s: %v", keys[i], err)
				}
			}
			slices.Sort(nums)
			for i, got := range nums {
				if got != i+1 {
					t.Fatalf("revision numbers %v, want 1..%d", nums, n)
				}
			}
		})
	}
}

func TestRetryOnConflict(t *testing.T) {
	ctx := context.Background()
	conflict := fmt.Errorf("approve x: %w", repository.ErrConflict)
	calls := 0
	err := engine.RetryOnConflict(ctx, 5, func() error {
		calls++
		if calls < 3 {
			return conflict
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls, want nil after 3", err, calls)
	}

	calls = 0
	err = engine.RetryOnConflict(ctx, 3, func() error { calls++; return conflict })
	if !errors.Is(err, repository.ErrConflict) || calls != 3 {
		t.Fatalf("err %v after %d calls, want conflict after 3", err, calls)
	}

	calls = 0
	other := errors.New("boom")
	if err := engine.RetryOnConflict(ctx, 3, func() error { calls++; return other }); err != other || calls != 1 {
		t.Fatalf("err %v after %d calls, want boom after 1", err, calls)
	}

	cctx, cancel := context.WithCancel(ctx)
	calls = 0
	err = engine.RetryOnConflict(cctx, 100, func() error {
		calls++
		cancel()
		return conflict
	})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, repository.ErrConflict) || calls != 1 {
		t.Fatalf("err %v after %d calls, want canceled after 1", err, calls)
	}
}

func TestNewAndUnknownRepository(t *testing.T) {
	if _, err := engine.New(nil); !errors.Is(err, repository.ErrInvalidInput) {
		t.Fatalf("New(nil): %v, want ErrInvalidInput", err)
	}
	e := newEngine(t, memrepo.New(repoName, nil), nil)
	_, err := e.Init(context.Background(), "nope", revision.Key{Package: "app", Workspace: "ws"}, engine.InitOptions{})
	if !errors.Is(err, repository.ErrNotFound) || !strings.Contains(err.Error(), "init") {
		t.Fatalf("init in unknown repository: %v", err)
	}
	_, err = e.Init(context.Background(), repoName, revision.Key{Package: "Bad_Name", Workspace: "ws"}, engine.InitOptions{})
	if !errors.Is(err, repository.ErrInvalidInput) {
		t.Fatalf("init with bad key: %v", err)
	}
	pr, err := e.Init(context.Background(), repoName, revision.Key{Package: "bare", Workspace: "ws"}, engine.InitOptions{NoKptfile: true})
	if err != nil {
		t.Fatal(err)
	}
	if p := files(t, pr).Paths(); !slices.Equal(p, []string{"README.md"}) {
		t.Fatalf("NoKptfile files %v", p)
	}
}

// TestInitNoKptfileEveryBackend checks what InitOptions.NoKptfile
// documents: every backend, gitrepo included, keeps a package without a
// Kptfile through propose and approve, and lists it.
func TestInitNoKptfileEveryBackend(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			r := b.open(t, repoName)
			e := newEngine(t, r, nil)
			key := revision.Key{Package: "bare", Workspace: "ws"}
			if _, err := e.Init(ctx, repoName, key, engine.InitOptions{NoKptfile: true}); err != nil {
				t.Fatal(err)
			}
			pub := publish(t, e, key)
			if p := files(t, pub).Paths(); !slices.Equal(p, []string{"README.md"}) {
				t.Fatalf("published files %v, want only README.md", p)
			}
			got, err := e.Get(ctx, repoName, pub.Meta().Key)
			if err != nil || got.Meta().Lifecycle != revision.LifecyclePublished {
				t.Fatalf("get %s: %v, %v", pub.Meta().Key, got, err)
			}
		})
	}
}

func TestLifecycleRules(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			r := b.open(t, repoName)
			e := newEngine(t, r, nil)
			key := revision.Key{Package: "app", Workspace: "ws1"}
			if _, err := e.Init(ctx, repoName, key, engine.InitOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Reject(ctx, repoName, key); !errors.Is(err, repository.ErrInvalidTransition) {
				t.Fatalf("reject draft: %v, want ErrInvalidTransition", err)
			}
			if _, err := e.Approve(ctx, repoName, key); !errors.Is(err, repository.ErrInvalidTransition) {
				t.Fatalf("approve draft: %v, want ErrInvalidTransition", err)
			}
			if _, err := e.ProposeDelete(ctx, repoName, key); !errors.Is(err, repository.ErrInvalidTransition) {
				t.Fatalf("propose-delete draft: %v, want ErrInvalidTransition", err)
			}
			if _, err := e.Propose(ctx, repoName, key); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Propose(ctx, repoName, key); !errors.Is(err, repository.ErrInvalidTransition) {
				t.Fatalf("propose proposal: %v, want ErrInvalidTransition", err)
			}
			if _, err := e.Update(ctx, repoName, key, revision.MustFiles(map[string]string{"a.yaml": "a: 1\n"}), engine.UpdateOptions{}); !errors.Is(err, repository.ErrImmutable) {
				t.Fatalf("update proposal: %v, want ErrImmutable", err)
			}
			if _, err := e.Approve(ctx, repoName, key); err != nil {
				t.Fatal(err)
			}

			// The placeholder can be proposed for deletion and deleted,
			// which removes the package from the branch.
			ph := revision.Key{Package: "app", Revision: revision.Placeholder}
			if err := e.Delete(ctx, repoName, ph); !errors.Is(err, repository.ErrImmutable) {
				t.Fatalf("delete placeholder: %v, want ErrImmutable", err)
			}
			if _, err := e.ProposeDelete(ctx, repoName, ph); err != nil {
				t.Fatal(err)
			}
			if err := e.Delete(ctx, repoName, ph); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Get(ctx, ph); !errors.Is(err, repository.ErrNotFound) {
				t.Fatalf("placeholder after delete: %v, want ErrNotFound", err)
			}
		})
	}
}

func TestConflicts(t *testing.T) {
	ctx := context.Background()
	base := memrepo.New(repoName, nil)
	lost := 0
	r := repotest.Intercept(base, repotest.Funcs{
		UpdateLifecycle: func(ctx context.Context, next repository.Repository, k revision.Key, to revision.Lifecycle, o repository.UpdateOptions) (revision.PackageRevision, error) {
			if to == revision.LifecyclePublished && lost < 2 {
				lost++
				return nil, &repository.Error{Op: "update lifecycle", Repository: repoName, Key: k, Err: repository.ErrConflict}
			}
			return next.UpdateLifecycle(ctx, k, to, o)
		},
		// Another writer changes the draft right after the engine opened it.
		OpenDraft: func(ctx context.Context, next repository.Repository, k revision.Key) (revision.Draft, error) {
			d, err := next.OpenDraft(ctx, k)
			if err != nil {
				return nil, err
			}
			other, err := next.OpenDraft(ctx, k)
			if err != nil {
				return nil, err
			}
			if err := other.SetFile("other.yaml", []byte("x: 1\n")); err != nil {
				return nil, err
			}
			if _, err := other.Commit(ctx, revision.CommitOptions{}); err != nil {
				return nil, err
			}
			return d, nil
		},
	})
	e := newEngine(t, r, nil)
	key := revision.Key{Package: "app", Workspace: "ws1"}
	if _, err := e.Init(ctx, repoName, key, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Update(ctx, repoName, key, revision.MustFiles(map[string]string{"a.yaml": "a: 1\n"}), engine.UpdateOptions{})
	if !errors.Is(err, repository.ErrConflict) || !strings.Contains(err.Error(), "update") {
		t.Fatalf("update: %v, want ErrConflict", err)
	}
	if _, err := e.Propose(ctx, repoName, key); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Approve(ctx, repoName, key); !errors.Is(err, repository.ErrConflict) || !strings.HasPrefix(err.Error(), "approve ") {
		t.Fatalf("approve: %v, want ErrConflict", err)
	}
	var pub revision.PackageRevision
	err = engine.RetryOnConflict(ctx, 5, func() error {
		var err error
		pub, err = e.Approve(ctx, repoName, key)
		return err
	})
	if err != nil || pub.Meta().Key.Revision != 1 || lost != 2 {
		t.Fatalf("approve with retry: %v (lost %d)", err, lost)
	}
}

func TestSetReadiness(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEngine(t, b.open(t, repoName), nil)
			key := revision.Key{Package: "app", Workspace: "ws1"}
			withComment := revision.MustFiles(map[string]string{
				"Kptfile": "# the app package\napiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app # keep me\n",
			})
			if _, err := e.Init(ctx, repoName, key, engine.InitOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Update(ctx, repoName, key, withComment, engine.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.SetReadinessGates(ctx, repoName, key, []revision.ReadinessGate{{ConditionType: "Tested"}}); err != nil {
				t.Fatal(err)
			}
			pr, err := e.SetConditions(ctx, repoName, key, revision.Condition{Type: "Tested", Status: revision.ConditionFalse})
			if err != nil {
				t.Fatal(err)
			}
			info, err := pr.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(info.ReadinessGates) != 1 || len(info.Conditions) != 1 || info.Conditions[0].Status != revision.ConditionFalse {
				t.Fatalf("info %+v", info)
			}
			kf, _ := files(t, pr).Get("Kptfile")
			if !strings.Contains(string(kf), "# the app package") || !strings.Contains(string(kf), "# keep me") {
				t.Fatalf("comments lost:\n%s", kf)
			}
			// Same condition again: nothing written.
			again, err := e.SetConditions(ctx, repoName, key, revision.Condition{Type: "Tested", Status: revision.ConditionFalse})
			if err != nil || again.Meta().Version != pr.Meta().Version {
				t.Fatalf("no-op set: %v, version %s want %s", err, again.Meta().Version, pr.Meta().Version)
			}
			if _, err := e.SetConditions(ctx, repoName, key, revision.Condition{Type: "Tested", Status: "Yes"}); !errors.Is(err, repository.ErrInvalidInput) {
				t.Fatalf("bad status: %v, want ErrInvalidInput", err)
			}

			if _, err := e.Propose(ctx, repoName, key); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Approve(ctx, repoName, key); !errors.Is(err, engine.ErrNotReady) {
				t.Fatalf("approve: %v, want ErrNotReady", err)
			}
			// A condition set on the proposal is revision data: the
			// content stays as proposed.
			prop, err := e.Get(ctx, repoName, key)
			if err != nil {
				t.Fatal(err)
			}
			ready, err := e.SetConditions(ctx, repoName, key, revision.Condition{Type: "Tested", Status: revision.ConditionTrue, Reason: "CI"})
			if err != nil {
				t.Fatalf("set conditions on a proposal: %v", err)
			}
			if ready.Meta().Lifecycle != revision.LifecycleProposed || !files(t, ready).Equal(files(t, prop)) {
				t.Fatal("setting a condition on a proposal changed its lifecycle or files")
			}
			pub, err := e.Approve(ctx, repoName, key)
			if err != nil {
				t.Fatal(err)
			}
			if pub.Meta().Key.Revision != 1 {
				t.Fatalf("revision %d", pub.Meta().Key.Revision)
			}
			got, err := e.Get(ctx, repoName, revision.Key{Package: "app", Revision: 1})
			if err != nil || got.Meta().Lifecycle != revision.LifecyclePublished {
				t.Fatalf("get v1: %v", err)
			}
			if _, err := e.SetConditions(ctx, repoName, got.Meta().Key, revision.Condition{Type: "Tested", Status: revision.ConditionFalse}); !errors.Is(err, repository.ErrImmutable) {
				t.Fatalf("set conditions on a published revision: %v, want ErrImmutable", err)
			}

			// Without a Kptfile, readiness is revision data alone.
			bare := revision.Key{Package: "bare", Workspace: "ws"}
			if _, err := e.Init(ctx, repoName, bare, engine.InitOptions{NoKptfile: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.SetReadinessGates(ctx, repoName, bare, []revision.ReadinessGate{{ConditionType: "Tested"}}); err != nil {
				t.Fatalf("gates without a Kptfile: %v", err)
			}
			if _, err := e.Propose(ctx, repoName, bare); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Approve(ctx, repoName, bare); !errors.Is(err, engine.ErrNotReady) {
				t.Fatalf("approve without a Kptfile: %v, want ErrNotReady", err)
			}
			if _, err := e.SetConditions(ctx, repoName, bare, revision.Condition{Type: "Tested", Status: revision.ConditionTrue}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Approve(ctx, repoName, bare); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// BenchmarkApprove approves one proposal of a package that already has n
// published revisions, on memrepo.
func BenchmarkApprove(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			r := memrepo.New(repoName, nil)
			defer r.Close()
			e, err := engine.New(&engine.Options{Repositories: engine.Repos{repoName: r}})
			if err != nil {
				b.Fatal(err)
			}
			kf := revision.MustFiles(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"})
			draft := func(ws string) revision.Key {
				k := revision.Key{Package: "app", Workspace: ws}
				d, err := r.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: kf})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
					b.Fatal(err)
				}
				if _, err := e.Propose(ctx, repoName, k); err != nil {
					b.Fatal(err)
				}
				return k
			}
			for i := range n {
				if _, err := e.Approve(ctx, repoName, draft(fmt.Sprintf("old%d", i))); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				k := draft(fmt.Sprintf("new%d", i))
				b.StartTimer()
				if _, err := e.Approve(ctx, repoName, k); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Exactly one of N identical requests wins; the others fail cleanly.
func TestConcurrentIdenticalRequests(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEngine(t, b.open(t, repoName), nil)
			const n = 8
			key := revision.Key{Package: "app", Workspace: "ws1"}
			race := func(fn func() error) (wins int, errs []error) {
				var mu sync.Mutex
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() {
						err := fn()
						mu.Lock()
						defer mu.Unlock()
						if err == nil {
							wins++
						} else {
							errs = append(errs, err)
						}
					})
				}
				wg.Wait()
				return wins, errs
			}

			wins, errs := race(func() error {
				_, err := e.Init(ctx, repoName, key, engine.InitOptions{})
				return err
			})
			if wins != 1 {
				t.Fatalf("init: %d winners, errors %v", wins, errs)
			}
			for _, err := range errs {
				if !errors.Is(err, repository.ErrAlreadyExists) && !errors.Is(err, repository.ErrConflict) {
					t.Fatalf("init loser: %v", err)
				}
			}
			if _, err := e.Propose(ctx, repoName, key); err != nil {
				t.Fatal(err)
			}
			wins, errs = race(func() error {
				_, err := e.Approve(ctx, repoName, key)
				return err
			})
			if wins != 1 {
				t.Fatalf("approve: %d winners, errors %v", wins, errs)
			}
			for _, err := range errs {
				if !errors.Is(err, repository.ErrInvalidTransition) && !errors.Is(err, repository.ErrConflict) && !errors.Is(err, repository.ErrNotFound) {
					t.Fatalf("approve loser: %v", err)
				}
			}
			revs, err := e.Latest(ctx, repoName, "app")
			if err != nil || revs.Meta().Key.Revision != 1 {
				t.Fatalf("latest: %v", err)
			}
		})
	}
}

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	r := memrepo.New(repoName, nil)
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{repoName: r},
		Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Init(context.Background(), repoName, revision.Key{Package: "app", Workspace: "ws1"}, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "blueprints:app@ws1") {
		t.Fatalf("log: %q", buf.String())
	}
}

func TestUpdateKeepsComments(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, memrepo.New(repoName, nil), nil)
	key := revision.Key{Package: "app", Workspace: "ws1"}
	if _, err := e.Init(ctx, repoName, key, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	commented := "# the settings\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings # keep\ndata:\n  color: blue # the colour\n"
	pr, err := e.Update(ctx, repoName, key, revision.MustFiles(map[string]string{"cm.yaml": commented}), engine.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The same content without comments is a no-op.
	stripped := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n"
	same, err := e.Update(ctx, repoName, key, revision.MustFiles(map[string]string{"cm.yaml": stripped}), engine.UpdateOptions{})
	if err != nil || same.Meta().Version != pr.Meta().Version {
		t.Fatalf("stripped update: %v, version %s want %s", err, same.Meta().Version, pr.Meta().Version)
	}
	// A change keeps the comments, even when the resource moved file.
	changed := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: red\n"
	got, err := e.Update(ctx, repoName, key, revision.MustFiles(map[string]string{"config/cm.yaml": changed}), engine.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := files(t, got).Get("config/cm.yaml")
	for _, want := range []string{"# the settings", "# keep", "color: red # the colour"} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("config/cm.yaml lacks %q:\n%s", want, data)
		}
	}
	// ytt templates are left alone.
	ytt := "#@ load(\"@ytt:data\", \"data\")\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
	got, err = e.Update(ctx, repoName, key, revision.MustFiles(map[string]string{"t.yaml": ytt}), engine.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := files(t, got).Get("t.yaml"); string(data) != ytt {
		t.Fatalf("ytt file changed:\n%s", data)
	}
}

func TestWatch(t *testing.T) {
	ctx := context.Background()
	a, b := memrepo.New("a", nil), memrepo.New("b", nil)
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"a": a, "b": b}})
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("seen both")
	seen := map[string]repository.EventType{}
	done := make(chan error, 1)
	go func() {
		done <- e.Watch(ctx, nil, repository.ListOptions{}, func(ev repository.Event) error {
			seen[ev.Revision.Meta().Key.Repository] = ev.Type
			if len(seen) == 2 {
				return stop
			}
			return nil
		})
	}()
	// The watches start asynchronously: write until both are seen.
loop:
	for i := 0; ; i++ {
		select {
		case err := <-done:
			if !errors.Is(err, stop) {
				t.Fatalf("watch: %v, want the handler's error", err)
			}
			if seen["a"] != repository.Added || seen["b"] != repository.Added {
				t.Fatalf("events %v", seen)
			}
			break loop
		default:
		}
		for _, repo := range []string{"a", "b"} {
			if _, err := e.Init(ctx, repo, revision.Key{Package: fmt.Sprintf("p%d", i), Workspace: "ws"}, engine.InitOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if i > 1000 {
			t.Fatal("no events")
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.Watch(cctx, []string{"a"}, repository.ListOptions{}, func(repository.Event) error { return nil }); err != nil {
		t.Fatalf("watch after cancel: %v, want nil", err)
	}
	if err := e.Watch(ctx, []string{"nope"}, repository.ListOptions{}, nil); !errors.Is(err, repository.ErrNotFound) {
		t.Fatalf("watch unknown: %v, want ErrNotFound", err)
	}
	// A backend that cannot watch.
	plain := struct{ repository.Repository }{a}
	e2, _ := engine.New(&engine.Options{Repositories: engine.Repos{"a": plain}})
	if err := e2.Watch(ctx, nil, repository.ListOptions{}, func(repository.Event) error { return nil }); !errors.Is(err, repository.ErrNotSupported) {
		t.Fatalf("watch without Watcher: %v, want ErrNotSupported", err)
	}
}

// brokenRepos is Repos with names that cannot be opened, as a registered
// Repository refused by confinement or a remote that is down.
type brokenRepos struct {
	engine.Repos
	broken []string
}

func (b brokenRepos) Names(ctx context.Context) ([]string, error) {
	names, _ := b.Repos.Names(ctx)
	return append(names, b.broken...), nil
}

func (b brokenRepos) Repository(ctx context.Context, name string) (repository.Repository, error) {
	for _, n := range b.broken {
		if n == name {
			return nil, fmt.Errorf("%w: repository %q cannot be opened", repository.ErrInvalidInput, name)
		}
	}
	return b.Repos.Repository(ctx, name)
}

// One repository that cannot be opened does not stall the deletes of the
// others (issue 35: failures stay local), while a reference in a healthy
// repository still refuses the delete.
func TestDeleteLeavesOutBrokenRepositories(t *testing.T) {
	ctx := context.Background()
	up, down := memrepo.New("upstream", nil), memrepo.New("deployments", nil)
	repos := brokenRepos{Repos: engine.Repos{"upstream": up, "deployments": down}, broken: []string{"etc"}}
	e, err := engine.New(&engine.Options{Repositories: repos})
	if err != nil {
		t.Fatal(err)
	}
	publish := func(pkg string) revision.Key {
		key := revision.Key{Package: pkg, Workspace: "ws1"}
		if _, err := e.Init(ctx, "upstream", key, engine.InitOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Propose(ctx, "upstream", key); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Approve(ctx, "upstream", key); err != nil {
			t.Fatal(err)
		}
		return revision.Key{Package: pkg, Revision: 1}
	}
	free, used := publish("free"), publish("used")
	src := used
	src.Repository = "upstream"
	if _, err := e.Clone(ctx, "deployments", revision.Key{Package: "copy", Workspace: "ws1"}, engine.CloneSource{Revision: &src}, engine.CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []revision.Key{free, used} {
		if _, err := e.ProposeDelete(ctx, "upstream", k); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Delete(ctx, "upstream", free); err != nil {
		t.Fatalf("delete with a broken repository registered: %v", err)
	}
	var re *engine.ReferencedError
	if err := e.Delete(ctx, "upstream", used); !errors.As(err, &re) {
		t.Fatalf("delete of a cloned upstream with a broken repository registered: %v, want a *ReferencedError", err)
	}
}
