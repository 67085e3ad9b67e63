package engine_test

// Porch's API end-to-end scenarios (test/e2e/api), ported to the engine
// as TestE2E* (here and in e2e_*_test.go). Each scenario runs on every
// backend of e2eBackends: memrepo; gitrepo on mem://; and gitrepo over
// smart HTTP, a bare repository served by git http-backend on loopback
// (repotest.NewGitServer), which the git CLI inspects as an independent
// witness (refs, commit messages, trees, git fsck).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
)

// e2eRepo is one repository of a scenario, with what the backend knows
// about its storage.
type e2eRepo struct {
	repository.Repository
	// reopen returns another handle on the same storage, as another
	// process would open it (memrepo: the same repository).
	reopen func(t *testing.T) repository.Repository
	// bare is the bare git repository on disk, for the git CLI; "" when
	// there is none.
	bare string
	// url is the git URL of a served repository, "" otherwise.
	url string
}

// git runs the git CLI in r's bare repository and returns its trimmed
// output.
func (r *e2eRepo) git(t *testing.T, args ...string) string {
	t.Helper()
	if r.bare == "" {
		t.Fatal("git witness on a backend without a bare repository")
	}
	return e2eGit(t, r.bare, args...)
}

// refs returns r's refs as "name commit" lines, sorted, or nil without a
// bare repository.
func (r *e2eRepo) refs(t *testing.T) []string {
	t.Helper()
	if r.bare == "" {
		return nil
	}
	out := r.git(t, "for-each-ref", "--format=%(refname) %(objectname)")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// e2eSpec is what a scenario may ask of a repository's spec.
type e2eSpec struct {
	Branch, Directory string
}

// e2eBackend opens the repositories of a scenario on one backend.
type e2eBackend struct {
	name string
	git  bool // gitrepo: has a directory and a branch in its spec
	// n is the number of goroutines of the race scenarios.
	n int
	// poll is how often a watch polls (gitrepo's Options.PollInterval).
	poll time.Duration
	open func(t *testing.T, name string, spec e2eSpec) *e2eRepo
}

var e2eBackends = []e2eBackend{
	{name: "memrepo", n: 8, poll: 10 * time.Millisecond, open: func(t *testing.T, name string, spec e2eSpec) *e2eRepo {
		r := memrepo.New(name, &memrepo.Options{Branch: spec.Branch})
		t.Cleanup(func() { r.Close() })
		return &e2eRepo{Repository: r, reopen: func(*testing.T) repository.Repository { return r }}
	}},
	{name: "gitrepo-mem", git: true, n: 8, poll: 20 * time.Millisecond, open: func(t *testing.T, name string, spec e2eSpec) *e2eRepo {
		st := memory.NewStorage()
		s := e2eGitSpec(name, gitrepo.MemoryURL, spec)
		open := func(t *testing.T) repository.Repository {
			return e2eOpenGit(t, s, &gitrepo.Options{Storage: st, PollInterval: 20 * time.Millisecond})
		}
		return &e2eRepo{Repository: open(t), reopen: open}
	}},
	// Each poll of a watch over HTTP is an ls-remote, a git process on
	// the server: poll gently.
	{name: "gitrepo-http", git: true, n: 3, poll: 200 * time.Millisecond, open: func(t *testing.T, name string, spec e2eSpec) *e2eRepo {
		srv := repotest.NewGitServer(t, t.TempDir(), nil)
		url := srv.InitBare(t, name+".git")
		s := e2eGitSpec(name, url, spec)
		open := func(t *testing.T) repository.Repository {
			return e2eOpenGit(t, s, &gitrepo.Options{PollInterval: 200 * time.Millisecond})
		}
		return &e2eRepo{Repository: open(t), reopen: open, bare: filepath.Join(srv.Root, name+".git"), url: url}
	}},
}

func e2eGitSpec(name, url string, spec e2eSpec) repository.Spec {
	return repository.Spec{Name: name, Type: repository.TypeGit, Git: &repository.GitSpec{
		Repo: url, Branch: spec.Branch, Directory: spec.Directory, CreateBranch: true,
	}}
}

func e2eOpenGit(t *testing.T, spec repository.Spec, opts *gitrepo.Options) repository.Repository {
	t.Helper()
	r, err := gitrepo.Open(context.Background(), spec, opts)
	if err != nil {
		t.Fatalf("open %s: %v", spec.Git.Repo, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// e2eRun runs scenario on every backend, in parallel subtests of a
// parallel test: most of a scenario's time on gitrepo-http is spent
// waiting for git http-backend.
func e2eRun(t *testing.T, scenario func(t *testing.T, b e2eBackend)) {
	t.Helper()
	t.Parallel()
	for _, b := range e2eBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			scenario(t, b)
		})
	}
}

// e2eRepos adds Porch's repository facts to a fixed set: the git URL
// Clone records and which repositories are deployment repositories.
type e2eRepos struct {
	engine.Repos
	urls   map[string]string
	deploy map[string]bool
}

func (r e2eRepos) URL(name string) string      { return r.urls[name] }
func (r e2eRepos) Deployment(name string) bool { return r.deploy[name] }

// e2eEnv is a scenario's repositories and engine.
type e2eEnv struct {
	t     *testing.T
	b     e2eBackend
	repo  map[string]*e2eRepo
	repos e2eRepos
	e     *engine.Engine
}

// Porch's e2e repository names.
const (
	e2eTest       = "porch-test"
	e2eBlueprints = "test-blueprints"
	e2eDeploy     = "deployment"
)

// newE2E opens one fresh repository per name on b and an engine over them
// without a pipeline. e2eDeploy, when named, is a deployment repository.
func newE2E(t *testing.T, b e2eBackend, names ...string) *e2eEnv {
	t.Helper()
	env := &e2eEnv{t: t, b: b, repo: map[string]*e2eRepo{},
		repos: e2eRepos{Repos: engine.Repos{}, urls: map[string]string{}, deploy: map[string]bool{}}}
	for _, n := range names {
		env.add(n, e2eSpec{})
	}
	env.e = env.engine(nil)
	return env
}

// add opens a repository called name with spec.
func (env *e2eEnv) add(name string, spec e2eSpec) *e2eRepo {
	env.t.Helper()
	r := env.b.open(env.t, name, spec)
	env.repo[name] = r
	env.repos.Repos[name] = r.Repository
	if r.url != "" {
		env.repos.urls[name] = r.url
	}
	env.repos.deploy[name] = name == e2eDeploy
	return r
}

// engine returns a new engine over env's repositories with pipeline p.
func (env *e2eEnv) engine(p pipeline.Pipeline) *engine.Engine {
	env.t.Helper()
	e, err := engine.New(&engine.Options{Repositories: env.repos, Pipeline: p,
		AuthorName: "Test", AuthorEmail: "test@example.com"})
	if err != nil {
		env.t.Fatal(err)
	}
	return e
}

// reopened returns an env over new handles of env's repositories, as
// another process would see them.
func (env *e2eEnv) reopened() *e2eEnv {
	env.t.Helper()
	out := &e2eEnv{t: env.t, b: env.b, repo: map[string]*e2eRepo{},
		repos: e2eRepos{Repos: engine.Repos{}, urls: env.repos.urls, deploy: env.repos.deploy}}
	for n, r := range env.repo {
		rr := *r
		rr.Repository = r.reopen(env.t)
		out.repo[n] = &rr
		out.repos.Repos[n] = rr.Repository
	}
	out.e = out.engine(nil)
	return out
}

// upstreamRepo is what Clone records as the upstream repo of a clone
// from repository name.
func (env *e2eEnv) upstreamRepo(name string) string {
	if u := env.repos.urls[name]; u != "" {
		return u
	}
	return name
}

var e2eCtx = context.Background()

func e2eFiles(t testing.TB, pr revision.PackageRevision) revision.Files {
	t.Helper()
	f, err := pr.Files(e2eCtx)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func e2eKptfile(t *testing.T, f revision.Files) *revision.Kptfile {
	t.Helper()
	data, ok := f.Get(revision.KptfileName)
	if !ok {
		t.Fatalf("no Kptfile in %v", f.Paths())
	}
	kf, err := revision.ParseKptfile(data)
	if err != nil {
		t.Fatal(err)
	}
	return kf
}

func e2eFile(t *testing.T, f revision.Files, p string) string {
	t.Helper()
	data, ok := f.Get(p)
	if !ok {
		t.Fatalf("no %s in %v", p, f.Paths())
	}
	return string(data)
}

// e2eWith returns f with the files of m set.
func e2eWith(t *testing.T, f revision.Files, m map[string]string) revision.Files {
	t.Helper()
	for p, s := range m {
		var err error
		if f, err = f.With(p, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// mustGet reads key in repo, failing t when it is not there.
func (env *e2eEnv) mustGet(repo string, key revision.Key) revision.PackageRevision {
	env.t.Helper()
	pr, err := env.e.Get(e2eCtx, repo, key)
	if err != nil {
		env.t.Fatalf("get %s %s: %v", repo, key, err)
	}
	return pr
}

// gone checks that key selects nothing in repo.
func (env *e2eEnv) gone(repo string, key revision.Key) {
	env.t.Helper()
	if pr, err := env.e.Get(e2eCtx, repo, key); !errors.Is(err, repository.ErrNotFound) {
		env.t.Fatalf("get %s %s: %v (%v), want ErrNotFound", repo, key, err, pr)
	}
}

// list returns the keys of repo's revisions of pkg ("" for all) as
// strings, in List order.
func (env *e2eEnv) list(repo, pkg string) []string {
	env.t.Helper()
	revs, err := env.repos.Repos[repo].List(e2eCtx, repository.ListOptions{Package: pkg})
	if err != nil {
		env.t.Fatal(err)
	}
	var out []string
	for _, pr := range revs {
		m := pr.Meta()
		out = append(out, fmt.Sprintf("%s@%s/%d:%s", m.Key.Package, m.Key.Workspace, m.Key.Revision, m.Lifecycle))
	}
	return out
}

// version returns repo's repository.Version.
func (env *e2eEnv) version(repo string) string {
	env.t.Helper()
	v, err := repository.Version(e2eCtx, env.repos.Repos[repo])
	if err != nil {
		env.t.Fatal(err)
	}
	return v
}

// init creates key in repo with Init and Porch's default description.
func (env *e2eEnv) init(repo string, key revision.Key, extra map[string]string) revision.PackageRevision {
	env.t.Helper()
	pr, err := env.e.Init(e2eCtx, repo, key, engine.InitOptions{Description: key.Package + " description"})
	if err != nil {
		env.t.Fatalf("init %s: %v", key, err)
	}
	if len(extra) > 0 {
		if pr, err = env.e.Update(e2eCtx, repo, key, e2eWith(env.t, e2eFiles(env.t, pr), extra), engine.UpdateOptions{}); err != nil {
			env.t.Fatalf("update %s: %v", key, err)
		}
	}
	return pr
}

// publish proposes and approves the draft key in repo.
func (env *e2eEnv) publish(repo string, key revision.Key) revision.PackageRevision {
	env.t.Helper()
	pr, err := env.e.Propose(e2eCtx, repo, key)
	if err != nil {
		env.t.Fatalf("propose %s: %v", key, err)
	}
	if pr.Meta().Lifecycle != revision.LifecycleProposed {
		env.t.Fatalf("proposed %s is %s", key, pr.Meta().Lifecycle)
	}
	if pr, err = env.e.Approve(e2eCtx, repo, key); err != nil {
		env.t.Fatalf("approve %s: %v", key, err)
	}
	if m := pr.Meta(); m.Lifecycle != revision.LifecyclePublished || m.Key.Revision < 1 || m.Key.Workspace != key.Workspace {
		env.t.Fatalf("approved %s is %s", m.Key, m.Lifecycle)
	}
	return pr
}

// remove proposes the deletion of the published key and deletes it.
func (env *e2eEnv) remove(repo string, key revision.Key) {
	env.t.Helper()
	if _, err := env.e.ProposeDelete(e2eCtx, repo, key); err != nil {
		env.t.Fatalf("propose delete %s: %v", key, err)
	}
	if err := env.e.Delete(e2eCtx, repo, key); err != nil {
		env.t.Fatalf("delete %s: %v", key, err)
	}
}

// Resources of the blueprints, after Porch's test-blueprints.
const (
	e2eNamespace = `apiVersion: v1
kind: Namespace
metadata:
  name: example
`
	e2eQuota = `apiVersion: v1
kind: ResourceQuota
metadata:
  name: default
  namespace: example
spec:
  hard:
    cpu: "40"
    memory: 40G
`
	e2eBucket = `apiVersion: storage.cnrm.cloud.google.com/v1beta1
kind: StorageBucket
metadata:
  name: blueprints-project-bucket2
  namespace: config-control
spec:
  storageClass: standard
`
	e2eLocalConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: local
  namespace: example
data:
  key: local-value
`
)

// blueprints publishes basens v1 (a Namespace) and v2 (plus a
// ResourceQuota) in repo through the engine, and returns them.
func (env *e2eEnv) blueprints(repo string) (v1, v2 revision.PackageRevision) {
	env.t.Helper()
	k1 := revision.Key{Package: "basens", Workspace: "v1"}
	env.init(repo, k1, map[string]string{"namespace.yaml": e2eNamespace})
	v1 = env.publish(repo, k1)
	k2 := revision.Key{Package: "basens", Workspace: "v2"}
	pr, err := env.e.Copy(e2eCtx, repo, v1.Meta().Key, k2.Workspace, engine.CopyOptions{})
	if err != nil {
		env.t.Fatal(err)
	}
	if _, err := env.e.Update(e2eCtx, repo, k2, e2eWith(env.t, e2eFiles(env.t, pr), map[string]string{"resourcequota.yaml": e2eQuota}), engine.UpdateOptions{}); err != nil {
		env.t.Fatal(err)
	}
	v2 = env.publish(repo, k2)
	if v1.Meta().Key.Revision != 1 || v2.Meta().Key.Revision != 2 {
		env.t.Fatalf("blueprints: basens revisions %d and %d", v1.Meta().Key.Revision, v2.Meta().Key.Revision)
	}
	return v1, v2
}

// e2eGit runs the git CLI in dir, isolated from the user's configuration.
func e2eGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// e2eGitUpstream is a repository the engine does not manage, written by
// the git CLI in Porch's layout like Porch's test-blueprints (basens v1
// and v2, bucket v1, a release tag without a slash) and served over HTTP.
type e2eGitUpstream struct {
	url, bare string
}

func newE2EGitUpstream(t *testing.T) e2eGitUpstream {
	t.Helper()
	srv := repotest.NewGitServer(t, t.TempDir(), nil)
	url := srv.InitBare(t, "test-blueprints.git")
	work := t.TempDir()
	e2eGit(t, work, "init", "--quiet")
	e2eGit(t, work, "symbolic-ref", "HEAD", "refs/heads/main")
	write := func(files map[string]string) {
		t.Helper()
		for p, s := range files {
			p = filepath.Join(work, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		e2eGit(t, work, "add", "-A")
	}
	kptfile := func(name string) string {
		return "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name +
			"\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ninfo:\n  description: " + name + " blueprint\n"
	}
	write(map[string]string{"README.md": "test blueprints\n",
		"basens/Kptfile": kptfile("basens"), "basens/namespace.yaml": e2eNamespace,
		"bucket/Kptfile": kptfile("bucket"), "bucket/bucket.yaml": e2eBucket})
	e2eGit(t, work, "commit", "--quiet", "-m", "basens and bucket v1")
	e2eGit(t, work, "tag", "basens/v1")
	e2eGit(t, work, "tag", "bucket/v1")
	e2eGit(t, work, "tag", "v1.0")
	write(map[string]string{"basens/resourcequota.yaml": e2eQuota})
	e2eGit(t, work, "commit", "--quiet", "-m", "basens v2")
	e2eGit(t, work, "tag", "basens/v2")
	e2eGit(t, work, "push", "--quiet", "--tags", url, "main")
	return e2eGitUpstream{url: url, bare: filepath.Join(srv.Root, "test-blueprints.git")}
}

// TestE2EInit: TestInitEmptyPackage and TestInitTaskPackage.
func TestE2EInit(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eTest)
		r := env.repo[e2eTest]

		empty := revision.Key{Package: "empty-package", Workspace: "workspace"}
		pr, err := env.e.Init(e2eCtx, e2eTest, empty, engine.InitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := pr.Meta()
		if want := (revision.Key{Repository: e2eTest, Package: "empty-package", Workspace: "workspace"}); m.Key != want || m.Lifecycle != revision.LifecycleDraft {
			t.Fatalf("init: %s %s, want %s Draft", m.Key, m.Lifecycle, want)
		}
		f := e2eFiles(t, pr)
		if got := f.Paths(); !slices.Equal(got, []string{"Kptfile", "README.md", "package-context.yaml"}) {
			t.Fatalf("files %v", got)
		}
		kf := e2eKptfile(t, f)
		if kf.Metadata.Name != "empty-package" || kf.Info == nil || kf.Info.Description != "sample description" ||
			kf.Metadata.Annotations["config.kubernetes.io/local-config"] != "true" {
			t.Fatalf("Kptfile:\n%s", e2eFile(t, f, "Kptfile"))
		}
		if pc := e2eFile(t, f, "package-context.yaml"); !strings.Contains(pc, "name: kptfile.kpt.dev") {
			t.Fatalf("package-context.yaml:\n%s", pc)
		}

		task := revision.Key{Package: "new-package", Workspace: "workspace"}
		opts := engine.InitOptions{Description: "this is a test", Keywords: []string{"test"}, Site: "http://kpt.dev/new-package"}
		if _, err := env.e.Init(e2eCtx, e2eTest, task, opts); err != nil {
			t.Fatal(err)
		}
		got := env.mustGet(e2eTest, task)
		kf = e2eKptfile(t, e2eFiles(t, got))
		if kf.Metadata.Name != "new-package" || kf.Info.Description != opts.Description || kf.Info.Site != opts.Site ||
			!slices.Equal(kf.Info.Keywords, opts.Keywords) {
			t.Fatalf("Kptfile info %+v", kf.Info)
		}
		if r.bare != "" {
			// The draft is Porch's branch, with Porch's commit message, and
			// holds exactly the package.
			ref := "refs/heads/drafts/new-package/workspace"
			if msg := r.git(t, "log", "-1", "--format=%B", ref); !strings.HasPrefix(msg, engine.MessageInit+"\n") ||
				!strings.Contains(msg, `kpt:{"package":"new-package","workspaceName":"workspace","revision":"0",`+
					`"task":{"type":"init","init":{"description":"this is a test","keywords":["test"],"site":"http://kpt.dev/new-package"}}}`) {
				t.Fatalf("draft commit message:\n%s", msg)
			}
			if seen, want := r.git(t, "show", ref+":new-package/Kptfile"), e2eFile(t, e2eFiles(t, got), "Kptfile"); seen != strings.TrimSpace(want) {
				t.Fatalf("git sees Kptfile\n%s\nwant\n%s", seen, want)
			}
			// An edit is committed with Porch's render message.
			if _, err := env.e.Update(e2eCtx, e2eTest, task, e2eWith(t, e2eFiles(t, got), map[string]string{"local.yaml": e2eLocalConfigMap}), engine.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if msg := r.git(t, "log", "-1", "--format=%B", ref); !strings.HasPrefix(msg, engine.MessageRender+"\n") ||
				!strings.Contains(msg, `"task":{"type":"init"`) {
				t.Fatalf("edit commit message:\n%s", msg)
			}
			got = env.mustGet(e2eTest, task)
		}

		// Refusals change nothing.
		before := env.version(e2eTest)
		for _, tc := range []struct {
			key  revision.Key
			want error
		}{
			{revision.Key{Package: "new-package", Workspace: "other"}, repository.ErrAlreadyExists},
			{revision.Key{Package: "new-package/sub", Workspace: "workspace"}, repository.ErrInvalidInput},
			{revision.Key{Package: "Bad_Name", Workspace: "workspace"}, repository.ErrInvalidInput},
			{revision.Key{Package: "fine", Workspace: "Bad_WS"}, repository.ErrInvalidInput},
		} {
			if _, err := env.e.Init(e2eCtx, e2eTest, tc.key, engine.InitOptions{}); !errors.Is(err, tc.want) {
				t.Errorf("init %s: %v, want %v", tc.key, err, tc.want)
			}
		}
		if _, err := env.e.Init(e2eCtx, "no-such-repo", empty, engine.InitOptions{}); !errors.Is(err, repository.ErrNotFound) {
			t.Errorf("init in an unknown repository: %v", err)
		}
		if after := env.version(e2eTest); after != before {
			t.Errorf("refused inits changed the repository")
		}
	})
}

// TestE2ECloneFromUpstream: TestCloneFromUpstream and
// TestCloneIntoDeploymentRepository, cloning from a registered repository.
func TestE2ECloneFromUpstream(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eBlueprints, e2eTest, e2eDeploy)
		v1, _ := env.blueprints(e2eBlueprints)

		placeholder := revision.Key{Repository: e2eBlueprints, Package: "basens", Revision: revision.Placeholder}
		env.mustGet(e2eBlueprints, placeholder)
		key := revision.Key{Package: "istions", Workspace: "workspace"}
		_, err := env.e.Clone(e2eCtx, e2eTest, key, engine.CloneSource{Revision: &placeholder}, engine.CloneOptions{})
		var pe *engine.PlaceholderError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "placeholder package revision") {
			t.Fatalf("clone from the placeholder: %v", err)
		}

		src := revision.Key{Repository: e2eBlueprints, Package: "basens", Revision: 1}
		pr, err := env.e.Clone(e2eCtx, e2eTest, key, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if m := pr.Meta(); m.Lifecycle != revision.LifecycleDraft || m.Key.Package != "istions" {
			t.Fatalf("clone: %s %s", m.Key, m.Lifecycle)
		}
		f := e2eFiles(t, pr)
		kf := e2eKptfile(t, f)
		repoURL := env.upstreamRepo(e2eBlueprints)
		wantUp := revision.Git{Repo: repoURL, Directory: "basens", Ref: "basens/v1"}
		wantLock := revision.GitLock{Repo: repoURL, Directory: "basens", Ref: "basens/v1", Commit: v1.Meta().Commit}
		if kf.Metadata.Name != "istions" || kf.Upstream == nil || kf.Upstream.Type != revision.GitOrigin || *kf.Upstream.Git != wantUp ||
			kf.UpstreamLock == nil || kf.UpstreamLock.Type != revision.GitOrigin || *kf.UpstreamLock.Git != wantLock || wantLock.Commit == "" {
			t.Fatalf("Kptfile:\n%s\nwant upstream %+v lock %+v", e2eFile(t, f, "Kptfile"), wantUp, wantLock)
		}
		if up := env.repo[e2eBlueprints]; up.bare != "" {
			// The lock names the commit git sees behind the tag.
			if c := up.git(t, "rev-parse", "refs/tags/basens/v1^{commit}"); c != wantLock.Commit {
				t.Fatalf("lock commit %s, git says basens/v1 is %s", wantLock.Commit, c)
			}
		}
		if ns := e2eFile(t, f, "namespace.yaml"); !strings.Contains(ns, "internal.kpt.dev/upstream-identifier: '|Namespace|default|example'") {
			t.Fatalf("namespace.yaml has no merge key:\n%s", ns)
		}
		if pc := e2eFile(t, f, "package-context.yaml"); strings.Contains(pc, "name: istions") {
			t.Fatalf("package-context.yaml generated outside a deployment repository:\n%s", pc)
		}

		// Into a deployment repository, the package context names the
		// package.
		dk := revision.Key{Package: "istions-deploy", Workspace: "workspace"}
		dpr, err := env.e.Clone(e2eCtx, e2eDeploy, dk, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
		if err != nil {
			t.Fatal(err)
		}
		df := e2eFiles(t, dpr)
		if pc := e2eFile(t, df, engine.PackageContextFile); !strings.Contains(pc, "name: kptfile.kpt.dev") || !strings.Contains(pc, "  name: istions-deploy\n") {
			t.Fatalf("package-context.yaml:\n%s", pc)
		}
		if kf := e2eKptfile(t, df); *kf.Upstream.Git != wantUp || *kf.UpstreamLock.Git != wantLock {
			t.Fatalf("deployment clone: upstream %+v lock %+v", kf.Upstream.Git, kf.UpstreamLock.Git)
		}

		// A second clone into the package, or from a draft, is refused.
		if _, err := env.e.Clone(e2eCtx, e2eTest, revision.Key{Package: "istions", Workspace: "other"}, engine.CloneSource{Revision: &src}, engine.CloneOptions{}); !errors.Is(err, repository.ErrAlreadyExists) {
			t.Errorf("clone into an existing package: %v", err)
		}
		draft := revision.Key{Repository: e2eTest, Package: "istions", Workspace: "workspace"}
		if _, err := env.e.Clone(e2eCtx, e2eTest, revision.Key{Package: "from-draft", Workspace: "workspace"}, engine.CloneSource{Revision: &draft}, engine.CloneOptions{}); !errors.Is(err, repository.ErrInvalidInput) {
			t.Errorf("clone from a draft: %v", err)
		}
		// The clone publishes like any package.
		if got := env.publish(e2eTest, key).Meta().Key.Revision; got != 1 {
			t.Fatalf("published clone is revision %d", got)
		}
	})
}

// TestE2ECloneFromGit: TestGitRepository, TestCloneLeadingSlash and
// TestCreatePackageRevisionRollback, cloning from a git URL the engine does
// not manage.
func TestE2ECloneFromGit(t *testing.T) {
	up := newE2EGitUpstream(t)
	bucketCommit := e2eGit(t, up.bare, "rev-parse", "refs/tags/bucket/v1^{commit}")
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eTest)
		opts := engine.CloneOptions{Fetcher: &gitrepo.Fetcher{}}

		key := revision.Key{Package: "test-bucket", Workspace: "workspace"}
		pr, err := env.e.Clone(e2eCtx, e2eTest, key, engine.CloneSource{Git: &engine.GitUpstream{Repo: up.url, Directory: "bucket", Ref: "v1"}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		f := e2eFiles(t, pr)
		if bucket := e2eFile(t, f, "bucket.yaml"); !strings.Contains(bucket, "kind: StorageBucket") || !strings.Contains(bucket, "name: blueprints-project-bucket2") {
			t.Fatalf("bucket.yaml:\n%s", bucket)
		}
		kf := e2eKptfile(t, f)
		wantLock := revision.GitLock{Repo: up.url, Directory: "bucket", Ref: "v1", Commit: bucketCommit}
		if kf.Metadata.Name != "test-bucket" || *kf.UpstreamLock.Git != wantLock {
			t.Fatalf("Kptfile name %q lock %+v, want %+v", kf.Metadata.Name, kf.UpstreamLock.Git, wantLock)
		}

		// A directory with a leading slash works.
		slash := revision.Key{Package: "test-basens", Workspace: "workspace"}
		pr, err = env.e.Clone(e2eCtx, e2eTest, slash, engine.CloneSource{Git: &engine.GitUpstream{Repo: up.url, Directory: "/basens", Ref: "basens/v2"}}, opts)
		if err != nil {
			t.Fatalf("leading slash: %v", err)
		}
		if f := e2eFiles(t, pr); !f.Has("namespace.yaml") || !f.Has("resourcequota.yaml") || f.Has("README.md") {
			t.Fatalf("leading slash: files %v", f.Paths())
		}

		// A failed clone leaves nothing behind.
		refs, before := env.repo[e2eTest].refs(t), env.version(e2eTest)
		for _, gu := range []engine.GitUpstream{
			{Repo: up.url, Directory: "not-there", Ref: "main"},
			{Repo: up.url, Directory: "basens", Ref: "v9"},
			{Repo: up.url + "-missing", Directory: "basens", Ref: "v1"},
		} {
			k := revision.Key{Package: "rollback", Workspace: "workspace"}
			if _, err := env.e.Clone(e2eCtx, e2eTest, k, engine.CloneSource{Git: &gu}, opts); err == nil {
				t.Fatalf("clone from %+v succeeded", gu)
			}
			env.gone(e2eTest, k)
		}
		if got := env.list(e2eTest, "rollback"); len(got) != 0 {
			t.Fatalf("failed clones left %v", got)
		}
		if after := env.version(e2eTest); after != before || !slices.Equal(env.repo[e2eTest].refs(t), refs) {
			t.Fatalf("failed clones changed the repository")
		}
	})
}

// TestE2ECopy: TestEditPackageRevision.
func TestE2ECopy(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eTest)
		src := revision.Key{Package: "source", Workspace: "v1"}
		env.init(e2eTest, src, map[string]string{"namespace.yaml": e2eNamespace})

		// An unpublished source is refused, and so is the placeholder.
		if _, err := env.e.Copy(e2eCtx, e2eTest, src, "v2", engine.CopyOptions{}); !errors.Is(err, repository.ErrInvalidInput) {
			t.Fatalf("copy of a draft: %v", err)
		}
		v1 := env.publish(e2eTest, src)
		var pe *engine.PlaceholderError
		for _, k := range []revision.Key{{Package: "source", Revision: revision.Placeholder}, {Package: "source", Workspace: "main"}} {
			if _, err := env.e.Copy(e2eCtx, e2eTest, k, "v2", engine.CopyOptions{}); !errors.As(err, &pe) || !strings.Contains(err.Error(), "placeholder package revision") {
				t.Fatalf("copy of the placeholder %s: %v", k, err)
			}
		}
		pr, err := env.e.Copy(e2eCtx, e2eTest, v1.Meta().Key, "v2", engine.CopyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if m := pr.Meta(); m.Lifecycle != revision.LifecycleDraft || m.Key.Package != "source" || m.Key.Workspace != "v2" {
			t.Fatalf("copy: %s %s", m.Key, m.Lifecycle)
		}
		if !e2eFiles(t, pr).Equal(e2eFiles(t, v1)) {
			t.Fatalf("copy is not verbatim: %v", e2eFiles(t, pr).Paths())
		}
		if r := env.repo[e2eTest]; r.bare != "" {
			if msg := r.git(t, "log", "-1", "--format=%s", "refs/heads/drafts/source/v2"); msg != engine.MessageCopy {
				t.Fatalf("copy commit %q", msg)
			}
		}
		// Workspaces are unique in the package, published ones included.
		for _, ws := range []string{"v1", "v2"} {
			if _, err := env.e.Copy(e2eCtx, e2eTest, v1.Meta().Key, ws, engine.CopyOptions{}); !errors.Is(err, repository.ErrAlreadyExists) {
				t.Fatalf("copy to taken workspace %s: %v", ws, err)
			}
		}
		if got := env.publish(e2eTest, revision.Key{Package: "source", Workspace: "v2"}).Meta().Key.Revision; got != 2 {
			t.Fatalf("published copy is revision %d", got)
		}
		// A revision proposed for deletion can still be copied.
		if _, err := env.e.ProposeDelete(e2eCtx, e2eTest, v1.Meta().Key); err != nil {
			t.Fatal(err)
		}
		if _, err := env.e.Copy(e2eCtx, e2eTest, v1.Meta().Key, "v3", engine.CopyOptions{}); err != nil {
			t.Fatalf("copy of a revision proposed for deletion: %v", err)
		}
	})
}

// TestE2EUpgrade: TestPackageUpgrade.
func TestE2EUpgrade(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eBlueprints, e2eTest)
		v1, v2 := env.blueprints(e2eBlueprints)

		key := revision.Key{Package: "istions", Workspace: "workspace"}
		pr, err := env.e.Clone(e2eCtx, e2eTest, key, engine.CloneSource{Revision: &revision.Key{Repository: e2eBlueprints, Package: "basens", Revision: 1}}, engine.CloneOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.e.Update(e2eCtx, e2eTest, key, e2eWith(t, e2eFiles(t, pr), map[string]string{"local.yaml": e2eLocalConfigMap}), engine.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		local := env.publish(e2eTest, key)

		old := engine.Ref{Repository: e2eBlueprints, Key: v1.Meta().Key}
		next := engine.Ref{Repository: e2eBlueprints, Key: v2.Meta().Key}
		placeholder := revision.Key{Package: "basens", Revision: revision.Placeholder}
		var pe *engine.PlaceholderError
		if _, err := env.e.Upgrade(e2eCtx, e2eTest, local.Meta().Key, old, engine.Ref{Repository: e2eBlueprints, Key: placeholder}, "upgrade", engine.UpgradeOptions{}); !errors.As(err, &pe) {
			t.Fatalf("upgrade to the placeholder: %v", err)
		}
		if _, err := env.e.Upgrade(e2eCtx, e2eTest, revision.Key{Package: "istions", Revision: revision.Placeholder}, old, next, "upgrade", engine.UpgradeOptions{}); !errors.As(err, &pe) {
			t.Fatalf("upgrade of the placeholder: %v", err)
		}
		if _, err := env.e.Upgrade(e2eCtx, e2eTest, key, old, next, "upgrade", engine.UpgradeOptions{Strategy: revision.FastForward}); !errors.Is(err, engine.ErrLocalModified) {
			t.Fatalf("fast-forward over a local change: %v", err)
		}

		pr, err = env.e.Upgrade(e2eCtx, e2eTest, local.Meta().Key, old, next, "upgrade", engine.UpgradeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if m := pr.Meta(); m.Lifecycle != revision.LifecycleDraft || m.Key.Package != "istions" || m.Key.Workspace != "upgrade" {
			t.Fatalf("upgrade: %s %s", m.Key, m.Lifecycle)
		}
		f := e2eFiles(t, pr)
		for _, p := range []string{"resourcequota.yaml", "local.yaml", "namespace.yaml"} {
			if !f.Has(p) {
				t.Fatalf("upgraded package lacks %s: %v", p, f.Paths())
			}
		}
		if q := e2eFile(t, f, "resourcequota.yaml"); !strings.Contains(q, "upstream-identifier: '|ResourceQuota|example|default'") {
			t.Fatalf("resourcequota.yaml has no merge key:\n%s", q)
		}
		kf := e2eKptfile(t, f)
		repoURL := env.upstreamRepo(e2eBlueprints)
		wantLock := revision.GitLock{Repo: repoURL, Directory: "basens", Ref: "basens/v2", Commit: v2.Meta().Commit}
		if kf.Metadata.Name != "istions" || *kf.UpstreamLock.Git != wantLock || kf.Upstream.Git.Ref != "basens/v2" {
			t.Fatalf("Kptfile upstream %+v lock %+v, want %+v", kf.Upstream.Git, kf.UpstreamLock.Git, wantLock)
		}
		if r := env.repo[e2eTest]; r.bare != "" {
			if msg := r.git(t, "log", "-1", "--format=%s", "refs/heads/drafts/istions/upgrade"); msg != engine.MessageUpgrade {
				t.Fatalf("upgrade commit %q", msg)
			}
		}
		upgraded := env.publish(e2eTest, pr.Meta().Key)
		if got := upgraded.Meta().Key.Revision; got != 2 {
			t.Fatalf("published upgrade is revision %d", got)
		}

		// basens v3 removes the quota again: an upgrade to it removes it
		// from the clone, which never changed it, and keeps the local
		// ConfigMap.
		k3 := revision.Key{Package: "basens", Workspace: "v3"}
		if _, err := env.e.Copy(e2eCtx, e2eBlueprints, v2.Meta().Key, k3.Workspace, engine.CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := env.e.Update(e2eCtx, e2eBlueprints, k3, e2eFiles(t, v2).Without("resourcequota.yaml"), engine.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		v3 := env.publish(e2eBlueprints, k3)
		pr, err = env.e.Upgrade(e2eCtx, e2eTest, upgraded.Meta().Key, next, engine.Ref{Repository: e2eBlueprints, Key: v3.Meta().Key}, "upgrade-v3", engine.UpgradeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if f := e2eFiles(t, pr); f.Has("resourcequota.yaml") || !f.Has("local.yaml") || !f.Has("namespace.yaml") {
			t.Fatalf("upgrade to v3, which deletes resourcequota.yaml (unchanged locally): files %v", f.Paths())
		}
	})
}

// TestE2ELifecycle: TestBasicLifecycle and TestProposeDeleteAndUndo, with
// the git CLI checking Porch's refs at each step.
func TestE2ELifecycle(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eTest)
		r := env.repo[e2eTest]
		hasRef := func(ref string) bool {
			t.Helper()
			for _, l := range r.refs(t) {
				if strings.HasPrefix(l, ref+" ") {
					return true
				}
			}
			return false
		}
		wantRefs := func(present, absent []string) {
			t.Helper()
			if r.bare == "" {
				return
			}
			for _, ref := range present {
				if !hasRef(ref) {
					t.Fatalf("no ref %s in %v", ref, r.refs(t))
				}
			}
			for _, ref := range absent {
				if hasRef(ref) {
					t.Fatalf("ref %s remains in %v", ref, r.refs(t))
				}
			}
		}

		t.Run("ProposeApprove", func(t *testing.T) {
			key := revision.Key{Package: "lifecycle", Workspace: "workspace"}
			env.init(e2eTest, key, nil)
			wantRefs([]string{"refs/heads/drafts/lifecycle/workspace"}, nil)
			// A draft cannot be approved or rejected.
			if _, err := env.e.Approve(e2eCtx, e2eTest, key); !errors.Is(err, repository.ErrInvalidTransition) {
				t.Fatalf("approve a draft: %v", err)
			}
			if _, err := env.e.Reject(e2eCtx, e2eTest, key); !errors.Is(err, repository.ErrInvalidTransition) {
				t.Fatalf("reject a draft: %v", err)
			}
			if _, err := env.e.Propose(e2eCtx, e2eTest, key); err != nil {
				t.Fatal(err)
			}
			wantRefs([]string{"refs/heads/proposed/lifecycle/workspace"}, []string{"refs/heads/drafts/lifecycle/workspace"})
			// Reject goes back to Draft.
			if pr, err := env.e.Reject(e2eCtx, e2eTest, key); err != nil || pr.Meta().Lifecycle != revision.LifecycleDraft {
				t.Fatalf("reject: %v", err)
			}
			pub := env.publish(e2eTest, key)
			if pub.Meta().Key.Revision != 1 {
				t.Fatalf("revision %d, want 1", pub.Meta().Key.Revision)
			}
			if _, err := env.e.Propose(e2eCtx, e2eTest, pub.Meta().Key); !errors.Is(err, repository.ErrInvalidTransition) {
				t.Fatalf("propose a published revision: %v", err)
			}
			ph := env.mustGet(e2eTest, revision.Key{Package: "lifecycle", Revision: revision.Placeholder})
			if m := ph.Meta(); m.Lifecycle != revision.LifecyclePublished || m.Key.Workspace != "main" || !e2eFiles(t, ph).Equal(e2eFiles(t, pub)) {
				t.Fatalf("placeholder %s %s", m.Key, m.Lifecycle)
			}
			if r.bare == "" {
				return
			}
			wantRefs([]string{"refs/tags/lifecycle/v1"}, []string{"refs/heads/proposed/lifecycle/workspace", "refs/heads/drafts/lifecycle/workspace"})
			main := r.git(t, "rev-parse", "refs/heads/main")
			if tag := r.git(t, "rev-parse", "refs/tags/lifecycle/v1^{commit}"); tag != main {
				t.Fatalf("tag lifecycle/v1 at %s, main at %s", tag, main)
			}
			if parents := strings.Fields(r.git(t, "rev-list", "--parents", "-n1", main)); len(parents) != 3 {
				t.Fatalf("the approval is not a merge of the branch and the proposal: %v", parents)
			}
			if msg := r.git(t, "log", "-1", "--format=%B", main); !strings.HasPrefix(msg, "Approving package revision lifecycle/1\n") {
				t.Fatalf("approval message:\n%s", msg)
			}
			if got, want := r.git(t, "show", "main:lifecycle/Kptfile"), e2eFile(t, e2eFiles(t, pub), "Kptfile"); got != strings.TrimSpace(want) {
				t.Fatalf("git sees Kptfile\n%s\nwant\n%s", got, want)
			}
			if pub.Meta().Commit != main {
				t.Fatalf("Meta.Commit %s, git says %s", pub.Meta().Commit, main)
			}
		})

		t.Run("DeleteDraft", func(t *testing.T) {
			key := revision.Key{Package: "delete-draft", Workspace: "workspace"}
			env.init(e2eTest, key, nil)
			if err := env.e.Delete(e2eCtx, e2eTest, key); err != nil {
				t.Fatal(err)
			}
			env.gone(e2eTest, key)
			wantRefs(nil, []string{"refs/heads/drafts/delete-draft/workspace"})
		})

		t.Run("DeleteProposed", func(t *testing.T) {
			key := revision.Key{Package: "delete-proposed", Workspace: "workspace"}
			env.init(e2eTest, key, nil)
			if _, err := env.e.Propose(e2eCtx, e2eTest, key); err != nil {
				t.Fatal(err)
			}
			if err := env.e.Delete(e2eCtx, e2eTest, key); err != nil {
				t.Fatal(err)
			}
			env.gone(e2eTest, key)
			wantRefs(nil, []string{"refs/heads/proposed/delete-proposed/workspace"})
		})

		t.Run("DeleteFinal", func(t *testing.T) {
			key := revision.Key{Package: "delete-final", Workspace: "workspace"}
			env.init(e2eTest, key, nil)
			v1 := env.publish(e2eTest, key).Meta().Key
			if err := env.e.Delete(e2eCtx, e2eTest, v1); !errors.Is(err, repository.ErrImmutable) {
				t.Fatalf("delete a published revision: %v", err)
			}
			env.mustGet(e2eTest, v1)
			pr, err := env.e.ProposeDelete(e2eCtx, e2eTest, v1)
			if err != nil || pr.Meta().Lifecycle != revision.LifecycleDeletionProposed {
				t.Fatalf("propose delete: %v", err)
			}
			wantRefs([]string{"refs/heads/deletionProposed/delete-final/v1", "refs/tags/delete-final/v1"}, nil)
			if err := env.e.Delete(e2eCtx, e2eTest, v1); err != nil {
				t.Fatal(err)
			}
			env.gone(e2eTest, v1)
			wantRefs(nil, []string{"refs/heads/deletionProposed/delete-final/v1", "refs/tags/delete-final/v1"})
			// The package stays on the branch.
			env.mustGet(e2eTest, revision.Key{Package: "delete-final", Revision: revision.Placeholder})
		})

		t.Run("ProposeDeleteAndUndo", func(t *testing.T) {
			key := revision.Key{Package: "undo", Workspace: "workspace"}
			env.init(e2eTest, key, nil)
			v1 := env.publish(e2eTest, key).Meta().Key
			ph := revision.Key{Package: "undo", Revision: revision.Placeholder}
			for _, k := range []revision.Key{v1, ph} {
				if _, err := env.e.ProposeDelete(e2eCtx, e2eTest, k); err != nil {
					t.Fatalf("propose delete %s: %v", k, err)
				}
				if pr, err := env.e.Reject(e2eCtx, e2eTest, k); err != nil || pr.Meta().Lifecycle != revision.LifecyclePublished {
					t.Fatalf("undo %s: %v", k, err)
				}
				if err := env.e.Delete(e2eCtx, e2eTest, k); !errors.Is(err, repository.ErrImmutable) {
					t.Fatalf("delete %s after the undo: %v", k, err)
				}
				env.remove(e2eTest, k)
				env.gone(e2eTest, k)
			}
			if got := env.list(e2eTest, "undo"); len(got) != 0 {
				t.Fatalf("left %v", got)
			}
			if r.bare != "" {
				if ls := r.git(t, "ls-tree", "--name-only", "main"); slices.Contains(strings.Fields(ls), "undo") {
					t.Fatalf("undo is still on main: %s", ls)
				}
				if msg := r.git(t, "log", "-1", "--format=%s", "main"); msg != "Delete undo" {
					t.Fatalf("delete commit %q", msg)
				}
			}
		})

		if r.bare != "" {
			r.git(t, "fsck", "--no-progress", "--no-dangling")
		}
	})
}

// TestE2EDeleteAndRecreate: TestDeleteAndRecreate and TestDeleteFromMain.
func TestE2EDeleteAndRecreate(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eTest)
		key := revision.Key{Package: "test-recreate", Workspace: "workspace"}
		first := env.init(e2eTest, key, nil)
		v1 := env.publish(e2eTest, key).Meta().Key
		env.remove(e2eTest, v1)
		env.remove(e2eTest, revision.Key{Package: "test-recreate", Revision: revision.Placeholder})
		if got := env.list(e2eTest, "test-recreate"); len(got) != 0 {
			t.Fatalf("left %v", got)
		}
		again, err := env.e.Init(e2eCtx, e2eTest, key, engine.InitOptions{Description: "test-recreate description"})
		if err != nil {
			t.Fatalf("recreate: %v", err)
		}
		if !e2eFiles(t, again).Equal(e2eFiles(t, first)) {
			t.Fatalf("the recreated package differs: %v", e2eFiles(t, again).Paths())
		}
		if got := env.list(e2eTest, "test-recreate"); !slices.Equal(got, []string{"test-recreate@workspace/0:Draft"}) {
			t.Fatalf("after recreate: %v", got)
		}
		if got := env.publish(e2eTest, key).Meta().Key.Revision; got != 1 {
			t.Fatalf("recreated package published as revision %d", got)
		}

		// TestDeleteFromMain: two packages' placeholders are deleted
		// independently.
		for _, p := range []string{"from-main-a", "from-main-b"} {
			k := revision.Key{Package: p, Workspace: "workspace"}
			env.init(e2eTest, k, nil)
			env.publish(e2eTest, k)
		}
		env.remove(e2eTest, revision.Key{Package: "from-main-a", Revision: revision.Placeholder})
		env.gone(e2eTest, revision.Key{Package: "from-main-a", Revision: revision.Placeholder})
		env.mustGet(e2eTest, revision.Key{Package: "from-main-b", Revision: revision.Placeholder})
		env.mustGet(e2eTest, revision.Key{Package: "from-main-a", Revision: 1})
		env.remove(e2eTest, revision.Key{Package: "from-main-b", Revision: revision.Placeholder})
		for _, p := range []string{"from-main-a", "from-main-b"} {
			env.remove(e2eTest, revision.Key{Package: p, Revision: 1})
			if got := env.list(e2eTest, p); len(got) != 0 {
				t.Fatalf("%s left %v", p, got)
			}
		}
	})
}

// TestE2ELatestOnDelete: TestLatestVersionOnDelete.
func TestE2ELatestOnDelete(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eTest)
		latest := func() int {
			t.Helper()
			pr, err := env.e.Latest(e2eCtx, e2eTest, "latest")
			if errors.Is(err, repository.ErrNotFound) {
				return 0
			}
			if err != nil {
				t.Fatal(err)
			}
			return pr.Meta().Key.Revision
		}
		key := revision.Key{Package: "latest", Workspace: "v1"}
		env.init(e2eTest, key, nil)
		if got := latest(); got != 0 {
			t.Fatalf("latest of a draft-only package: %d", got)
		}
		v1 := env.publish(e2eTest, key).Meta().Key
		if got := latest(); got != 1 {
			t.Fatalf("latest %d, want 1", got)
		}
		if _, err := env.e.Copy(e2eCtx, e2eTest, v1, "v2", engine.CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		v2 := env.publish(e2eTest, revision.Key{Package: "latest", Workspace: "v2"}).Meta().Key
		if got := latest(); got != 2 {
			t.Fatalf("latest %d, want 2", got)
		}
		// Proposing deletion does not move it; deleting does.
		if _, err := env.e.ProposeDelete(e2eCtx, e2eTest, v2); err != nil {
			t.Fatal(err)
		}
		if got := latest(); got != 2 {
			t.Fatalf("latest with v2 proposed for deletion: %d, want 2 (Porch counts DeletionProposed as published)", got)
		}
		if err := env.e.Delete(e2eCtx, e2eTest, v2); err != nil {
			t.Fatal(err)
		}
		if got := latest(); got != 1 {
			t.Fatalf("latest after deleting v2: %d, want 1", got)
		}
		env.remove(e2eTest, v1)
		if got := latest(); got != 0 {
			t.Fatalf("latest after deleting every revision: %d, want none", got)
		}
		// The placeholder is still there, and never counts.
		env.mustGet(e2eTest, revision.Key{Package: "latest", Revision: revision.Placeholder})
	})
}

// TestE2ESubfolder: TestSubfolderPackageRevisionIncrementation and
// TestGitRepositoryWithReleaseTagsAndDirectory: a deep package path, and
// (git) a repository registered with a directory on a branch it creates.
func TestE2ESubfolder(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eTest)
		deep := "random/package/folder/test-package"
		check := func(repo, pkg, tagPrefix string) {
			t.Helper()
			key := revision.Key{Package: pkg, Workspace: "v1"}
			env.init(repo, key, nil)
			v1 := env.publish(repo, key)
			if _, err := env.e.Copy(e2eCtx, repo, v1.Meta().Key, "v2", engine.CopyOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := env.publish(repo, revision.Key{Package: pkg, Workspace: "v2"}).Meta().Key.Revision; got != 2 {
				t.Fatalf("%s: second revision %d", pkg, got)
			}
			if r := env.repo[repo]; r.bare != "" {
				for _, v := range []string{"v1", "v2"} {
					r.git(t, "rev-parse", "--verify", "refs/tags/"+tagPrefix+pkg+"/"+v)
				}
			}
		}
		check(e2eTest, deep, "")
		if kf := e2eKptfile(t, e2eFiles(t, env.mustGet(e2eTest, revision.Key{Package: deep, Revision: 2}))); kf.Metadata.Name != "test-package" {
			t.Fatalf("Kptfile name %q", kf.Metadata.Name)
		}
		if !b.git {
			return
		}
		const dir = "random/repo/folder"
		r := env.add("subfolder", e2eSpec{Branch: "subfolder-branch", Directory: dir})
		check("subfolder", "test-package", dir+"/")
		for _, k := range env.list("subfolder", "") {
			if strings.HasPrefix(k, "random") {
				t.Fatalf("package names are not relative to the directory: %v", env.list("subfolder", ""))
			}
		}
		if got := env.list("subfolder", ""); !slices.Equal(got, []string{"test-package@subfolder-branch/-1:Published", "test-package@v1/1:Published", "test-package@v2/2:Published"}) {
			t.Fatalf("subfolder repository: %v", got)
		}
		if r.bare != "" {
			if ls := r.git(t, "ls-tree", "-r", "--name-only", "subfolder-branch"); !strings.Contains(ls, dir+"/test-package/Kptfile") {
				t.Fatalf("branch tree:\n%s", ls)
			}
		}
	})
}

// TestE2EResync: TestMetadataAfterApproveAndBackgroundJob and
// TestMetadataAfterDeleteAndBackgroundJob. What an approval and a delete
// leave is the same when the repository is opened again (Porch's resync).
func TestE2EResync(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eTest)
		key := revision.Key{Package: "resync", Workspace: "v1"}
		env.init(e2eTest, key, nil)
		env.publish(e2eTest, key)
		want := []string{"resync@main/-1:Published", "resync@v1/1:Published"}
		if got := env.list(e2eTest, "resync"); !slices.Equal(got, want) {
			t.Fatalf("after approve: %v, want %v", got, want)
		}
		if got := env.reopened().list(e2eTest, "resync"); !slices.Equal(got, want) {
			t.Fatalf("after approve, reopened: %v, want %v", got, want)
		}
		env.remove(e2eTest, revision.Key{Package: "resync", Revision: 1})
		want = want[:1]
		if got := env.list(e2eTest, "resync"); !slices.Equal(got, want) {
			t.Fatalf("after delete: %v, want %v", got, want)
		}
		if got := env.reopened().list(e2eTest, "resync"); !slices.Equal(got, want) {
			t.Fatalf("after delete, reopened: %v, want %v", got, want)
		}
	})
}

// TestE2EReadiness: the unready blueprint. A readiness gate keeps a
// proposal from being approved until its condition is True.
func TestE2EReadiness(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eTest)
		key := revision.Key{Package: "unready", Workspace: "v1"}
		env.init(e2eTest, key, nil)
		const gate = "nephio.org.Specializer.specialize"
		if _, err := env.e.SetReadinessGates(e2eCtx, e2eTest, key, []revision.ReadinessGate{{ConditionType: gate}}); err != nil {
			t.Fatal(err)
		}
		if _, err := env.e.SetConditions(e2eCtx, e2eTest, key, revision.Condition{Type: gate, Status: revision.ConditionFalse}); err != nil {
			t.Fatal(err)
		}
		if _, err := env.e.Propose(e2eCtx, e2eTest, key); err != nil {
			t.Fatal(err)
		}
		var ge *engine.GatesError
		if _, err := env.e.Approve(e2eCtx, e2eTest, key); !errors.As(err, &ge) || !errors.Is(err, engine.ErrNotReady) || !slices.Equal(ge.Gates, []string{gate}) {
			t.Fatalf("approve while not ready: %v", err)
		}
		if pr := env.mustGet(e2eTest, key); pr.Meta().Lifecycle != revision.LifecycleProposed {
			t.Fatalf("a refused approval left %s", pr.Meta().Lifecycle)
		}
		// Conditions are set on drafts: back to Draft, set, propose again.
		if _, err := env.e.Reject(e2eCtx, e2eTest, key); err != nil {
			t.Fatal(err)
		}
		if _, err := env.e.SetConditions(e2eCtx, e2eTest, key, revision.Condition{Type: gate, Status: revision.ConditionTrue, Reason: "Specialized"}); err != nil {
			t.Fatal(err)
		}
		pub := env.publish(e2eTest, key)
		info, err := pub.Info(e2eCtx)
		if err != nil {
			t.Fatal(err)
		}
		if len(info.ReadinessGates) != 1 || len(info.Conditions) != 1 || info.Conditions[0].Status != revision.ConditionTrue {
			t.Fatalf("published info %+v", info)
		}
	})
}

// TestE2EDiscovery: a repository another writer (the git CLI) filled in
// Porch's layout, registered over HTTP: its tags are published revisions,
// its branch packages placeholders, release tags are ignored, and its
// packages clone with locks that name the commits git sees.
func TestE2EDiscovery(t *testing.T) {
	t.Parallel()
	up := newE2EGitUpstream(t)
	r := e2eOpenGit(t, e2eGitSpec(e2eBlueprints, up.url, e2eSpec{}), nil)
	down := memrepo.New(e2eTest, nil)
	t.Cleanup(func() { down.Close() })
	env := &e2eEnv{t: t, repo: map[string]*e2eRepo{e2eBlueprints: {Repository: r, bare: up.bare, url: up.url}},
		repos: e2eRepos{Repos: engine.Repos{e2eBlueprints: r, e2eTest: down},
			urls: map[string]string{e2eBlueprints: up.url}}}
	env.e = env.engine(nil)
	want := []string{
		"basens@main/-1:Published", "basens@v1/1:Published", "basens@v2/2:Published",
		"bucket@main/-1:Published", "bucket@v1/1:Published",
	}
	if got := env.list(e2eBlueprints, ""); !slices.Equal(got, want) {
		t.Fatalf("discovered %v, want %v", got, want)
	}
	latest, err := env.e.Latest(e2eCtx, e2eBlueprints, "basens")
	if err != nil || latest.Meta().Key.Revision != 2 {
		t.Fatalf("latest basens: %v", err)
	}
	if !e2eFiles(t, latest).Has("resourcequota.yaml") {
		t.Fatalf("basens v2 files %v", e2eFiles(t, latest).Paths())
	}
	src := revision.Key{Repository: e2eBlueprints, Package: "basens", Revision: 1}
	pr, err := env.e.Clone(e2eCtx, e2eTest, revision.Key{Package: "istions", Workspace: "workspace"}, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lock := e2eKptfile(t, e2eFiles(t, pr)).UpstreamLock.Git
	want1 := revision.GitLock{Repo: up.url, Directory: "basens", Ref: "basens/v1", Commit: e2eGit(t, up.bare, "rev-parse", "refs/tags/basens/v1^{commit}")}
	if *lock != want1 {
		t.Fatalf("lock %+v, want %+v", lock, want1)
	}
}
