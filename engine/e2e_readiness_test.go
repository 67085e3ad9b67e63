package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/ocirepo"
	"github.com/configasdata/cad/revision"
)

// readinessPair is an approver's engine and an external checker's engine,
// each over its own handle on one repository called repo, as two
// processes would have them.
type readinessPair struct {
	approver, checker *engine.Engine
	repo              string
	rounds            int // of the race
}

// readinessPairs returns a pair on every e2e backend and on ocirepo over
// an in-process registry.
func readinessPairs(t *testing.T) map[string]func(t *testing.T) readinessPair {
	out := map[string]func(t *testing.T) readinessPair{}
	for _, b := range e2eBackends {
		out[b.name] = func(t *testing.T) readinessPair {
			env := newE2E(t, b, e2eTest)
			return readinessPair{approver: env.e, checker: env.reopened().e, repo: e2eTest, rounds: b.n}
		}
	}
	out["ocirepo"] = func(t *testing.T) readinessPair {
		srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		t.Cleanup(srv.Close)
		spec := repository.Spec{Name: e2eTest, Type: repository.TypeOCI,
			OCI: &repository.OCISpec{Registry: strings.TrimPrefix(srv.URL, "http://") + "/pkgs"}}
		open := func() *engine.Engine {
			r, err := ocirepo.Open(e2eCtx, spec, &ocirepo.Options{Insecure: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			e, err := engine.New(&engine.Options{Repositories: engine.Repos{e2eTest: r}})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		return readinessPair{approver: open(), checker: open(), repo: e2eTest, rounds: 4}
	}
	return out
}

// runReadiness runs scenario on every pair, in parallel.
func runReadiness(t *testing.T, scenario func(t *testing.T, p readinessPair)) {
	t.Parallel()
	for name, open := range readinessPairs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			scenario(t, open(t))
		})
	}
}

const checkedGate = "example.com/security-scan"

// proposeGated creates package pkg's draft ws with the readiness gate
// checkedGate and proposes it.
func proposeGated(t *testing.T, p readinessPair, pkg, ws string) revision.PackageRevision {
	t.Helper()
	key := revision.Key{Package: pkg, Workspace: ws}
	if _, err := p.approver.Init(e2eCtx, p.repo, key, engine.InitOptions{Description: "gated"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.approver.SetReadinessGates(e2eCtx, p.repo, key, []revision.ReadinessGate{{ConditionType: checkedGate}}); err != nil {
		t.Fatal(err)
	}
	pr, err := p.approver.Propose(e2eCtx, p.repo, key)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

func scanned(status revision.ConditionStatus) revision.Condition {
	return revision.Condition{Type: checkedGate, Status: status, Reason: "Scanner", Message: "scanned " + string(status)}
}

// TestE2EReadinessChecker: an external checker (another process) sets a
// condition on a proposal without touching its files; approval is refused
// until the condition is True, then succeeds, and the published revision
// keeps the condition it was published with.
func TestE2EReadinessChecker(t *testing.T) {
	runReadiness(t, func(t *testing.T, p readinessPair) {
		key := revision.Key{Package: "checked", Workspace: "v1"}
		prop := proposeGated(t, p, key.Package, key.Workspace)
		// The gate set on the draft was projected into its Kptfile.
		info, err := prop.Info(e2eCtx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(info.ReadinessGates, revision.ReadinessGate{ConditionType: checkedGate}) {
			t.Fatalf("the proposal's Kptfile has gates %v", info.ReadinessGates)
		}
		proposed := e2eFiles(t, prop)

		// Nothing checked yet: not ready.
		_, err = p.approver.Approve(e2eCtx, p.repo, key)
		var ge *engine.GatesError
		if !errors.As(err, &ge) || !errors.Is(err, engine.ErrNotReady) || !slices.Equal(ge.Gates, []string{checkedGate}) {
			t.Fatalf("approve before the check: %v, want a GatesError for %s", err, checkedGate)
		}

		// The checker reads the proposal, checks it, and records a failure
		// against the version it checked.
		seen, err := p.checker.Get(e2eCtx, p.repo, key)
		if err != nil {
			t.Fatal(err)
		}
		failed, err := p.checker.UpdateReadiness(e2eCtx, p.repo, key, engine.ReadinessOptions{
			Conditions: []revision.Condition{scanned(revision.ConditionFalse)}, Version: seen.Meta().Version})
		if err != nil {
			t.Fatalf("checker sets False on the proposal: %v", err)
		}
		if failed.Meta().Lifecycle != revision.LifecycleProposed || !e2eFiles(t, failed).Equal(proposed) {
			t.Fatal("setting a condition changed the proposal's lifecycle or files")
		}
		if _, err := p.approver.Approve(e2eCtx, p.repo, key); !errors.Is(err, engine.ErrNotReady) {
			t.Fatalf("approve with the condition False: %v, want ErrNotReady", err)
		}
		// A check of a version that is no longer current is refused.
		_, err = p.checker.UpdateReadiness(e2eCtx, p.repo, key, engine.ReadinessOptions{
			Conditions: []revision.Condition{scanned(revision.ConditionTrue)}, Version: seen.Meta().Version})
		if !errors.Is(err, repository.ErrConflict) {
			t.Fatalf("a condition for a stale version: %v, want ErrConflict", err)
		}
		if _, err := p.approver.Approve(e2eCtx, p.repo, key); !errors.Is(err, engine.ErrNotReady) {
			t.Fatalf("approve after a refused check: %v, want ErrNotReady", err)
		}

		passed, err := p.checker.UpdateReadiness(e2eCtx, p.repo, key, engine.ReadinessOptions{
			Conditions: []revision.Condition{scanned(revision.ConditionTrue)}, Version: failed.Meta().Version})
		if err != nil {
			t.Fatal(err)
		}
		ready, err := engine.Readiness(e2eCtx, passed)
		if err != nil || len(ready.Unsatisfied()) != 0 {
			t.Fatalf("after the check: readiness %+v, %v", ready, err)
		}
		pub, err := p.approver.Approve(e2eCtx, p.repo, key)
		if err != nil {
			t.Fatalf("approve after the check: %v", err)
		}
		if pub.Meta().Key.Revision != 1 || !e2eFiles(t, pub).Equal(proposed) {
			t.Fatalf("published %s with other files than proposed", pub.Meta().Key)
		}
		if c := pub.Meta().Conditions; len(c) != 1 || c[0] != scanned(revision.ConditionTrue) {
			t.Fatalf("the published revision has conditions %+v", c)
		}
		// Published: frozen, for the checker too.
		_, err = p.checker.SetConditions(e2eCtx, p.repo, pub.Meta().Key, scanned(revision.ConditionFalse))
		if !errors.Is(err, repository.ErrImmutable) {
			t.Fatalf("a condition on a published revision: %v, want ErrImmutable", err)
		}
		// Labels set by another caller leave the readiness alone.
		relabelled, err := p.approver.SetMetadata(e2eCtx, p.repo, pub.Meta().Key, revision.Metadata{Labels: map[string]string{"scan": "done"}}, "")
		if err != nil {
			t.Fatal(err)
		}
		if c := relabelled.Meta().Conditions; len(c) != 1 || c[0].Status != revision.ConditionTrue {
			t.Fatalf("SetMetadata changed the conditions to %+v", c)
		}
	})
}

// TestE2EReadinessRace: a checker flipping the gate's condition to False
// races an approval of the proposal it is True on, from another process.
// Exactly one of them wins, and no revision is ever published whose gate
// was False at publish time: when the approval wins the published
// revision's condition is True and the flip is refused; when the flip
// wins the revision stays Proposed with the condition False.
func TestE2EReadinessRace(t *testing.T) {
	runReadiness(t, func(t *testing.T, p readinessPair) {
		wins := map[string]int{}
		for i := range p.rounds {
			key := revision.Key{Package: fmt.Sprintf("race%d", i), Workspace: "v1"}
			proposeGated(t, p, key.Package, key.Workspace)
			if _, err := p.checker.SetConditions(e2eCtx, p.repo, key, scanned(revision.ConditionTrue)); err != nil {
				t.Fatal(err)
			}
			errs := make([]error, 2)
			start := make(chan struct{})
			done := make(chan struct{})
			go func() {
				<-start
				_, errs[0] = p.approver.Approve(e2eCtx, p.repo, key)
				done <- struct{}{}
			}()
			go func() {
				<-start
				_, errs[1] = p.checker.SetConditions(e2eCtx, p.repo, key, scanned(revision.ConditionFalse))
				done <- struct{}{}
			}()
			close(start)
			<-done
			<-done
			approved, flipped := errs[0] == nil, errs[1] == nil
			if approved == flipped {
				t.Fatalf("round %d: approve returned %v and the flip %v; want exactly one to win", i, errs[0], errs[1])
			}
			revs, err := p.approver.List(e2eCtx, p.repo, repository.ListOptions{Package: key.Package, Workspace: key.Workspace})
			if err != nil || len(revs) != 1 {
				t.Fatalf("round %d: list: %d revisions, %v", i, len(revs), err)
			}
			m := revs[0].Meta()
			ready, err := engine.Readiness(e2eCtx, revs[0])
			if err != nil {
				t.Fatal(err)
			}
			if approved {
				wins["approve"]++
				if !m.Lifecycle.IsPublished() || len(ready.Unsatisfied()) != 0 {
					t.Fatalf("round %d: approve won, but the revision is %s with unsatisfied gates %v", i, m.Lifecycle, ready.Unsatisfied())
				}
				if !errors.Is(errs[1], repository.ErrImmutable) && !errors.Is(errs[1], repository.ErrConflict) {
					t.Fatalf("round %d: the losing flip returned %v, want ErrImmutable or ErrConflict", i, errs[1])
				}
			} else {
				wins["flip"]++
				if m.Lifecycle != revision.LifecycleProposed || !slices.Equal(ready.Unsatisfied(), []string{checkedGate}) {
					t.Fatalf("round %d: the flip won, but the revision is %s with unsatisfied gates %v", i, m.Lifecycle, ready.Unsatisfied())
				}
				if !errors.Is(errs[0], engine.ErrNotReady) && !errors.Is(errs[0], repository.ErrConflict) {
					t.Fatalf("round %d: the losing approve returned %v, want ErrNotReady or ErrConflict", i, errs[0])
				}
			}
		}
		t.Logf("wins: %v", wins)
	})
}

// kptfileRecorder is a Pipeline that keeps the Kptfile of its last input
// (the pipeline reads the Kptfile into the ResourceList of its functions)
// and renders nothing.
type kptfileRecorder struct{ last []byte }

func (p *kptfileRecorder) Render(_ context.Context, files revision.Files) (*pipeline.Output, error) {
	p.last, _ = files.Get(revision.KptfileName)
	return &pipeline.Output{Files: files}, nil
}

// TestReadinessProjected: revision-level readiness set on a draft is in
// the Kptfile the render gets and in the saved content, for kpt and
// Porch; set on a proposal it stays revision data, and the proposal's
// content is not touched.
func TestReadinessProjected(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			rec := &kptfileRecorder{}
			e := newEngine(t, b.open(t, repoName), rec)
			key := revision.Key{Package: "app", Workspace: "ws"}
			md := revision.Metadata{ReadinessGates: []revision.ReadinessGate{{ConditionType: "example.com/a"}}}
			// Readiness given at creation is projected too.
			if _, err := e.Init(ctx, repoName, key, engine.InitOptions{Metadata: md}); err != nil {
				t.Fatal(err)
			}
			pr, err := e.SetConditions(ctx, repoName, key, revision.Condition{Type: "example.com/a", Status: revision.ConditionFalse, Reason: "Pending"})
			if err != nil {
				t.Fatal(err)
			}
			for what, kf := range map[string][]byte{"render input": rec.last, "saved": []byte(e2eFile(t, files(t, pr), revision.KptfileName))} {
				k, err := revision.ParseKptfile(kf)
				if err != nil {
					t.Fatal(err)
				}
				info := k.PackageRevisionInfo()
				if len(info.ReadinessGates) != 1 || len(info.Conditions) != 1 || info.Conditions[0].Reason != "Pending" {
					t.Fatalf("%s Kptfile has gates %v and conditions %v", what, info.ReadinessGates, info.Conditions)
				}
			}
			prop, err := e.Propose(ctx, repoName, key)
			if err != nil {
				t.Fatal(err)
			}
			ready, err := e.SetConditions(ctx, repoName, key, revision.Condition{Type: "example.com/a", Status: revision.ConditionTrue})
			if err != nil {
				t.Fatal(err)
			}
			if !files(t, ready).Equal(files(t, prop)) {
				t.Fatal("a condition on a proposal changed its content")
			}
			// The Kptfile still says False; the revision data wins.
			eff, err := engine.Readiness(ctx, ready)
			if err != nil || len(eff.Unsatisfied()) != 0 {
				t.Fatalf("effective readiness %+v, %v", eff, err)
			}
			if _, err := e.Approve(ctx, repoName, key); err != nil {
				t.Fatal(err)
			}
		})
	}
}
