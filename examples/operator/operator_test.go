package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

func TestMain(m *testing.M) {
	if os.Getenv(operatorChildEnv) != "" {
		// A replica started by a test as a process of its own
		// (startReplica): the test binary is the operator.
		identityHook = os.Getenv(operatorIdentityEnv)
		os.Exit(exitCode(run(context.Background(), os.Args[1:])))
	}
	ctrl.SetLogger(logr.Discard())
	code := m.Run()
	stopCluster(code != 0)
	os.Exit(code)
}

// env is a namespace of its own on the package's test cluster (with the
// CRDs), a client, and a git repository registered in it as Repository
// "blueprints". Operators started with run watch only that namespace.
type env struct {
	t          testing.TB
	ns         string // the test's own namespace
	cfg        *rest.Config
	kubeconfig string
	c          client.Client
	gitDir     string
	// webhookURL is the last operator's push webhook (Options.WebhookAddr).
	webhookURL string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	cfg, kubeconfig := startCluster(t)
	s, err := scheme()
	require.NoError(t, err)
	require.NoError(t, coordinationv1.AddToScheme(s))
	c, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(t, err)
	e := &env{t: t, cfg: cfg, kubeconfig: kubeconfig, c: c, ns: namespaceFor(t)}
	require.NoError(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}))
	e.gitDir = e.addRepository("blueprints")
	return e
}

// addRepository creates a bare git repository and its Repository object.
func (e *env) addRepository(name string) string {
	e.t.Helper()
	dir := filepath.Join(e.t.TempDir(), name+".git")
	_, err := git.PlainInit(dir, true)
	require.NoError(e.t, err)
	repo := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
			Git: &configv1alpha1.GitRepository{Repo: dir, Branch: "main", CreateBranch: true}},
	}
	require.NoError(e.t, e.c.Create(context.Background(), repo))
	return dir
}

// run starts an operator until the test ends or the returned stop is
// called; stop waits until the manager has returned.
func (e *env) run(o Options) (stop func()) {
	e.t.Helper()
	return e.runAs(e.cfg, o)
}

// runAs is run with the API server reached through cfg (another user's).
func (e *env) runAs(cfg *rest.Config, o Options) (stop func()) {
	e.t.Helper()
	_, stop = e.runOperator(cfg, o)
	return stop
}

// runOperator is runAs, which also returns the operator.
func (e *env) runOperator(cfg *rest.Config, o Options) (_ *operator, stop func()) {
	e.t.Helper()
	if o.Poll == 0 {
		o.Poll = 500 * time.Millisecond
	}
	o.Namespace = e.ns
	o.inProcessReplica = true
	if o.RepositoryRoots == nil {
		// The test's repositories: every t.TempDir of a test shares a
		// parent.
		o.RepositoryRoots = []string{filepath.Dir(e.t.TempDir())}
	}
	op, err := newOperator(cfg, o)
	require.NoError(e.t, err)
	require.NoError(e.t, op.addRepositories())
	require.NoError(e.t, op.addPackageRevisions())
	require.NoError(e.t, op.addVariants())
	require.NoError(e.t, op.addMaintenance())
	require.NoError(e.t, op.addWebhook())
	e.webhookURL = op.webhookURL
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- op.mgr.Start(ctx) }()
	var once bool
	stop = func() {
		if once {
			return
		}
		once = true
		cancel()
		select {
		case err := <-done:
			require.NoError(e.t, err)
		case <-time.After(30 * time.Second):
			e.t.Error("the manager did not stop")
		}
	}
	e.t.Cleanup(stop)
	return op, stop
}

func (e *env) create(name, pkg, ws string, src *porchv1alpha2.PackageSource, mutate ...func(*porchv1alpha2.PackageRevision)) {
	e.t.Helper()
	pr := &porchv1alpha2.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: porchv1alpha2.PackageRevisionSpec{PackageName: pkg, RepositoryName: strings.Split(name, ".")[0],
			WorkspaceName: ws, Source: src},
	}
	for _, m := range mutate {
		m(pr)
	}
	require.NoError(e.t, e.c.Create(context.Background(), pr))
}

func (e *env) get(name string) *porchv1alpha2.PackageRevision {
	e.t.Helper()
	var pr porchv1alpha2.PackageRevision
	require.NoError(e.t, e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &pr))
	return &pr
}

// wait polls the object until cond holds, failing after a while with the
// last state seen.
func (e *env) wait(name string, what string, cond func(*porchv1alpha2.PackageRevision) bool) *porchv1alpha2.PackageRevision {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last porchv1alpha2.PackageRevision
	var lastErr error
	for time.Now().Before(deadline) {
		lastErr = e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &last)
		if lastErr == nil && cond(&last) {
			return &last
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("%s: not %s after 30s: %v spec=%+v status=%+v", name, what, lastErr, last.Spec, last.Status)
	return nil
}

func ready(pr *porchv1alpha2.PackageRevision) bool {
	c := meta.FindStatusCondition(pr.Status.Conditions, porchv1alpha2.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == pr.Generation
}

func readyAt(lc porchv1alpha2.Lifecycle) func(*porchv1alpha2.PackageRevision) bool {
	return func(pr *porchv1alpha2.PackageRevision) bool {
		return ready(pr) && pr.Spec.Lifecycle == lc
	}
}

func (e *env) setLifecycle(name string, lc porchv1alpha2.Lifecycle) {
	e.t.Helper()
	pr := e.get(name)
	patch := client.MergeFrom(pr.DeepCopy())
	pr.Spec.Lifecycle = lc
	require.NoError(e.t, e.c.Patch(context.Background(), pr, patch))
}

// gitRevisions lists the repository directly, as an independent witness:
// key string → lifecycle.
func (e *env) gitRevisions(dir string) map[string]revision.Lifecycle {
	e.t.Helper()
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, repository.Spec{Name: "blueprints", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir}}, nil)
	require.NoError(e.t, err)
	defer r.Close()
	revs, err := r.List(ctx, repository.ListOptions{})
	require.NoError(e.t, err)
	out := map[string]revision.Lifecycle{}
	for _, rev := range revs {
		m := rev.Meta()
		out[fmt.Sprintf("%s/%s/%d", m.Key.Package, m.Key.Workspace, m.Key.Revision)] = m.Lifecycle
	}
	return out
}

// kptfile reads the Kptfile of revision k from the repository directly.
func (e *env) kptfile(dir string, k revision.Key) *revision.Kptfile {
	e.t.Helper()
	ctx := context.Background()
	r, err := gitrepo.Open(ctx, repository.Spec{Name: "blueprints", Type: repository.TypeGit,
		Git: &repository.GitSpec{Repo: dir}}, nil)
	require.NoError(e.t, err)
	defer r.Close()
	k.Repository = "blueprints"
	rev, err := r.Get(ctx, k)
	require.NoError(e.t, err)
	files, err := rev.Files(ctx)
	require.NoError(e.t, err)
	data, ok := files.Get(revision.KptfileName)
	require.True(e.t, ok)
	kf, err := revision.ParseKptfile(data)
	require.NoError(e.t, err)
	return kf
}

func (e *env) names() []string {
	e.t.Helper()
	var list porchv1alpha2.PackageRevisionList
	require.NoError(e.t, e.c.List(context.Background(), &list, client.InNamespace(e.ns)))
	var out []string
	for _, pr := range list.Items {
		if pr.DeletionTimestamp == nil {
			out = append(out, pr.Name)
		}
	}
	sort.Strings(out)
	return out
}

func ref(name string) *porchv1alpha2.PackageRevisionRef {
	return &porchv1alpha2.PackageRevisionRef{Name: name}
}

// TestSourcesAndLifecycle creates a PackageRevision with each source, and
// proposes and approves through spec.lifecycle; every step is checked in
// git.
func TestSourcesAndLifecycle(t *testing.T) {
	e := newEnv(t)
	e.run(Options{})

	// init, with labels for the Kptfile, then propose and approve.
	e.create("blueprints.app.ws1", "app", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{Description: "the app"}},
		func(pr *porchv1alpha2.PackageRevision) {
			pr.Spec.PackageMetadata = &porchv1alpha2.PackageMetadata{Labels: map[string]string{"team": "edge"}}
		})
	pr := e.wait("blueprints.app.ws1", "a ready draft", readyAt(porchv1alpha2.LifecycleDraft))
	kf := e.kptfile(e.gitDir, revision.Key{Package: "app", Workspace: "ws1"})
	require.Equal(t, map[string]string{"team": "edge"}, kf.Metadata.Labels)
	require.Equal(t, "the app", kf.Info.Description)
	require.Contains(t, pr.Finalizers, porchv1alpha2.Finalizer)
	require.NotNil(t, pr.Status.SelfLock)
	require.Equal(t, "drafts/app/ws1", pr.Status.SelfLock.Git.Ref)
	require.Equal(t, revision.LifecycleDraft, e.gitRevisions(e.gitDir)["app/ws1/0"])

	e.setLifecycle("blueprints.app.ws1", porchv1alpha2.LifecycleProposed)
	e.wait("blueprints.app.ws1", "proposed", readyAt(porchv1alpha2.LifecycleProposed))
	require.Equal(t, revision.LifecycleProposed, e.gitRevisions(e.gitDir)["app/ws1/0"])

	e.setLifecycle("blueprints.app.ws1", porchv1alpha2.LifecyclePublished)
	pr = e.wait("blueprints.app.ws1", "published", readyAt(porchv1alpha2.LifecyclePublished))
	require.Equal(t, 1, pr.Status.Revision)
	require.NotNil(t, pr.Status.PublishedAt)
	require.Equal(t, "app/v1", pr.Status.SelfLock.Git.Ref)
	require.Equal(t, revision.LifecyclePublished, e.gitRevisions(e.gitDir)["app/ws1/1"])

	// copy: a new revision of app from v1, published straight away.
	e.create("blueprints.app.ws2", "app", "ws2", &porchv1alpha2.PackageSource{CopyFrom: ref("blueprints.app.ws1")},
		func(pr *porchv1alpha2.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished })
	pr = e.wait("blueprints.app.ws2", "published", readyAt(porchv1alpha2.LifecyclePublished))
	require.Equal(t, 2, pr.Status.Revision)
	// Discovery moves the latest-revision label to it.
	e.wait("blueprints.app.ws2", "labelled latest", func(pr *porchv1alpha2.PackageRevision) bool {
		return pr.Labels[porchv1alpha2.LatestRevisionLabel] == "true"
	})
	// As Porch does, the revision that was latest keeps the label, "false".
	e.wait("blueprints.app.ws1", "labelled latest false", func(pr *porchv1alpha2.PackageRevision) bool {
		return pr.Labels[porchv1alpha2.LatestRevisionLabel] == "false"
	})
	require.Equal(t, "copy", pr.Status.CreationSource)
	require.Equal(t, "init", e.get("blueprints.app.ws1").Status.CreationSource)
	require.Equal(t, pr.Status.ObservedVersion, pr.Status.ObservedPrrResourceVersion)
	// The CRD's selectable fields serve the field selectors porchctl and
	// kubectl send.
	for sel, want := range map[string][]string{
		"spec.packageName=app,status.revision=2":            {"blueprints.app.ws2"},
		"spec.workspaceName=ws1,spec.repository=blueprints": {"blueprints.app.ws1"},
		"spec.lifecycle=Published,spec.packageName=app":     {"blueprints.app.main", "blueprints.app.ws1", "blueprints.app.ws2"},
	} {
		var list porchv1alpha2.PackageRevisionList
		fs, err := fields.ParseSelector(sel)
		require.NoError(t, err)
		require.NoError(t, e.c.List(context.Background(), &list, client.InNamespace(e.ns), client.MatchingFieldsSelector{Selector: fs}))
		var got []string
		for _, it := range list.Items {
			got = append(got, it.Name)
		}
		sort.Strings(got)
		require.Equal(t, want, got, sel)
	}

	// clone app v1 into another package, published.
	e.create("blueprints.edge.ws1", "edge", "ws1", &porchv1alpha2.PackageSource{CloneFrom: &porchv1alpha2.UpstreamPackage{UpstreamRef: ref("blueprints.app.ws1")}},
		func(pr *porchv1alpha2.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished })
	pr = e.wait("blueprints.edge.ws1", "published", readyAt(porchv1alpha2.LifecyclePublished))
	require.NotNil(t, pr.Status.UpstreamLock, "a clone records its upstream")
	require.Equal(t, 1, pr.Status.Revision)

	// upgrade edge from app v1 to app v2.
	e.create("blueprints.edge.ws2", "edge", "ws2", &porchv1alpha2.PackageSource{Upgrade: &porchv1alpha2.PackageUpgradeSpec{
		OldUpstream: *ref("blueprints.app.ws1"), NewUpstream: *ref("blueprints.app.ws2"), CurrentPackage: *ref("blueprints.edge.ws1")}})
	pr = e.wait("blueprints.edge.ws2", "a ready draft", readyAt(porchv1alpha2.LifecycleDraft))
	require.NotNil(t, pr.Status.UpstreamLock)

	got := e.gitRevisions(e.gitDir)
	for _, k := range []string{"app/ws1/1", "app/ws2/2", "edge/ws1/1"} {
		require.Equal(t, revision.LifecyclePublished, got[k], k)
	}
	require.Equal(t, revision.LifecycleDraft, got["edge/ws2/0"])

	// A source that names no revision fails with Ready False, and writes
	// nothing.
	e.create("blueprints.bad.ws1", "bad", "ws1", &porchv1alpha2.PackageSource{CopyFrom: ref("blueprints.bad.missing")})
	e.wait("blueprints.bad.ws1", "failed", func(pr *porchv1alpha2.PackageRevision) bool {
		c := meta.FindStatusCondition(pr.Status.Conditions, porchv1alpha2.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == porchv1alpha2.ReasonFailed
	})
	for k := range e.gitRevisions(e.gitDir) {
		require.False(t, strings.HasPrefix(k, "bad/"), k)
	}

	// An object named other than its revision is refused, gets no
	// finalizer, and its deletion leaves the revision it names alone.
	e.create("blueprints.misnamed.ws9", "app", "ws2", nil)
	e.wait("blueprints.misnamed.ws9", "refused", func(pr *porchv1alpha2.PackageRevision) bool {
		c := meta.FindStatusCondition(pr.Status.Conditions, porchv1alpha2.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, `"blueprints.app.ws2"`)
	})
	require.Empty(t, e.get("blueprints.misnamed.ws9").Finalizers)
	require.NoError(t, e.c.Delete(context.Background(), e.get("blueprints.misnamed.ws9")))
	require.Equal(t, revision.LifecyclePublished, e.gitRevisions(e.gitDir)["app/ws2/2"])
}

// TestReadinessGateBlocksApproval: approval waits until the gate's
// condition is True in status.packageConditions.
func TestReadinessGateBlocksApproval(t *testing.T) {
	e := newEnv(t)
	e.run(Options{})
	e.create("blueprints.gated.ws1", "gated", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}},
		func(pr *porchv1alpha2.PackageRevision) {
			pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished
			pr.Spec.ReadinessGates = []porchv1alpha2.ReadinessGate{{ConditionType: "Tested"}}
		})
	pr := e.wait("blueprints.gated.ws1", "pending", func(pr *porchv1alpha2.PackageRevision) bool {
		c := meta.FindStatusCondition(pr.Status.Conditions, porchv1alpha2.ConditionReady)
		return c != nil && c.Reason == porchv1alpha2.ReasonPending && strings.Contains(c.Message, "Tested")
	})
	// Still not published a while later.
	time.Sleep(time.Second)
	require.Equal(t, revision.LifecycleProposed, e.gitRevisions(e.gitDir)["gated/ws1/0"])
	require.Zero(t, e.get("blueprints.gated.ws1").Status.Revision)

	// A condition of another type, or False, does not open the gate.
	pr = e.get("blueprints.gated.ws1")
	pr.Status.PackageConditions = []porchv1alpha2.PackageCondition{{Type: "Tested", Status: porchv1alpha2.ConditionFalse}}
	require.NoError(t, e.c.Status().Update(context.Background(), pr))
	time.Sleep(time.Second)
	require.Equal(t, revision.LifecycleProposed, e.gitRevisions(e.gitDir)["gated/ws1/0"])

	pr = e.get("blueprints.gated.ws1")
	for i := range pr.Status.PackageConditions {
		if pr.Status.PackageConditions[i].Type == "Tested" {
			pr.Status.PackageConditions[i].Status = porchv1alpha2.ConditionTrue
		}
	}
	require.NoError(t, e.c.Status().Update(context.Background(), pr))
	pr = e.wait("blueprints.gated.ws1", "published", readyAt(porchv1alpha2.LifecyclePublished))
	require.Equal(t, 1, pr.Status.Revision)
	require.Equal(t, revision.LifecyclePublished, e.gitRevisions(e.gitDir)["gated/ws1/1"])

	// A condition set on the object reaches the Kptfile; one set in the
	// Kptfile by another client afterwards is not undone by the object's
	// older status, which follows it instead.
	e.create("blueprints.ext.ws1", "ext", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}})
	e.wait("blueprints.ext.ws1", "a ready draft", readyAt(porchv1alpha2.LifecycleDraft))
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pr := e.get("blueprints.ext.ws1")
		pr.Status.PackageConditions = append(pr.Status.PackageConditions, porchv1alpha2.PackageCondition{Type: "Scanned", Status: porchv1alpha2.ConditionFalse})
		return e.c.Status().Update(context.Background(), pr)
	}))
	key := revision.Key{Package: "ext", Workspace: "ws1"}
	scanned := func() revision.ConditionStatus {
		c, _ := e.kptfile(e.gitDir, key).Condition("Scanned")
		return c.Status
	}
	require.Eventually(t, func() bool { return scanned() == revision.ConditionFalse }, 30*time.Second, 100*time.Millisecond)

	ctx := context.Background()
	other, err := gitrepo.Open(ctx, repository.Spec{Name: "blueprints", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: e.gitDir}}, nil)
	require.NoError(t, err)
	defer other.Close()
	oe, err := engine.New(&engine.Options{Repositories: engine.Repos{"blueprints": other}})
	require.NoError(t, err)
	_, err = oe.SetConditions(ctx, "blueprints", key, revision.Condition{Type: "Scanned", Status: revision.ConditionTrue})
	require.NoError(t, err)
	e.wait("blueprints.ext.ws1", "following the Kptfile", func(pr *porchv1alpha2.PackageRevision) bool {
		i := slices.IndexFunc(pr.Status.PackageConditions, func(c porchv1alpha2.PackageCondition) bool { return c.Type == "Scanned" })
		return i >= 0 && pr.Status.PackageConditions[i].Status == porchv1alpha2.ConditionTrue
	})
	time.Sleep(time.Second) // more reconciles and a discovery pass
	require.Equal(t, revision.ConditionTrue, scanned())
}

// TestDiscoveryAndDeletion: revisions already in git get objects; deleting
// the object of a published revision leaves git alone and the object comes
// back; after DeletionProposed the delete reaches git; and after every
// object is lost, a new operator makes the same objects again.
func TestDiscoveryAndDeletion(t *testing.T) {
	e := newEnv(t)
	stop := e.run(Options{})
	e.create("blueprints.a.ws1", "a", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}},
		func(pr *porchv1alpha2.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished })
	e.create("blueprints.b.ws1", "b", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}},
		func(pr *porchv1alpha2.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished })
	e.create("blueprints.c.ws1", "c", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}})
	e.wait("blueprints.a.ws1", "published", readyAt(porchv1alpha2.LifecyclePublished))
	e.wait("blueprints.b.ws1", "published", readyAt(porchv1alpha2.LifecyclePublished))
	e.wait("blueprints.c.ws1", "draft", readyAt(porchv1alpha2.LifecycleDraft))
	// Publishing made the placeholder revisions (the packages on main):
	// discovery gives them objects.
	e.wait("blueprints.a.main", "discovered", readyAt(porchv1alpha2.LifecyclePublished))

	// As in Porch, the object of a published revision is not deleted
	// until the revision is proposed for deletion: it stays, marked,
	// with Ready False saying why, and git is untouched.
	require.NoError(t, e.c.Delete(context.Background(), e.get("blueprints.a.ws1")))
	pr := e.wait("blueprints.a.ws1", "blocked", func(pr *porchv1alpha2.PackageRevision) bool {
		c := meta.FindStatusCondition(pr.Status.Conditions, porchv1alpha2.ConditionReady)
		return pr.DeletionTimestamp != nil && c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "DeletionProposed")
	})
	require.Equal(t, 1, pr.Status.Revision)
	time.Sleep(time.Second) // a discovery pass changes nothing
	require.Equal(t, revision.LifecyclePublished, e.gitRevisions(e.gitDir)["a/ws1/1"])
	require.Equal(t, pr.UID, e.get("blueprints.a.ws1").UID)
	// Proposing it for deletion lets the deletion through.
	e.setLifecycle("blueprints.a.ws1", porchv1alpha2.LifecycleDeletionProposed)
	require.Eventually(t, func() bool {
		_, ok := e.gitRevisions(e.gitDir)["a/ws1/1"]
		return !ok && !slices.Contains(e.names(), "blueprints.a.ws1")
	}, 30*time.Second, 100*time.Millisecond)

	// Through DeletionProposed, deleting the object deletes the revision.
	e.setLifecycle("blueprints.b.ws1", porchv1alpha2.LifecycleDeletionProposed)
	e.wait("blueprints.b.ws1", "proposed for deletion", readyAt(porchv1alpha2.LifecycleDeletionProposed))
	require.NoError(t, e.c.Delete(context.Background(), e.get("blueprints.b.ws1")))
	require.Eventually(t, func() bool {
		_, ok := e.gitRevisions(e.gitDir)["b/ws1/1"]
		return !ok
	}, 30*time.Second, 100*time.Millisecond)
	time.Sleep(time.Second) // a discovery pass: it must not come back
	require.NotContains(t, e.names(), "blueprints.b.ws1")

	// Every object lost with the operator down: a new operator makes the
	// same objects, with the same revisions.
	before := map[string]int{}
	for _, n := range e.names() {
		before[n] = e.get(n).Status.Revision
	}
	stop()
	var list porchv1alpha2.PackageRevisionList
	require.NoError(t, e.c.List(context.Background(), &list, client.InNamespace(e.ns)))
	for i := range list.Items {
		pr := &list.Items[i]
		pr.Finalizers = nil
		require.NoError(t, e.c.Update(context.Background(), pr))
		require.NoError(t, client.IgnoreNotFound(e.c.Delete(context.Background(), pr)))
	}
	require.Eventually(t, func() bool { return len(e.names()) == 0 }, 10*time.Second, 50*time.Millisecond)
	e.run(Options{})
	for n, rev := range before {
		pr := e.wait(n, "rediscovered", ready)
		require.Equal(t, rev, pr.Status.Revision, n)
	}
	require.Eventually(t, func() bool { return slices.Equal(e.names(), sortedKeys(before)) }, 10*time.Second, 100*time.Millisecond)
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestLeaderElection runs two replicas: only the leader reconciles, and
// when it dies (stops without giving up its Lease, as a killed process)
// with work queued, the other takes over when the Lease expires and
// finishes the work, nothing lost and nothing done twice.
func TestLeaderElection(t *testing.T) {
	e := newEnv(t)
	o := Options{LeaderElection: true, LeaderElectionID: "cad-operator-test", LeaderElectionNamespace: e.ns,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}
	killed := o
	killed.keepLeaseOnStop = true
	kill := e.run(killed)
	holder := func() string {
		var l coordinationv1.Lease
		if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: o.LeaderElectionID}, &l); err != nil {
			if apierrors.IsNotFound(err) {
				return ""
			}
			require.NoError(t, err)
		}
		if l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	require.Eventually(t, func() bool { return holder() != "" }, 30*time.Second, 100*time.Millisecond)
	first := holder()
	e.run(o)

	e.create("blueprints.one.ws1", "one", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}})
	e.wait("blueprints.one.ws1", "a ready draft", readyAt(porchv1alpha2.LifecycleDraft))
	require.Equal(t, first, holder(), "the first replica keeps the lease")

	// Work in flight when the leader dies.
	const n = 10
	for i := range n {
		e.create(fmt.Sprintf("blueprints.p%d.ws1", i), fmt.Sprintf("p%d", i), "ws1",
			&porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}},
			func(pr *porchv1alpha2.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished })
	}
	kill()
	require.Eventually(t, func() bool { h := holder(); return h != "" && h != first }, 30*time.Second, 100*time.Millisecond)
	for i := range n {
		pr := e.wait(fmt.Sprintf("blueprints.p%d.ws1", i), "published", readyAt(porchv1alpha2.LifecyclePublished))
		require.Equal(t, 1, pr.Status.Revision)
	}
	e.setLifecycle("blueprints.one.ws1", porchv1alpha2.LifecyclePublished)
	e.wait("blueprints.one.ws1", "published", readyAt(porchv1alpha2.LifecyclePublished))

	// git holds each package once: revision 1 and the placeholder.
	got := e.gitRevisions(e.gitDir)
	want := map[string]revision.Lifecycle{"one/ws1/1": revision.LifecyclePublished, "one/main/-1": revision.LifecyclePublished}
	for i := range n {
		want[fmt.Sprintf("p%d/ws1/1", i)] = revision.LifecyclePublished
		want[fmt.Sprintf("p%d/main/-1", i)] = revision.LifecyclePublished
	}
	require.Equal(t, want, got)
}

// TestKubectl: a PackageRevision created and proposed with kubectl, shown
// with the CRD's printer columns and short name; a source with two fields
// is refused by the API server (the CRD's CEL rule).
func TestKubectl(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH")
	}
	e := newEnv(t)
	e.run(Options{})
	k := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", e.kubeconfig, "-n", e.ns}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := k(`apiVersion: porch.kpt.dev/v1alpha2
kind: PackageRevision
metadata:
  name: blueprints.app.ws1
spec:
  packageName: app
  repository: blueprints
  workspaceName: ws1
  source:
    init:
      description: made with kubectl
`, "create", "-f", "-")
	require.NoError(t, err, out)
	e.wait("blueprints.app.ws1", "a ready draft", readyAt(porchv1alpha2.LifecycleDraft))

	out, err = k("", "get", "packagerevisions.v1alpha2.porch.kpt.dev")
	require.NoError(t, err, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.Equal(t, []string{"NAME", "PACKAGE", "WORKSPACE", "REVISION", "LIFECYCLE", "REPOSITORY", "READY", "AGE"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"blueprints.app.ws1", "app", "ws1", "0", "Draft", "blueprints", "True"}, strings.Fields(lines[1])[:7])

	out, err = k("", "patch", "rpkg", "blueprints.app.ws1", "--type", "merge", "-p", `{"spec":{"lifecycle":"Proposed"}}`)
	require.NoError(t, err, out)
	e.wait("blueprints.app.ws1", "proposed", readyAt(porchv1alpha2.LifecycleProposed))
	out, err = k("", "get", "rpkg", "-o", "name")
	require.NoError(t, err, out)
	require.Equal(t, "packagerevision.porch.kpt.dev/blueprints.app.ws1", strings.TrimSpace(out))
	out, err = k("", "get", "pvs")
	require.NoError(t, err, out)
	require.Contains(t, out, "No resources found", "kubectl knows the short name pvs")

	out, err = k(`apiVersion: porch.kpt.dev/v1alpha2
kind: PackageRevision
metadata:
  name: blueprints.two.ws1
spec:
  packageName: two
  repository: blueprints
  workspaceName: ws1
  source:
    init: {}
    copyFrom: {name: blueprints.app.ws1}
`, "create", "-f", "-")
	require.Error(t, err)
	require.Contains(t, out, "exactly one of init, cloneFrom, copyFrom and upgrade")
	_, err = k("", "get", "rpkg", "blueprints.two.ws1")
	require.Error(t, err, "nothing was stored")
}

// The operator's own writes reach the other objects at once, not at the
// next poll: with a poll of an hour, publishing a revision labels it
// latest and makes the object of the placeholder it created, and a newer
// revision moves the label.
func TestOwnWritesRediscovered(t *testing.T) {
	e := newEnv(t)
	e.run(Options{Poll: time.Hour})
	require.Eventually(t, func() bool {
		var repo configv1alpha1.Repository
		require.NoError(t, e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "blueprints"}, &repo))
		return meta.IsStatusConditionTrue(repo.Status.Conditions, configv1alpha1.RepositoryReady)
	}, 30*time.Second, 50*time.Millisecond, "the repository's first discovery")
	e.create("blueprints.app.ws1", "app", "ws1", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{}},
		func(pr *porchv1alpha2.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished })
	e.wait("blueprints.app.ws1", "labelled latest", func(pr *porchv1alpha2.PackageRevision) bool {
		return ready(pr) && pr.Labels[porchv1alpha2.LatestRevisionLabel] == "true"
	})
	e.wait("blueprints.app.main", "discovered", ready)
	e.create("blueprints.app.ws2", "app", "ws2", &porchv1alpha2.PackageSource{CopyFrom: ref("blueprints.app.ws1")},
		func(pr *porchv1alpha2.PackageRevision) { pr.Spec.Lifecycle = porchv1alpha2.LifecyclePublished })
	e.wait("blueprints.app.ws2", "labelled latest", func(pr *porchv1alpha2.PackageRevision) bool {
		return ready(pr) && pr.Labels[porchv1alpha2.LatestRevisionLabel] == "true"
	})
	e.wait("blueprints.app.ws1", "labelled latest false", func(pr *porchv1alpha2.PackageRevision) bool {
		return pr.Labels[porchv1alpha2.LatestRevisionLabel] == "false"
	})
}

// spec.sync is not used, and a Repository that sets it says so.
func TestSyncScheduleReported(t *testing.T) {
	e := newEnv(t)
	e.run(Options{})
	dir := filepath.Join(t.TempDir(), "scheduled.git")
	_, err := git.PlainInit(dir, true)
	require.NoError(t, err)
	repo := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: "scheduled", Namespace: e.ns},
		Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit,
			Git:  &configv1alpha1.GitRepository{Repo: dir, Branch: "main", CreateBranch: true},
			Sync: &configv1alpha1.RepositorySync{Schedule: "*/10 * * * *"}},
	}
	require.NoError(t, e.c.Create(context.Background(), repo))
	require.Eventually(t, func() bool {
		require.NoError(t, e.c.Get(context.Background(), client.ObjectKeyFromObject(repo), repo))
		c := meta.FindStatusCondition(repo.Status.Conditions, configv1alpha1.RepositoryReady)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "spec.sync is not used")
	}, 30*time.Second, 50*time.Millisecond)
	var plain configv1alpha1.Repository
	require.Eventually(t, func() bool {
		require.NoError(t, e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "blueprints"}, &plain))
		return meta.FindStatusCondition(plain.Status.Conditions, configv1alpha1.RepositoryReady) != nil
	}, 30*time.Second, 50*time.Millisecond, "the plain Repository has no Ready condition")
	require.Empty(t, meta.FindStatusCondition(plain.Status.Conditions, configv1alpha1.RepositoryReady).Message)
}
