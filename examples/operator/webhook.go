package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	"github.com/configasdata/cad/examples/internal/gitwebhook"
)

// PushedAnnotation is the annotation the push webhook (Options.WebhookAddr)
// stamps on a Repository whose URL a push names: the time of the push
// (RFC 3339). The replica that reconciles the Repository reads it again at
// once when the value changes.
const PushedAnnotation = "cad.configasdata.dev/pushed-at"

// WebhookPath is where Options.WebhookAddr takes push webhooks.
const WebhookPath = "/webhooks/git"

// webhookServer runs the push webhook on every replica, leader or not.
type webhookServer struct {
	ln  net.Listener
	srv *http.Server
}

func (w *webhookServer) NeedLeaderElection() bool { return false }

func (w *webhookServer) Start(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- w.srv.Serve(w.ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return w.srv.Shutdown(sctx)
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// addWebhook listens on Options.WebhookAddr, when set, for push webhooks.
func (op *operator) addWebhook() error {
	if op.opts.WebhookAddr == "" {
		return nil
	}
	if len(op.opts.WebhookSecret) == 0 {
		return errors.New("a push webhook needs a secret (--webhook-secret-file)")
	}
	ln, err := net.Listen("tcp", op.opts.WebhookAddr)
	if err != nil {
		return fmt.Errorf("push webhook: %w", err)
	}
	op.webhookURL = "http://" + ln.Addr().String() + WebhookPath
	mux := http.NewServeMux()
	mux.Handle(WebhookPath, gitwebhook.Handler(op.opts.WebhookSecret, 0, op.stampPushed))
	return op.mgr.Add(&webhookServer{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute}})
}

// stampPushed stamps PushedAnnotation on every git Repository registered
// with one of urls (normalised) and returns their names
// (namespace/name).
func (op *operator) stampPushed(urls map[string]bool) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var list configv1alpha1.RepositoryList
	var opts []client.ListOption
	if op.opts.Namespace != "" {
		opts = append(opts, client.InNamespace(op.opts.Namespace))
	}
	c := op.mgr.GetClient()
	if err := c.List(ctx, &list, opts...); err != nil {
		op.mgr.GetLogger().Error(err, "push webhook: listing Repositories")
		return nil
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	var told []string
	for i := range list.Items {
		r := &list.Items[i]
		if r.Spec.Git == nil || !urls[gitwebhook.NormalizeURL(r.Spec.Git.Repo)] {
			continue
		}
		patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, PushedAnnotation, now))
		if err := c.Patch(ctx, r, client.RawPatch(types.MergePatchType, patch)); err != nil {
			op.mgr.GetLogger().Error(err, "push webhook: stamping the Repository", "namespace", r.Namespace, "name", r.Name)
			continue
		}
		told = append(told, r.Namespace+"/"+r.Name)
	}
	return told
}

// pushed tells the open repository of obj that it changed when obj's
// PushedAnnotation is new since the last reconcile.
func (s *repoSet) pushed(obj *configv1alpha1.Repository) {
	v := obj.Annotations[PushedAnnotation]
	if v == "" {
		return
	}
	nn := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	s.mu.Lock()
	if s.lastPush == nil {
		s.lastPush = map[types.NamespacedName]string{}
	}
	seen := s.lastPush[nn] == v
	s.lastPush[nn] = v
	s.mu.Unlock()
	if !seen {
		s.changed(nn.Namespace, nn.Name)
	}
}
