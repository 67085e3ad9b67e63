package revision

import (
	"errors"
	"slices"
	"testing"
)

func TestLifecycles(t *testing.T) {
	want := []Lifecycle{LifecycleDraft, LifecycleProposed, LifecyclePublished, LifecycleDeletionProposed}
	if got := Lifecycles(); !slices.Equal(got, want) {
		t.Errorf("Lifecycles() = %v", got)
	}
	for _, l := range want {
		if !l.Valid() {
			t.Errorf("%q not Valid", l)
		}
	}
	for _, l := range []Lifecycle{"", "draft", "Deleted", "Published "} {
		if l.Valid() {
			t.Errorf("%q Valid", l)
		}
	}
	for l, published := range map[Lifecycle]bool{
		LifecycleDraft: false, LifecycleProposed: false, LifecyclePublished: true, LifecycleDeletionProposed: true, "": false,
	} {
		if l.IsPublished() != published {
			t.Errorf("%q.IsPublished() = %v", l, !published)
		}
	}
}

func TestCheckTransitionEveryPair(t *testing.T) {
	allowed := map[[2]Lifecycle]bool{}
	for _, tr := range Transitions() {
		allowed[[2]Lifecycle{tr.From, tr.To}] = true
		if tr.Verb == "" {
			t.Errorf("transition %v has no verb", tr)
		}
	}
	if len(allowed) != 5 {
		t.Errorf("%d transitions, want Porch's 5", len(allowed))
	}
	states := append(Lifecycles(), "", "Unknown")
	for _, from := range states {
		for _, to := range states {
			err := CheckTransition(from, to)
			if allowed[[2]Lifecycle{from, to}] {
				if err != nil {
					t.Errorf("CheckTransition(%q, %q) = %v, want nil", from, to, err)
				}
				continue
			}
			var te *TransitionError
			if !errors.As(err, &te) || te.From != from || te.To != to || !errors.Is(err, ErrInvalidTransition) {
				t.Errorf("CheckTransition(%q, %q) = %#v, want a *TransitionError matching ErrInvalidTransition", from, to, err)
			}
			if errors.Is(err, ErrInvalid) {
				t.Errorf("transition error matches ErrInvalid too")
			}
		}
	}
}

func TestTransitionsPorch(t *testing.T) {
	want := []Transition{
		{LifecycleDraft, LifecycleProposed, "propose"},
		{LifecycleProposed, LifecycleDraft, "reject"},
		{LifecycleProposed, LifecyclePublished, "approve"},
		{LifecyclePublished, LifecycleDeletionProposed, "propose-delete"},
		{LifecycleDeletionProposed, LifecyclePublished, "reject"},
	}
	got := Transitions()
	if !slices.Equal(got, want) {
		t.Errorf("Transitions() = %v", got)
	}
	got[0].To = LifecyclePublished
	if err := CheckTransition(LifecycleDraft, LifecyclePublished); err == nil {
		t.Error("changing the returned slice changed the rules")
	}
	if msg := CheckTransition(LifecycleDraft, LifecyclePublished).Error(); msg != `invalid lifecycle transition from "Draft" to "Published"` {
		t.Errorf("message %q", msg)
	}
}
