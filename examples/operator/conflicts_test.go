package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A conflict is retried soon without an error (controller-runtime would
// log it at ERROR); any other error is returned as it is.
func TestRetryConflicts(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "porch.kpt.dev", Resource: "packagerevisions"}, "x", errors.New("the object has been modified"))
	other := errors.New("repository unreachable")
	for _, tc := range []struct {
		err     error
		wantErr error
	}{{conflict, nil}, {other, other}, {nil, nil}} {
		r := retryConflicts{reconcile.Func(func(context.Context, ctrl.Request) (ctrl.Result, error) { return ctrl.Result{}, tc.err })}
		res, err := r.Reconcile(context.Background(), ctrl.Request{})
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
			t.Errorf("reconcile failing with %v: error %v, want %v", tc.err, err, tc.wantErr)
		}
		if tc.err == conflict && res.RequeueAfter != conflictRetry {
			t.Errorf("a conflict is requeued after %v, want %v", res.RequeueAfter, conflictRetry)
		}
	}
}

// -v lines are DEBUG, not slog's DEBUG+3.
func TestVerboseLevelName(t *testing.T) {
	var buf bytes.Buffer
	log := logr.FromSlogHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: levelNames}))
	log.V(1).Info("created package revision")
	log.Info("plain")
	out := buf.String()
	if strings.Contains(out, "DEBUG+") || !strings.Contains(out, "level=DEBUG msg=\"created package revision\"") || !strings.Contains(out, "level=INFO msg=plain") {
		t.Errorf("log:\n%s", out)
	}
}
