package repotest

import (
	"errors"
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// testReadiness checks readiness gates and conditions kept as revision
// data (revision.Metadata.ReadinessGates and Conditions, through
// repository.MetadataWriter): settable on Drafts and Proposed revisions
// without touching their files, part of the Version so that an approval
// given the Version it checked fails when a condition changed since, and
// frozen once published.
func (s *suite) testReadiness(t *testing.T) {
	r := s.open(t)
	mw, ok := r.(repository.MetadataWriter)
	if !ok {
		t.Skip("the backend keeps no revision metadata")
	}
	gate := revision.ReadinessGate{ConditionType: "example.com/checked"}
	cond := func(status revision.ConditionStatus) revision.Condition {
		return revision.Condition{Type: gate.ConditionType, Status: status, Reason: "Checker", Message: "checked by a test"}
	}
	withCond := func(md revision.Metadata, status revision.ConditionStatus) revision.Metadata {
		return md.WithCondition(cond(status))
	}
	set := func(t *testing.T, r repository.Repository, k revision.Key, md revision.Metadata, version string) revision.PackageRevision {
		t.Helper()
		pr, err := repository.SetMetadata(ctx(t), r, k, md, repository.UpdateOptions{Version: version})
		if err != nil {
			t.Fatalf("SetMetadata(%s): %v", k, err)
		}
		if !pr.Meta().Metadata.Equal(md) {
			t.Fatalf("SetMetadata(%s) returned metadata %+v, want %+v", k, pr.Meta().Metadata, md)
		}
		return pr
	}
	get := func(t *testing.T, r repository.Repository, k revision.Key) revision.Meta {
		t.Helper()
		pr, err := r.Get(ctx(t), k)
		if err != nil {
			t.Fatalf("Get(%s): %v", k, err)
		}
		return pr.Meta()
	}
	gated := revision.Metadata{Labels: map[string]string{"team": "a"}, ReadinessGates: []revision.ReadinessGate{gate}}

	t.Run("DraftAndProposed", func(t *testing.T) {
		d := createDraft(t, r, "ready/a", "ws", "1")
		before := files(t, d)
		pr := set(t, r, key("ready/a", "ws"), withCond(gated, revision.ConditionFalse), d.Meta().Version)
		if pr.Meta().Version == d.Meta().Version {
			t.Fatal("setting readiness did not change the Version")
		}
		// An edit of the draft keeps the revision's readiness.
		dr, err := r.OpenDraft(ctx(t), key("ready/a", "ws"))
		if err != nil {
			t.Fatal(err)
		}
		if err := dr.SetFile("extra.yaml", []byte("a: 1\n")); err != nil {
			t.Fatal(err)
		}
		edited, err := dr.Commit(ctx(t), revision.CommitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := edited.Meta().Metadata; !got.Equal(withCond(gated, revision.ConditionFalse)) {
			t.Fatalf("an edit lost the readiness: %+v", got)
		}
		prop := move(t, r, key("ready/a", "ws"), revision.LifecycleProposed)
		propFiles := files(t, prop)
		// A checker sets the condition on the proposal: its files and
		// content id stay, its Version changes.
		checked := set(t, r, key("ready/a", "ws"), withCond(gated, revision.ConditionTrue), prop.Meta().Version)
		if checked.Meta().Lifecycle != revision.LifecycleProposed {
			t.Fatalf("setting a condition moved the proposal to %s", checked.Meta().Lifecycle)
		}
		if checked.Meta().Version == prop.Meta().Version {
			t.Fatal("setting a condition on a proposal did not change its Version")
		}
		if checked.Meta().Commit != prop.Meta().Commit {
			t.Fatalf("setting a condition changed the content id %q to %q", prop.Meta().Commit, checked.Meta().Commit)
		}
		if got := files(t, checked); !got.Equal(propFiles) {
			t.Fatal("setting a condition on a proposal changed its files")
		}
		if propFiles.Equal(before) {
			t.Fatal("test setup: the edit did not change the files")
		}
		if got := get(t, r, key("ready/a", "ws")); !got.Metadata.Equal(withCond(gated, revision.ConditionTrue)) {
			t.Fatalf("Get after setting a condition: %+v", got.Metadata)
		}
	})

	t.Run("ApproveVersionGuard", func(t *testing.T) {
		createDraft(t, r, "ready/b", "ws", "1")
		prop := move(t, r, key("ready/b", "ws"), revision.LifecycleProposed)
		ready := set(t, r, key("ready/b", "ws"), withCond(gated, revision.ConditionTrue), prop.Meta().Version)
		// The condition flips after the approver read the revision: the
		// approval with the Version it read must fail and publish nothing.
		set(t, r, key("ready/b", "ws"), withCond(gated, revision.ConditionFalse), ready.Meta().Version)
		_, err := r.UpdateLifecycle(ctx(t), key("ready/b", "ws"), revision.LifecyclePublished, repository.UpdateOptions{Version: ready.Meta().Version})
		wantErr(t, err, repository.ErrConflict, "approval with the Version read before a condition changed")
		if got := get(t, r, key("ready/b", "ws")); got.Lifecycle != revision.LifecycleProposed {
			t.Fatalf("after a refused approval the revision is %s", got.Lifecycle)
		}
		cur := set(t, r, key("ready/b", "ws"), withCond(gated, revision.ConditionTrue), "")
		pub, err := r.UpdateLifecycle(ctx(t), key("ready/b", "ws"), revision.LifecyclePublished, repository.UpdateOptions{Version: cur.Meta().Version})
		if err != nil {
			t.Fatalf("approval with the current Version: %v", err)
		}
		if got := pub.Meta().Metadata; !got.Equal(withCond(gated, revision.ConditionTrue)) {
			t.Fatalf("the published revision has readiness %+v", got)
		}
	})

	t.Run("PublishedFrozen", func(t *testing.T) {
		createDraft(t, r, "ready/c", "ws", "1")
		prop := move(t, r, key("ready/c", "ws"), revision.LifecycleProposed)
		md := withCond(gated, revision.ConditionTrue)
		set(t, r, key("ready/c", "ws"), md, prop.Meta().Version)
		pub := move(t, r, key("ready/c", "ws"), revision.LifecyclePublished)
		k := pub.Meta().Key
		for _, change := range []revision.Metadata{
			withCond(gated, revision.ConditionFalse),
			{Labels: md.Labels, Conditions: md.Conditions},
			{Labels: md.Labels, ReadinessGates: md.ReadinessGates},
			{},
		} {
			_, err := mw.SetMetadata(ctx(t), k, change, repository.UpdateOptions{})
			wantErr(t, err, repository.ErrImmutable, "changing the readiness of a published revision")
		}
		if got := get(t, r, k); !got.Metadata.Equal(md) || got.Version != pub.Meta().Version {
			t.Fatalf("a refused change left metadata %+v, version %s (was %s)", got.Metadata, got.Version, pub.Meta().Version)
		}
		// Labels and annotations stay mutable.
		relabelled := md.Clone()
		relabelled.Labels = map[string]string{"team": "b"}
		set(t, r, k, relabelled, "")
		dp := move(t, r, k, revision.LifecycleDeletionProposed)
		_, err := mw.SetMetadata(ctx(t), dp.Meta().Key, withCond(relabelled, revision.ConditionUnknown), repository.UpdateOptions{})
		wantErr(t, err, repository.ErrImmutable, "changing the readiness of a revision proposed for deletion")
	})

	t.Run("Invalid", func(t *testing.T) {
		d := createDraft(t, r, "ready/d", "ws", "1")
		for what, md := range map[string]revision.Metadata{
			"a gate without a type":      {ReadinessGates: []revision.ReadinessGate{{}}},
			"a gate twice":               {ReadinessGates: []revision.ReadinessGate{gate, gate}},
			"a condition without a type": {Conditions: []revision.Condition{{Status: revision.ConditionTrue}}},
			"a condition status Yes":     {Conditions: []revision.Condition{{Type: "x", Status: "Yes"}}},
			"a condition twice":          {Conditions: []revision.Condition{cond(revision.ConditionTrue), cond(revision.ConditionFalse)}},
		} {
			_, err := mw.SetMetadata(ctx(t), key("ready/d", "ws"), md, repository.UpdateOptions{})
			wantErr(t, err, repository.ErrInvalidInput, "SetMetadata with "+what)
			var me *revision.MetadataError
			if !errors.As(err, &me) {
				t.Fatalf("SetMetadata with %s: %v is not a *revision.MetadataError", what, err)
			}
		}
		if got := get(t, r, key("ready/d", "ws")); got.Version != d.Meta().Version {
			t.Fatal("a refused SetMetadata changed the revision")
		}
	})

	// An approval and a condition change racing from the same read: exactly
	// one wins, and a published revision never carries a False condition.
	t.Run("RaceApproveCondition", func(t *testing.T) {
		other := r
		if s.h.Reopen != nil {
			other = s.h.Reopen(t, r)
			t.Cleanup(func() { _ = other.Close() })
		}
		for i := range 3 {
			ws := "ws" + string(rune('a'+i))
			createDraft(t, r, "ready/e", ws, "1")
			prop := move(t, r, key("ready/e", ws), revision.LifecycleProposed)
			ready := set(t, r, key("ready/e", ws), withCond(gated, revision.ConditionTrue), prop.Meta().Version)
			v := ready.Meta().Version
			errs := race(2, func(i int) error {
				if i == 0 {
					_, err := r.UpdateLifecycle(ctx(t), key("ready/e", ws), revision.LifecyclePublished, repository.UpdateOptions{Version: v})
					return err
				}
				_, err := repository.SetMetadata(ctx(t), other, key("ready/e", ws), withCond(gated, revision.ConditionFalse), repository.UpdateOptions{Version: v})
				return err
			})
			if (errs[0] == nil) == (errs[1] == nil) {
				t.Fatalf("approve returned %v and the condition change %v; want exactly one to win", errs[0], errs[1])
			}
			for _, err := range errs {
				if err != nil && !errors.Is(err, repository.ErrConflict) {
					t.Fatalf("the loser returned %v, want ErrConflict", err)
				}
			}
			got := get(t, r, key("ready/e", ws))
			if got.Lifecycle.IsPublished() {
				if c := got.Conditions; len(c) != 1 || c[0].Status != revision.ConditionTrue {
					t.Fatalf("published with conditions %+v", c)
				}
			} else if c := got.Conditions; len(c) != 1 || c[0].Status != revision.ConditionFalse {
				t.Fatalf("the proposal has conditions %+v after the condition change won", c)
			}
		}
	})
}
