package apiserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/internal/variantfail"
)

// countingSyncer is cad's variant syncer that counts the syncs of each
// PackageVariantSet.
type countingSyncer struct {
	VariantPackageSyncer
	syncs map[string]*atomic.Int64
}

func (c countingSyncer) SyncPackageVariantSet(ctx context.Context, env *VariantEnv, pvs *porchapi.PackageVariantSet) (json.RawMessage, error) {
	if n := c.syncs[pvs.Name]; n != nil {
		n.Add(1)
	}
	return c.VariantPackageSyncer.SyncPackageVariantSet(ctx, env, pvs)
}

// costlyExpr is a template over variant's CEL cost limit (one million):
// six nested maps over ten elements.
var costlyExpr = "string(size(" + strings.Repeat("[0,1,2,3,4,5,6,7,8,9].map(a, ", 6) + "a" + strings.Repeat(")", 6) + "))"

const pvsPath = "/apis/config.porch.kpt.dev/v1alpha2/namespaces/default/packagevariantsets"

func variantSet(name, packageExpr string) map[string]any {
	tmpl := map[string]any{}
	if packageExpr != "" {
		tmpl["downstream"] = map[string]any{"packageExpr": packageExpr}
	}
	return map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha2", "kind": "PackageVariantSet",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"upstream": map[string]any{"repo": "default", "package": "base"},
			"targets": []any{map[string]any{
				"repositories": []any{map[string]any{"name": "default", "packageNames": []any{name + "-a"}}},
				"template":     tmpl,
			}},
		}}
}

// condition returns the condition typ of a set, or nil.
func setCondition(ts *testServer, name, typ string) (*metav1.Condition, int64) {
	var got porchapi.PackageVariantSet
	ts.doJSON("GET", pvsPath+"/"+name, nil, &got)
	for _, c := range got.Status.Conditions {
		if c.Type == typ {
			return &c, got.Generation
		}
	}
	return nil, got.Generation
}

// TestVariantHeld: a PackageVariantSet whose template is refused by the
// CEL cost limit is synced once, held (Stalled, LimitExceeded) and not
// synced again at resyncs or after a restart on the same data directory,
// while the server keeps answering and syncing other sets; an edit of its
// spec ends the hold.
func TestVariantHeld(t *testing.T) {
	syncs := map[string]*atomic.Int64{"bad": {}, "good": {}}
	dataDir := t.TempDir() + "/data"
	opts := func(o *Options) {
		o.Variants = countingSyncer{syncs: syncs}
		o.VariantResync = 50 * time.Millisecond
	}
	ts := startServer(t, dataDir, opts)
	publish(t, ts, "base")
	if code := ts.doJSON("POST", pvsPath, variantSet("bad", costlyExpr), nil); code != 201 {
		t.Fatalf("create bad: %d", code)
	}
	waitFor(t, "the hold", func() bool {
		c, _ := setCondition(ts, "bad", "Stalled")
		return c != nil && c.Reason == variantfail.ReasonLimitExceeded
	})
	c, gen := setCondition(ts, "bad", "Stalled")
	if c.Status != metav1.ConditionTrue || c.ObservedGeneration != gen || len(c.Message) > variantfail.MaxMessageBytes ||
		!strings.Contains(c.Message, "cost limit") {
		t.Fatalf("Stalled: %+v (generation %d)", c, gen)
	}
	if r, _ := setCondition(ts, "bad", "Ready"); r == nil || r.Status != metav1.ConditionFalse || r.Reason != variantfail.ReasonLimitExceeded {
		t.Fatalf("Ready: %+v", r)
	}

	// Others are still served and synced; the held set is not synced again.
	if code := ts.doJSON("POST", pvsPath, variantSet("good", ""), nil); code != 201 {
		t.Fatalf("create good: %d", code)
	}
	waitFor(t, "the good set's downstream", func() bool { _, ok := packages(t, ts)["good-a"]; return ok })
	held := syncs["bad"].Load()
	waitFor(t, "resyncs of the good set", func() bool { return syncs["good"].Load() >= 5 })
	if n := syncs["bad"].Load(); n != held {
		t.Fatalf("the held set was synced %d more times at resyncs", n-held)
	}
	if held != 1 {
		t.Errorf("the bad set was synced %d times before it was held, want 1", held)
	}

	// A restart on the same data directory keeps the hold.
	ts.stop()
	syncs["good"].Store(0)
	syncs["bad"].Store(0)
	ts = startServer(t, dataDir, opts)
	waitFor(t, "resyncs after the restart", func() bool { return syncs["good"].Load() >= 3 })
	if n := syncs["bad"].Load(); n != 0 {
		t.Fatalf("the held set was synced %d times after the restart", n)
	}
	if c, _ := setCondition(ts, "bad", "Stalled"); c == nil || c.Reason != variantfail.ReasonLimitExceeded {
		t.Fatalf("hold lost in the restart: %+v", c)
	}

	// A change of metadata only keeps it; an edit of the spec ends it.
	var pvs porchapi.PackageVariantSet
	ts.doJSON("GET", pvsPath+"/bad", nil, &pvs)
	pvs.Labels = map[string]string{"touched": "yes"}
	if code := ts.doJSON("PUT", pvsPath+"/bad", &pvs, &pvs); code != 200 {
		t.Fatalf("relabel: %d", code)
	}
	time.Sleep(300 * time.Millisecond)
	if n := syncs["bad"].Load(); n != 0 {
		t.Fatalf("a label change ended the hold (%d syncs)", n)
	}
	pvs.Spec.Targets[0].Template = nil
	if code := ts.doJSON("PUT", pvsPath+"/bad", &pvs, nil); code != 200 {
		t.Fatalf("edit: %d", code)
	}
	waitFor(t, "the edited set to be ready", func() bool {
		c, _ := setCondition(ts, "bad", "Ready")
		return c != nil && c.Status == metav1.ConditionTrue
	})
	if c, _ := setCondition(ts, "bad", "Stalled"); c != nil && c.Status == metav1.ConditionTrue {
		t.Fatalf("still stalled after the edit: %+v", c)
	}
	if _, ok := packages(t, ts)["bad-a"]; !ok {
		t.Fatal("the edited set made no downstream")
	}
}

// TestVariantRetryHeld: with VariantRetryHeld a held set is tried again
// once per interval, not at every resync.
func TestVariantRetryHeld(t *testing.T) {
	syncs := map[string]*atomic.Int64{"bad": {}}
	ts := startServer(t, "", func(o *Options) {
		o.Variants = countingSyncer{syncs: syncs}
		o.VariantResync = 20 * time.Millisecond
		o.VariantRetryHeld = 400 * time.Millisecond
	})
	publish(t, ts, "base")
	if code := ts.doJSON("POST", pvsPath, variantSet("bad", costlyExpr), nil); code != 201 {
		t.Fatalf("create bad: %d", code)
	}
	waitFor(t, "a retry", func() bool { return syncs["bad"].Load() >= 2 })
	time.Sleep(time.Second)
	// Over 1.4 s at most about four tries, against some seventy resyncs.
	if n := syncs["bad"].Load(); n > 6 {
		t.Fatalf("held set synced %d times", n)
	}
}

// TestVariantSyncJournal: a journal left by a crash during a set's sync
// holds the set (SyncInterrupted) at the start after its second such
// crash, not after its first; a sync that returns clears the journal.
func TestVariantSyncJournal(t *testing.T) {
	syncs := map[string]*atomic.Int64{"fan": {}}
	dataDir := t.TempDir() + "/data"
	opts := func(o *Options) { o.Variants = countingSyncer{syncs: syncs} }
	ts := startServer(t, dataDir, opts)
	publish(t, ts, "base")
	if code := ts.doJSON("POST", pvsPath, variantSet("fan", ""), nil); code != 201 {
		t.Fatalf("create: %d", code)
	}
	waitFor(t, "the set to be ready", func() bool {
		c, _ := setCondition(ts, "fan", "Ready")
		return c != nil && c.Status == metav1.ConditionTrue
	})
	journal := filepath.Join(dataDir, syncJournalFile)
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Fatalf("journal after a sync that returned: %v", err)
	}
	crash := func(interrupted int) {
		t.Helper()
		ts.stop()
		data, _ := json.Marshal(syncJournal{Resource: resPackageVariantSets, Namespace: "default", Name: "fan", Generation: 1, Interrupted: interrupted})
		if err := os.WriteFile(journal, data, 0o600); err != nil {
			t.Fatal(err)
		}
		syncs["fan"].Store(0)
		ts = startServer(t, dataDir, opts)
	}

	// One crash: the set is synced again.
	crash(0)
	waitFor(t, "the sync after one crash", func() bool { return syncs["fan"].Load() >= 1 })
	if c, _ := setCondition(ts, "fan", "Stalled"); c != nil && c.Status == metav1.ConditionTrue {
		t.Fatalf("held after one crash: %+v", c)
	}

	// The second crash of the same generation holds it.
	crash(1)
	waitFor(t, "the hold", func() bool {
		c, _ := setCondition(ts, "fan", "Stalled")
		return c != nil && c.Reason == variantfail.ReasonSyncInterrupted
	})
	time.Sleep(200 * time.Millisecond)
	if n := syncs["fan"].Load(); n != 0 {
		t.Fatalf("the held set was synced %d times", n)
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Fatalf("journal kept: %v", err)
	}
}
