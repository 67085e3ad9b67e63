package variantfail

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
)

func TestReason(t *testing.T) {
	limit := &revision.LimitError{What: "template", Limit: "CostLimit", Max: 1}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{limit, ReasonLimitExceeded},
		{&revision.YAMLLimitError{File: "a.yaml", Limit: "MaxNodes", Max: 1}, ReasonLimitExceeded},
		{&variant.ExprError{Field: "f", Expr: "x", Err: variant.ErrCostLimit}, ReasonLimitExceeded},
		{&variant.ExprError{Field: "f", Expr: "x", Err: errors.New("no such overload")}, ReasonInvalidSpec},
		{&variant.ValidationError{Kind: "PackageVariant", Name: "a", Errors: []string{"bad"}}, ReasonInvalidSpec},
		{errors.Join(fmt.Errorf("one: %w", repository.ErrConflict), fmt.Errorf("two: %w", limit)), ReasonLimitExceeded},
		{fmt.Errorf("upstream: %w", repository.ErrNotFound), ""},
		{fmt.Errorf("write: %w", repository.ErrConflict), ""},
		{context.DeadlineExceeded, ""},
		{errors.New("connection refused"), ""},
	} {
		if got := Reason(tc.err); got != tc.want {
			t.Errorf("Reason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	if got := Truncate("short", 10); got != "short" {
		t.Errorf("got %q", got)
	}
	s := strings.Repeat("é", 600) // 1200 bytes
	got := Truncate(s, MaxMessageBytes)
	if len(got) > MaxMessageBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("len %d valid %v: %q", len(got), utf8.ValidString(got), got[len(got)-8:])
	}
	if got := Truncate("a\xffb", 10); got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8 kept: %q", got)
	}
	if got := Truncate("abcdef", 2); got != "" {
		t.Errorf("max below the ellipsis: %q", got)
	}
}

func FuzzTruncate(f *testing.F) {
	f.Add("hello", 3)
	f.Add(strings.Repeat("日本", 400), 1024)
	f.Add("a\xff\xfe", 2)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		got := Truncate(s, max)
		if len(got) > max || !utf8.ValidString(got) {
			t.Fatalf("Truncate(%q, %d) = %q", s, max, got)
		}
	})
}

// A hold lasts for the generation that failed and ends when the spec (the
// generation) changes.
func TestHoldHeld(t *testing.T) {
	conds := []metav1.Condition{{Type: "Other", Status: metav1.ConditionTrue, Reason: "X"}}
	Hold(&conds, 3, ReasonLimitExceeded, strings.Repeat("x", 5000), time.Now())
	if got := Held(conds, 3); got != ReasonLimitExceeded {
		t.Fatalf("Held at the failed generation = %q", got)
	}
	if got := Held(conds, 4); got != "" {
		t.Fatalf("Held after an edit = %q", got)
	}
	if len(conds) != 3 {
		t.Fatalf("conditions: %+v", conds)
	}
	for _, c := range conds {
		if len(c.Message) > MaxMessageBytes {
			t.Errorf("%s message of %d bytes", c.Type, len(c.Message))
		}
	}
	// Variant's own Stalled condition (a validation error it reports) is
	// not a hold.
	plain := []metav1.Condition{{Type: ConditionStalled, Status: metav1.ConditionTrue, Reason: variant.ReasonValidationError}}
	if got := Held(plain, 0); got != "" {
		t.Fatalf("variant's condition read as a hold: %q", got)
	}
}

func TestRetries(t *testing.T) {
	var never Retries
	now := time.Now()
	if never.Due("a", now) || never.Due("a", now.Add(time.Hour)) {
		t.Fatal("the zero Retries retried")
	}
	r := &Retries{Interval: time.Minute}
	if r.Due("a", now) {
		t.Fatal("first sight retried at once")
	}
	if r.Due("a", now.Add(30*time.Second)) {
		t.Fatal("retried before the interval")
	}
	if !r.Due("a", now.Add(61*time.Second)) {
		t.Fatal("not retried after the interval")
	}
	if r.Due("a", now.Add(62*time.Second)) {
		t.Fatal("retried twice in one interval")
	}
	r.Forget("a")
	if r.Due("a", now.Add(200*time.Second)) {
		t.Fatal("a forgotten key counts as tried")
	}
}

func TestStatus(t *testing.T) {
	long := strings.Repeat("x", 2*MaxMessageBytes)
	in := map[string]any{"downstreamTargets": []any{"a"}, "conditions": []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ok", Message: long}}}
	st, err := Status(in, 3, ReasonInvalidSpec, errors.New("bad template"))
	require.NoError(t, err)
	require.Equal(t, []any{"a"}, st["downstreamTargets"])
	conds := Conditions(st)
	require.Equal(t, ReasonInvalidSpec, Held(conds, 3))
	require.Equal(t, "bad template", meta.FindStatusCondition(conds, ConditionReady).Message)
	_, ok := st["conditions"].([]any) // storable as unstructured
	require.True(t, ok)

	st, err = Status(in, 3, "", nil)
	require.NoError(t, err)
	require.LessOrEqual(t, len(Conditions(st)[0].Message), MaxMessageBytes)
	st, err = Status(nil, 1, "", nil)
	require.NoError(t, err)
	require.Empty(t, st)
}
