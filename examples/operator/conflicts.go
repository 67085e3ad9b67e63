package main

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// conflictRetry is how soon an object whose write met a newer version is
// reconciled again. The newer version's own watch event usually comes
// first.
const conflictRetry = 200 * time.Millisecond

// retryConflicts is a reconciler that treats an optimistic-concurrency
// conflict (409: the object changed since it was read) as what it is in a
// controller, an ordinary retry logged at V(1), instead of an error that
// controller-runtime logs at ERROR with a stack trace.
type retryConflicts struct{ inner reconcile.Reconciler }

func (r retryConflicts) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.inner.Reconcile(ctx, req)
	if err != nil && apierrors.IsConflict(err) {
		ctrl.LoggerFrom(ctx).V(1).Info("the object changed while it was reconciled; again with its new version", "conflict", err.Error())
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}
