package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// cloneRepos adds the optional URLer and Deployer to a fixed set.
type cloneRepos struct {
	engine.Repos
	urls   map[string]string
	deploy map[string]bool
}

func (c cloneRepos) URL(name string) string      { return c.urls[name] }
func (c cloneRepos) Deployment(name string) bool { return c.deploy[name] }

var (
	_ engine.URLer    = cloneRepos{}
	_ engine.Deployer = cloneRepos{}
)

const (
	deployRepo  = "deployments"
	plainRepo   = "plain"
	upstreamURL = "https://git.example.com/blueprints.git"
)

const istioDeploy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: istiod
  namespace: istio-system
spec:
  replicas: 1 # one is enough
`

const istioConfig = `apiVersion: v1
kind: ConfigMap
metadata:
  name: setters
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  a: b
`

// cloneSetup returns an engine over blueprints (holding net/istio v1, with
// two resources, and a draft of net/istio ws2), a deployment repository and
// a plain repository, all of backend b.
func cloneSetup(t *testing.T, b backend, p pipeline.Pipeline) (*engine.Engine, revision.PackageRevision) {
	t.Helper()
	ctx := context.Background()
	repos := engine.Repos{repoName: b.open(t, repoName), deployRepo: b.open(t, deployRepo), plainRepo: b.open(t, plainRepo)}
	e, err := engine.New(&engine.Options{
		Repositories: cloneRepos{Repos: repos, urls: map[string]string{repoName: upstreamURL}, deploy: map[string]bool{deployRepo: true}},
		Pipeline:     p, AuthorName: "Test", AuthorEmail: "test@example.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	key := revision.Key{Package: "net/istio", Workspace: "ws1"}
	pr, err := e.Init(ctx, repoName, key, engine.InitOptions{Description: "Istio"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := files(t, pr).With("deploy.yaml", []byte(istioDeploy))
	if err == nil {
		f, err = f.With("setters.yaml", []byte(istioConfig))
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(ctx, repoName, key, f, engine.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	v1 := publish(t, e, key)
	if _, err := e.Copy(ctx, repoName, revision.Key{Package: "net/istio", Revision: 1}, "ws2", engine.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	return e, v1
}

func kptfileOf(t *testing.T, f revision.Files) *revision.Kptfile {
	t.Helper()
	data, ok := f.Get(revision.KptfileName)
	if !ok {
		t.Fatal("no Kptfile")
	}
	kf, err := revision.ParseKptfile(data)
	if err != nil {
		t.Fatal(err)
	}
	return kf
}

func get(t *testing.T, f revision.Files, p string) string {
	t.Helper()
	data, ok := f.Get(p)
	if !ok {
		t.Fatalf("no %s in %v", p, f.Paths())
	}
	return string(data)
}

func TestCloneRegistered(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			e, v1 := cloneSetup(t, b, fakePipeline{})
			src := revision.Key{Repository: repoName, Package: "net/istio", Revision: 1}
			key := revision.Key{Package: "edge/istio-east", Workspace: "ws1"}
			pr, err := e.Clone(ctx, deployRepo, key, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m := pr.Meta()
			if m.Key.Repository != deployRepo || m.Key.Package != key.Package || m.Key.Workspace != "ws1" || m.Lifecycle != revision.LifecycleDraft {
				t.Fatalf("meta %+v", m)
			}
			f := files(t, pr)
			kf := kptfileOf(t, f)
			if kf.Metadata.Name != "istio-east" {
				t.Errorf("metadata.name %q, want istio-east", kf.Metadata.Name)
			}
			if kf.Info == nil || kf.Info.Description != "Istio" {
				t.Errorf("upstream info lost: %+v", kf.Info)
			}
			// As Porch's clone: no updateStrategy unless asked.
			wantUp := revision.Upstream{Type: revision.GitOrigin,
				Git: &revision.Git{Repo: upstreamURL, Directory: "net/istio", Ref: "net/istio/v1"}}
			if kf.Upstream == nil || kf.Upstream.Type != wantUp.Type || kf.Upstream.UpdateStrategy != wantUp.UpdateStrategy || *kf.Upstream.Git != *wantUp.Git {
				t.Errorf("upstream %+v, want %+v", kf.Upstream, wantUp)
			}
			wantLock := revision.GitLock{Repo: upstreamURL, Directory: "net/istio", Ref: "net/istio/v1", Commit: v1.Meta().Commit}
			if kf.UpstreamLock == nil || kf.UpstreamLock.Type != revision.GitOrigin || kf.UpstreamLock.Git == nil || *kf.UpstreamLock.Git != wantLock {
				t.Errorf("upstreamLock %+v, want %+v", kf.UpstreamLock, wantLock)
			}
			info, err := pr.Info(ctx)
			if err != nil || info.UpstreamLock == nil || info.UpstreamLock.Git.Commit != v1.Meta().Commit {
				t.Errorf("Info upstreamLock %+v, %v", info.UpstreamLock, err)
			}

			deploy := get(t, f, "deploy.yaml")
			for _, want := range []string{
				"metadata: # kpt-merge: istio-system/istiod\n",
				"internal.kpt.dev/upstream-identifier: 'apps|Deployment|istio-system|istiod'",
				"replicas: 1 # one is enough",
			} {
				if !strings.Contains(deploy, want) {
					t.Errorf("deploy.yaml lacks %q:\n%s", want, deploy)
				}
			}
			if s := get(t, f, "setters.yaml"); !strings.Contains(s, "internal.kpt.dev/upstream-identifier: '|ConfigMap|default|setters'") {
				t.Errorf("local-config resource not stamped:\n%s", s)
			}
			// The Kptfile has the identity of its new name, as Porch's clone
			// gives it.
			kfText := get(t, f, revision.KptfileName)
			for _, want := range []string{
				"metadata: # kpt-merge: /istio-east\n",
				"internal.kpt.dev/upstream-identifier: 'kpt.dev|Kptfile|default|istio-east'\n",
			} {
				if !strings.Contains(kfText, want) {
					t.Errorf("Kptfile lacks %q:\n%s", want, kfText)
				}
			}
			pc := get(t, f, engine.PackageContextFile)
			if !strings.Contains(pc, "name: kptfile.kpt.dev") || !strings.Contains(pc, "  name: istio-east\n") ||
				!strings.Contains(pc, `config.kubernetes.io/local-config: "true"`) {
				t.Errorf("package-context.yaml:\n%s", pc)
			}
			if !f.Has("rendered.txt") {
				t.Error("not rendered")
			}

			// Into a plain repository: the package-context is the
			// upstream's, stamped; the source is still named by URL.
			pr, err = e.Clone(ctx, plainRepo, key, engine.CloneSource{Revision: &src}, engine.CloneOptions{Strategy: revision.FastForward})
			if err != nil {
				t.Fatal(err)
			}
			f = files(t, pr)
			if pc := get(t, f, engine.PackageContextFile); !strings.Contains(pc, "name: example") || !strings.Contains(pc, "|ConfigMap|default|kptfile.kpt.dev") {
				t.Errorf("plain package-context.yaml:\n%s", pc)
			}
			if kf := kptfileOf(t, f); kf.Upstream.UpdateStrategy != revision.FastForward {
				t.Errorf("strategy %q", kf.Upstream.UpdateStrategy)
			}
			// ForDeployment asks for the package context anywhere.
			pr, err = e.Clone(ctx, plainRepo, revision.Key{Package: "edge/other", Workspace: "ws1"}, engine.CloneSource{Revision: &src},
				engine.CloneOptions{ForDeployment: true})
			if err != nil {
				t.Fatal(err)
			}
			if pc := get(t, files(t, pr), engine.PackageContextFile); !strings.Contains(pc, "  name: other\n") {
				t.Errorf("ForDeployment package-context.yaml:\n%s", pc)
			}
		})
	}
}

func TestCloneRepositoryName(t *testing.T) {
	ctx := context.Background()
	up, down := memrepo.New("upstream", nil), memrepo.New("down", nil)
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"upstream": up, "down": down}})
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
	src := revision.Key{Repository: "upstream", Package: "basens", Revision: 1}
	pr, err := e.Clone(ctx, "down", revision.Key{Package: "ns1", Workspace: "ws1"}, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kf := kptfileOf(t, files(t, pr))
	if kf.Upstream.Git.Repo != "upstream" || kf.UpstreamLock.Git.Repo != "upstream" {
		t.Errorf("repo %q / %q, want the repository name without a URLer", kf.Upstream.Git.Repo, kf.UpstreamLock.Git.Repo)
	}
	if pc := get(t, files(t, pr), engine.PackageContextFile); !strings.Contains(pc, "name: example") {
		t.Errorf("package-context regenerated without a Deployer:\n%s", pc)
	}
}

func TestCloneRefusals(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			e, _ := cloneSetup(t, b, fakePipeline{})
			key := revision.Key{Package: "edge/istio", Workspace: "ws1"}
			clone := func(src engine.CloneSource, opts engine.CloneOptions) error {
				_, err := e.Clone(ctx, deployRepo, key, src, opts)
				return err
			}
			placeholder := revision.Key{Repository: repoName, Package: "net/istio", Revision: revision.Placeholder}
			err := clone(engine.CloneSource{Revision: &placeholder}, engine.CloneOptions{})
			var pe *engine.PlaceholderError
			if !errors.As(err, &pe) || !errors.Is(err, repository.ErrInvalidInput) {
				t.Errorf("placeholder: %v", err)
			}
			draft := revision.Key{Repository: repoName, Package: "net/istio", Workspace: "ws2"}
			if err := clone(engine.CloneSource{Revision: &draft}, engine.CloneOptions{}); !errors.Is(err, repository.ErrInvalidInput) || errors.As(err, &pe) {
				t.Errorf("draft source: %v", err)
			}
			missing := revision.Key{Repository: repoName, Package: "net/nope", Revision: 1}
			if err := clone(engine.CloneSource{Revision: &missing}, engine.CloneOptions{}); !errors.Is(err, repository.ErrNotFound) {
				t.Errorf("missing source: %v", err)
			}
			unknown := revision.Key{Repository: "nope", Package: "net/istio", Revision: 1}
			if err := clone(engine.CloneSource{Revision: &unknown}, engine.CloneOptions{}); !errors.Is(err, repository.ErrNotFound) {
				t.Errorf("unknown source repository: %v", err)
			}
			v1 := revision.Key{Repository: repoName, Package: "net/istio", Revision: 1}
			git := &engine.GitUpstream{Repo: "https://example.com/x.git", Directory: "x", Ref: "v1"}
			for name, src := range map[string]engine.CloneSource{"no source": {}, "two sources": {Revision: &v1, Git: git}, "git without fetcher": {Git: git}} {
				if err := clone(src, engine.CloneOptions{}); !errors.Is(err, repository.ErrInvalidInput) {
					t.Errorf("%s: %v", name, err)
				}
			}
			// Into an existing package: use copy. Also into the source's
			// own repository.
			if err := clone(engine.CloneSource{Revision: &v1}, engine.CloneOptions{}); err != nil {
				t.Fatal(err)
			}
			err = clone(engine.CloneSource{Revision: &v1}, engine.CloneOptions{})
			if !errors.Is(err, repository.ErrAlreadyExists) || !strings.Contains(err.Error(), "copy") {
				t.Errorf("existing package: %v", err)
			}
			var ee *engine.PackageExistsError
			if !errors.As(err, &ee) || ee.Op != "clone" || ee.Repository != deployRepo || ee.Package != "edge/istio" {
				t.Errorf("existing package: %#v", ee)
			}
			_, err = e.Clone(ctx, repoName, revision.Key{Package: "net/istio", Workspace: "ws9"}, engine.CloneSource{Revision: &v1}, engine.CloneOptions{})
			if !errors.Is(err, repository.ErrAlreadyExists) {
				t.Errorf("clone onto the source package: %v", err)
			}
			// Init of an existing package is refused the same way.
			_, err = e.Init(ctx, repoName, revision.Key{Package: "net/istio", Workspace: "ws9"}, engine.InitOptions{})
			if !errors.As(err, &ee) || ee.Op != "init" || ee.Repository != repoName || ee.Package != "net/istio" || !errors.Is(err, repository.ErrAlreadyExists) {
				t.Errorf("init of an existing package: %v", err)
			}
			if _, err := e.Clone(ctx, deployRepo, revision.Key{Package: "edge/istio/sub", Workspace: "ws1"}, engine.CloneSource{Revision: &v1}, engine.CloneOptions{}); !errors.Is(err, repository.ErrInvalidInput) {
				t.Errorf("nested package: %v", err)
			}
		})
	}
}

// failingFetcher returns files that make fakePipeline fail.
type failingFetcher struct{}

func (failingFetcher) Fetch(context.Context, engine.GitUpstream) (revision.Files, string, error) {
	return revision.MustFiles(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: x\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fail\n"}), "abc", nil
}

func TestCloneAtomic(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			r := b.open(t, repoName)
			e := newEngine(t, r, fakePipeline{})
			_, err := e.Clone(ctx, repoName, revision.Key{Package: "x", Workspace: "ws1"},
				engine.CloneSource{Git: &engine.GitUpstream{Repo: "https://example.com/x.git", Ref: "main"}},
				engine.CloneOptions{Fetcher: failingFetcher{}})
			var re *pipeline.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("err %v, want a *pipeline.RenderError", err)
			}
			revs, err := r.List(ctx, repository.ListOptions{})
			if err != nil || len(revs) != 0 {
				t.Fatalf("after a failed clone: %d revisions, %v", len(revs), err)
			}
			// A bad upstream Kptfile is refused before anything is written.
			_, err = e.Clone(ctx, repoName, revision.Key{Package: "x", Workspace: "ws1"},
				engine.CloneSource{Git: &engine.GitUpstream{Repo: "https://example.com/x.git", Ref: "main"}},
				engine.CloneOptions{Fetcher: fetcherFunc(func() revision.Files {
					return revision.MustFiles(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1alpha1\nkind: Kptfile\n"})
				})})
			if !errors.Is(err, repository.ErrInvalidInput) {
				t.Fatalf("bad upstream Kptfile: %v", err)
			}
			if revs, _ := r.List(ctx, repository.ListOptions{}); len(revs) != 0 {
				t.Fatalf("after a refused clone: %d revisions", len(revs))
			}
		})
	}
}

type fetcherFunc func() revision.Files

func (f fetcherFunc) Fetch(context.Context, engine.GitUpstream) (revision.Files, string, error) {
	return f(), "abc", nil
}

func TestDeleteRefusesClonedUpstream(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			e, _ := cloneSetup(t, b, nil)
			v1 := revision.Key{Package: "net/istio", Revision: 1}
			src := v1
			src.Repository = repoName
			key := revision.Key{Package: "edge/istio", Workspace: "ws1"}
			if _, err := e.Clone(ctx, deployRepo, key, engine.CloneSource{Revision: &src}, engine.CloneOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.ProposeDelete(ctx, repoName, v1); err != nil {
				t.Fatal(err)
			}
			err := e.Delete(ctx, repoName, v1)
			var re *engine.ReferencedError
			if !errors.As(err, &re) || !errors.Is(err, repository.ErrImmutable) {
				t.Fatalf("delete of a cloned upstream: %v, want a *ReferencedError", err)
			}
			found := false
			for _, k := range re.By {
				found = found || (k.Repository == deployRepo && k.Package == key.Package) || (k.Repository == "" && k.Package == key.Package)
			}
			if !found {
				t.Fatalf("ReferencedError.By %v does not name the clone", re.By)
			}
			if err := e.Delete(ctx, deployRepo, key); err != nil {
				t.Fatal(err)
			}
			if err := e.Delete(ctx, repoName, v1); err != nil {
				t.Fatalf("delete after the clone went: %v", err)
			}
		})
	}
}

// gitCLI runs the git CLI in dir and returns its trimmed output.
func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestCloneFromGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not on PATH")
	}
	ctx := context.Background()
	bare := filepath.Join(t.TempDir(), "upstream.git")
	gitCLI(t, "", "init", "--quiet", "--bare", "-b", "main", bare)
	work := t.TempDir()
	gitCLI(t, work, "init", "--quiet", "-b", "main")
	if err := os.MkdirAll(filepath.Join(work, "pkgs/basens"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(work, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pkgs/basens/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: basens\n# a comment\n")
	write("pkgs/basens/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: example\n")
	write("README.md", "not part of the package\n")
	gitCLI(t, work, "add", "-A")
	gitCLI(t, work, "commit", "--quiet", "-m", "v1")
	gitCLI(t, work, "tag", "pkgs/basens/v1")
	v1 := gitCLI(t, work, "rev-parse", "HEAD")
	write("pkgs/basens/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: example2\n")
	gitCLI(t, work, "commit", "--quiet", "-am", "v2")
	head := gitCLI(t, work, "rev-parse", "HEAD")
	gitCLI(t, work, "push", "--quiet", bare, "main", "pkgs/basens/v1")

	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			r := b.open(t, deployRepo)
			e, err := engine.New(&engine.Options{Repositories: cloneRepos{Repos: engine.Repos{deployRepo: r}, deploy: map[string]bool{deployRepo: true}}})
			if err != nil {
				t.Fatal(err)
			}
			opts := engine.CloneOptions{Fetcher: &gitrepo.Fetcher{}}
			for _, tc := range []struct{ ref, commit, ns string }{{"v1", v1, "example"}, {"main", head, "example2"}} {
				key := revision.Key{Package: "ns-" + tc.ref, Workspace: "ws1"}
				pr, err := e.Clone(ctx, deployRepo, key,
					engine.CloneSource{Git: &engine.GitUpstream{Repo: bare, Directory: "pkgs/basens", Ref: tc.ref}}, opts)
				if err != nil {
					t.Fatalf("%s: %v", tc.ref, err)
				}
				f := files(t, pr)
				if got := f.Paths(); strings.Join(got, ",") != "Kptfile,ns.yaml,package-context.yaml" {
					t.Errorf("%s: files %v", tc.ref, got)
				}
				kf := kptfileOf(t, f)
				if kf.Metadata.Name != key.Package {
					t.Errorf("%s: name %q", tc.ref, kf.Metadata.Name)
				}
				wantGit := revision.Git{Repo: bare, Directory: "pkgs/basens", Ref: tc.ref}
				if *kf.Upstream.Git != wantGit || kf.Upstream.UpdateStrategy != "" {
					t.Errorf("%s: upstream %+v", tc.ref, kf.Upstream)
				}
				wantLock := revision.GitLock{Repo: bare, Directory: "pkgs/basens", Ref: tc.ref, Commit: tc.commit}
				if *kf.UpstreamLock.Git != wantLock {
					t.Errorf("%s: lock %+v, want %+v", tc.ref, kf.UpstreamLock.Git, wantLock)
				}
				if kfText := get(t, f, revision.KptfileName); !strings.Contains(kfText, "# a comment") {
					t.Errorf("%s: upstream Kptfile comment lost:\n%s", tc.ref, kfText)
				}
				ns := get(t, f, "ns.yaml")
				if !strings.Contains(ns, "upstream-identifier: '|Namespace|default|"+tc.ns+"'") {
					t.Errorf("%s: ns.yaml:\n%s", tc.ref, ns)
				}
				if pc := get(t, f, engine.PackageContextFile); !strings.Contains(pc, "name: "+key.Package) {
					t.Errorf("%s: package-context:\n%s", tc.ref, pc)
				}
			}
			// porchctl sends the directory with a leading slash; the
			// Kptfile records it without, as Porch does, and an asked
			// strategy is written.
			slashed := opts
			slashed.Strategy = revision.FastForward
			pr, err := e.Clone(ctx, deployRepo, revision.Key{Package: "ns-slash", Workspace: "ws1"},
				engine.CloneSource{Git: &engine.GitUpstream{Repo: bare, Directory: "/pkgs/basens", Ref: "v1"}}, slashed)
			if err != nil {
				t.Fatal(err)
			}
			kf := kptfileOf(t, files(t, pr))
			if kf.Upstream.Git.Directory != "pkgs/basens" || kf.UpstreamLock.Git.Directory != "pkgs/basens" || kf.Upstream.UpdateStrategy != revision.FastForward {
				t.Errorf("leading slash: upstream %+v %+v, lock %+v", kf.Upstream, kf.Upstream.Git, kf.UpstreamLock.Git)
			}
			_, err = e.Clone(ctx, deployRepo, revision.Key{Package: "ns-x", Workspace: "ws1"},
				engine.CloneSource{Git: &engine.GitUpstream{Repo: bare, Directory: "pkgs/basens", Ref: "v9"}}, opts)
			if !errors.Is(err, repository.ErrNotFound) {
				t.Errorf("unknown ref: %v", err)
			}
		})
	}
}

// BenchmarkClone clones a published 200-resource package between two
// memrepo repositories.
func BenchmarkClone(b *testing.B) {
	ctx := context.Background()
	up, down := memrepo.New("up", nil), memrepo.New("down", nil)
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"up": up, "down": down}})
	if err != nil {
		b.Fatal(err)
	}
	m := map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: big\n"}
	for i := range 200 {
		m[fmt.Sprintf("cm-%03d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%03d\ndata:\n  k: v\n", i)
	}
	d, err := up.CreateDraft(ctx, revision.Key{Package: "big", Workspace: "ws1"}, repository.CreateDraftOptions{Files: revision.MustFiles(m)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
		b.Fatal(err)
	}
	key := revision.Key{Package: "big", Workspace: "ws1"}
	if _, err := e.Propose(ctx, "up", key); err != nil {
		b.Fatal(err)
	}
	if _, err := e.Approve(ctx, "up", key); err != nil {
		b.Fatal(err)
	}
	src := revision.Key{Repository: "up", Package: "big", Revision: 1}
	for i := 0; b.Loop(); i++ {
		if _, err := e.Clone(ctx, "down", revision.Key{Package: fmt.Sprintf("c%d", i), Workspace: "ws1"},
			engine.CloneSource{Revision: &src}, engine.CloneOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCloneSameRepository clones within one repository, the source key
// naming no repository.
func TestCloneSameRepository(t *testing.T) {
	ctx := context.Background()
	e, v1 := cloneSetup(t, backends[0], nil)
	src := revision.Key{Package: "net/istio", Revision: 1}
	pr, err := e.Clone(ctx, repoName, revision.Key{Package: "net/istio-copy", Workspace: "ws1"}, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if kf := kptfileOf(t, files(t, pr)); kf.UpstreamLock.Git.Commit != v1.Meta().Commit || kf.Upstream.Git.Repo != upstreamURL {
		t.Errorf("lock %+v", kf.UpstreamLock.Git)
	}
}

// Repos reads Spec.Deployment from repositories that report their spec:
// a clone into a deployment repository gets the package context, a clone
// elsewhere does not.
func TestReposDeployment(t *testing.T) {
	ctx := context.Background()
	open := func(name string, deployment bool) repository.Repository {
		r, err := gitrepo.Open(ctx, repository.Spec{Name: name, Type: repository.TypeGit, Deployment: deployment,
			Git: &repository.GitSpec{Repo: gitrepo.MemoryURL, CreateBranch: true}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	repos := engine.Repos{"blueprints": memrepo.New("blueprints", nil), "deploy": open("deploy", true), "plain": open("plain", false)}
	if !repos.Deployment("deploy") || repos.Deployment("plain") || repos.Deployment("blueprints") || repos.Deployment("missing") {
		t.Fatal("Repos.Deployment does not follow the specs")
	}
	e, err := engine.New(&engine.Options{Repositories: repos})
	if err != nil {
		t.Fatal(err)
	}
	bp := revision.Key{Package: "app", Workspace: "v1"}
	if _, err := e.Init(ctx, "blueprints", bp, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Propose(ctx, "blueprints", bp); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Approve(ctx, "blueprints", bp); err != nil {
		t.Fatal(err)
	}
	src := revision.Key{Repository: "blueprints", Package: "app", Revision: 1}
	for repo, want := range map[string]bool{"deploy": true, "plain": false} {
		pr, err := e.Clone(ctx, repo, revision.Key{Package: "app-" + repo, Workspace: "ws"}, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pc, _ := files(t, pr).Get(engine.PackageContextFile)
		if got := strings.Contains(string(pc), "name: app-"+repo); got != want {
			t.Errorf("clone into %s: package context for the clone %v, want %v:\n%s", repo, got, want, pc)
		}
	}
}

// TestReposRecordsGitURL: a clone from a git repository on disk held in
// an engine.Repos records the repository's URL (its path) as the
// upstream repo, not the name it has in Repos; discovery then finds the
// clone's upstream by that URL.
func TestReposRecordsGitURL(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "blueprints.git")
	if _, err := git.PlainInit(dir, true); err != nil {
		t.Fatal(err)
	}
	up, err := gitrepo.Open(ctx, repository.Spec{Name: "blueprints", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir, CreateBranch: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	down := memrepo.New("down", nil)
	repos := engine.Repos{"blueprints": up, "down": down}
	if got := repos.URL("blueprints"); got != dir {
		t.Fatalf("Repos.URL(blueprints) = %q, want %q", got, dir)
	}
	if got := repos.URL("down"); got != "" {
		t.Fatalf("Repos.URL of a memrepo = %q, want none", got)
	}
	e, err := engine.New(&engine.Options{Repositories: repos})
	if err != nil {
		t.Fatal(err)
	}
	key := revision.Key{Package: "app", Workspace: "v1"}
	if _, err := e.Init(ctx, "blueprints", key, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Propose(ctx, "blueprints", key); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Approve(ctx, "blueprints", key); err != nil {
		t.Fatal(err)
	}
	src := revision.Key{Repository: "blueprints", Package: "app", Revision: 1}
	pr, err := e.Clone(ctx, "down", revision.Key{Package: "app", Workspace: "ws1"}, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kf := kptfileOf(t, files(t, pr))
	if kf.Upstream.Git.Repo != dir || kf.UpstreamLock.Git.Repo != dir {
		t.Fatalf("clone records repo %q / %q, want the URL %q", kf.Upstream.Git.Repo, kf.UpstreamLock.Git.Repo, dir)
	}
}
