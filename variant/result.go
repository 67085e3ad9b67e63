package variant

import (
	"fmt"
	"strings"
	"time"

	"github.com/configasdata/cad/revision"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Action says what a sync did to a downstream.
type Action string

// Actions, from the most to the least significant.
const (
	// ActionCreated: a new downstream draft cloned from the upstream.
	ActionCreated Action = "created"
	// ActionUpgraded: a new draft moving the downstream to the new
	// upstream revision.
	ActionUpgraded Action = "upgraded"
	// ActionCopied: a new draft copied from the published downstream,
	// because it differed from the desired mutations.
	ActionCopied Action = "copied"
	// ActionUpdated: an existing draft's content, or a revision's
	// metadata or lifecycle, was changed in place.
	ActionUpdated Action = "updated"
	// ActionProviderCloned: a provider of what the downstream requires was
	// cloned into the downstream repository as a new draft (see
	// Dependencies); the Change's key is the provider's draft.
	ActionProviderCloned Action = "provider-cloned"
	// ActionAdopted: an existing revision was taken over (adoptExisting).
	ActionAdopted Action = "adopted"
	// ActionDeleted: a draft was deleted, or a published revision proposed
	// for deletion.
	ActionDeleted Action = "deleted"
	// ActionOrphaned: a revision was released: the variant no longer owns
	// it, and it stays as it is.
	ActionOrphaned Action = "orphaned"
	// ActionUnchanged: nothing was written.
	ActionUnchanged Action = "unchanged"
)

var actionRank = map[Action]int{
	ActionCreated: 0, ActionUpgraded: 1, ActionCopied: 2, ActionUpdated: 3,
	ActionProviderCloned: 4, ActionAdopted: 5, ActionDeleted: 6, ActionOrphaned: 7,
	ActionUnchanged: 8,
}

// Change is one write of a sync: what was done to which revision.
type Change struct {
	Action Action
	Key    revision.Key
}

// Result is what Sync or Remove did for one PackageVariant. It is a plain
// value owned by the caller.
type Result struct {
	// Variant is the PackageVariant's "<namespace>/<name>", or "<name>".
	Variant string
	// Action is the most significant thing done (see Action), or
	// ActionUnchanged.
	Action Action
	// Key is the downstream revision the variant now stands for: the draft
	// it created or updated, or the published revision it found up to date;
	// zero after a Remove, or when the sync failed before finding one.
	Key revision.Key
	// Changes lists every write in order.
	Changes []Change
	// Targets are the downstream revisions the variant owns after the sync
	// (the drafts it keeps, or its latest published revision).
	Targets []revision.Key
	// Conditions are Porch's Stalled and Ready conditions, with reasons.
	Conditions []metav1.Condition
	// Warnings are problems that did not fail the sync, such as a binding
	// that names no binding point of the package.
	Warnings []string
}

// Ready reports whether the Ready condition is True.
func (r *Result) Ready() bool { return meta.IsStatusConditionTrue(r.Conditions, ConditionReady) }

// Status returns the PackageVariantStatus that records r: its conditions
// and its downstream targets. Pass it back in the PackageVariant on the
// next sync so that a change of spec.downstream cleans up after itself.
func (r *Result) Status() PackageVariantStatus {
	st := PackageVariantStatus{Conditions: append([]metav1.Condition(nil), r.Conditions...)}
	for _, k := range r.Targets {
		st.DownstreamTargets = append(st.DownstreamTargets, DownstreamTarget{
			Name: PackageRevisionName(k), Repository: k.Repository, Package: k.Package, WorkspaceName: k.Workspace,
		})
	}
	return st
}

// String formats r on one line: the variant, the action, the key and, when
// not ready, the Ready condition's reason and message.
func (r *Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", r.Variant, r.Action)
	if r.Key != (revision.Key{}) {
		fmt.Fprintf(&b, " %s", r.Key)
	}
	if c := meta.FindStatusCondition(r.Conditions, ConditionReady); c != nil && c.Status != metav1.ConditionTrue {
		fmt.Fprintf(&b, " (not ready: %s: %s)", c.Reason, c.Message)
	}
	return b.String()
}

func (r *Result) record(a Action, k revision.Key) {
	r.Changes = append(r.Changes, Change{Action: a, Key: k})
	if r.Action == "" || actionRank[a] < actionRank[r.Action] {
		r.Action = a
	}
}

func (r *Result) setCondition(now time.Time, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&r.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(now),
	})
}

// stalled records a failure that needs a spec or upstream change.
func (r *Result) stalled(now time.Time, reason string, err error) {
	r.setCondition(now, ConditionStalled, metav1.ConditionTrue, reason, err.Error())
	r.setCondition(now, ConditionReady, metav1.ConditionFalse, ReasonError, err.Error())
}

// released records the outcome of releasing a variant's revisions (Remove,
// a set's removal): unchanged when nothing was written, failed with err,
// or Ready with msg.
func (r *Result) released(now time.Time, err error, msg string) {
	if r.Action == "" {
		r.Action = ActionUnchanged
	}
	if err != nil {
		r.failed(now, err)
	} else {
		r.setCondition(now, ConditionReady, metav1.ConditionTrue, ReasonDeleted, msg)
	}
}

// failed records a failure of the sync itself.
func (r *Result) failed(now time.Time, err error) {
	r.setCondition(now, ConditionReady, metav1.ConditionFalse, ReasonError, err.Error())
}
