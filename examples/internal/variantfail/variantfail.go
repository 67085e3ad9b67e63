// Package variantfail decides when a failed sync of a PackageVariant or
// PackageVariantSet holds the object instead of being retried, and records
// the hold in the object's status conditions. The reference server and the
// operator share it, so that a stored object whose sync fails its bounds
// is synced once, marked failed and skipped on later syncs (and after a
// restart) until its spec changes, instead of being retried in a loop that
// does the refused work again and again.
//
// A failure holds the object when retrying it unchanged fails the same
// way: an error matching revision.ErrLimit or variant.ErrCostLimit (reason
// ReasonLimitExceeded), or one matching revision.ErrInvalid (reason
// ReasonInvalidSpec: a template that does not compile, a spec that does
// not validate, content the engine refuses). A caller that finds that its
// process ended during the same sync more than once (a bound that does
// not hold) holds the object with ReasonSyncInterrupted. Every other
// failure (a conflict, an upstream not yet published, a repository not
// open, a cancelled context) is transient: the caller retries it with its
// usual backoff.
//
// A hold is two conditions in Porch's shape, Stalled True and Ready False,
// both with the hold's reason, a message bounded to MaxMessageBytes and
// ObservedGeneration set to the generation that failed. Held reads them
// back: the hold lasts while the object's generation is that one, so an
// edit of the spec (which bumps metadata.generation) ends it, and nothing
// else does, except a caller's own Retries interval.
package variantfail

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
)

// The condition types of a hold, as Porch's PackageVariant controller
// names them.
const (
	ConditionStalled = variant.ConditionStalled
	ConditionReady   = variant.ConditionReady
)

// The reasons of a hold.
const (
	// ReasonLimitExceeded: the sync was refused by a resource bound
	// (revision.ErrLimit, variant.ErrCostLimit).
	ReasonLimitExceeded = "LimitExceeded"
	// ReasonInvalidSpec: the object, or what it makes, is invalid
	// (revision.ErrInvalid).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonSyncInterrupted: the process ended during the object's sync
	// more than once, as it does when an unbounded allocation kills it.
	// Reason never returns it: a caller that keeps a record of the sync
	// in progress (the reference server, in its data directory) finds
	// the interrupted syncs at its next start and records it with Hold.
	ReasonSyncInterrupted = "SyncInterrupted"
)

// MaxMessageBytes bounds the message of every condition this package
// writes or bounds (Bound): an error that quotes a template or a file is
// cut there, at a UTF-8 boundary, so that a status never grows with the
// input that failed.
const MaxMessageBytes = 1024

// Reason returns the reason a sync that failed with err holds its object
// for, ReasonLimitExceeded or ReasonInvalidSpec, or "" when err is nil or
// transient (retry it).
func Reason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, revision.ErrLimit), errors.Is(err, variant.ErrCostLimit):
		return ReasonLimitExceeded
	case errors.Is(err, revision.ErrInvalid):
		return ReasonInvalidSpec
	}
	return ""
}

// Truncate returns s cut to at most max bytes of valid UTF-8: invalid
// bytes are replaced first, and a cut string ends with "…" (within max).
func Truncate(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	if max < len(ellipsis) {
		return ""
	}
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// Hold records in conds that the object at generation gen is held for
// reason: Stalled True and Ready False, both with reason, msg (cut to
// MaxMessageBytes) and ObservedGeneration gen. Other conditions are kept.
func Hold(conds *[]metav1.Condition, gen int64, reason, msg string, now time.Time) {
	msg = Truncate(msg, MaxMessageBytes)
	for _, c := range []metav1.Condition{
		{Type: ConditionStalled, Status: metav1.ConditionTrue},
		{Type: ConditionReady, Status: metav1.ConditionFalse},
	} {
		c.Reason, c.Message, c.ObservedGeneration = reason, msg, gen
		c.LastTransitionTime = metav1.NewTime(now)
		meta.SetStatusCondition(conds, c)
	}
}

// Held returns the reason conds hold an object at generation gen for, or
// "" when they do not: a Stalled True condition with a hold reason
// (ReasonLimitExceeded, ReasonInvalidSpec or ReasonSyncInterrupted) and
// ObservedGeneration gen.
func Held(conds []metav1.Condition, gen int64) string {
	c := meta.FindStatusCondition(conds, ConditionStalled)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != gen {
		return ""
	}
	switch c.Reason {
	case ReasonLimitExceeded, ReasonInvalidSpec, ReasonSyncInterrupted:
		return c.Reason
	}
	return ""
}

// Bound cuts the message of every condition of conds to MaxMessageBytes,
// in place.
func Bound(conds []metav1.Condition) {
	for i := range conds {
		conds[i].Message = Truncate(conds[i].Message, MaxMessageBytes)
	}
}

// Conditions returns the conditions of status, a PackageVariant's or
// PackageVariantSet's status in any form that encodes to its JSON; nil
// when it has none that decode.
func Conditions(status any) []metav1.Condition {
	var st struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	if data, err := json.Marshal(status); err == nil {
		_ = json.Unmarshal(data, &st)
	}
	return st.Conditions
}

// Status returns the status to record after a sync: status (the sync's,
// in any form that encodes to its JSON; nil for none) as JSON values,
// with every condition message cut to MaxMessageBytes and, when reason is
// not empty, the hold of generation gen for err recorded (see Hold). Its
// values are those of decoded JSON, so that it can be stored as an
// unstructured object's. It returns an error when status does not encode
// or holds conditions that do not decode.
func Status(status any, gen int64, reason string, err error) (map[string]any, error) {
	st := map[string]any{}
	data, merr := json.Marshal(status)
	if merr == nil {
		merr = json.Unmarshal(data, &st)
	}
	if merr != nil {
		return nil, merr
	}
	if st == nil {
		st = map[string]any{}
	}
	var conds []metav1.Condition
	if c, ok := st["conditions"]; ok {
		raw, _ := json.Marshal(c)
		if merr := json.Unmarshal(raw, &conds); merr != nil {
			return nil, merr
		}
	}
	if reason != "" {
		Hold(&conds, gen, reason, err.Error(), time.Now())
	}
	if conds == nil {
		return st, nil
	}
	Bound(conds)
	var list []any
	raw, _ := json.Marshal(conds)
	if merr := json.Unmarshal(raw, &list); merr != nil {
		return nil, merr
	}
	st["conditions"] = list
	return st, nil
}

// Retries decides when a caller that retries held objects on an interval
// tries one again. Keys are the caller's (e.g. "resource/namespace/name").
// The zero Retries never retries. It is safe for concurrent use.
type Retries struct {
	// Interval is how long a held object stays skipped before it is
	// synced again; 0 means until its spec changes.
	Interval time.Duration

	mu   sync.Mutex
	last map[string]time.Time
}

// Due reports whether the held object key is to be synced again at now:
// never when Interval is 0, else when Interval has passed since the last
// try. The first call for a key counts as a try, so that a restart does
// not retry every held object at once.
func (r *Retries) Due(key string, now time.Time) bool {
	if r == nil || r.Interval <= 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]time.Time{}
	}
	t, ok := r.last[key]
	if !ok || now.Sub(t) < r.Interval {
		if !ok {
			r.last[key] = now
		}
		return false
	}
	r.last[key] = now
	return true
}

// Tried records that key was synced at now (it failed and is held again).
func (r *Retries) Tried(key string, now time.Time) {
	if r == nil || r.Interval <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]time.Time{}
	}
	r.last[key] = now
}

// Forget drops key: its object is no longer held (synced, edited or
// deleted).
func (r *Retries) Forget(key string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.last, key)
}
