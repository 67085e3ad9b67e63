package apiserver

import (
	"net/http"

	"github.com/configasdata/cad/examples/internal/gitwebhook"
	"github.com/configasdata/cad/repository"
)

// WebhookPath is where the server takes git servers' push webhooks
// (Options.WebhookSecret).
const WebhookPath = "/webhooks/git"

// withWebhook serves WebhookPath, when Options.WebhookSecret is set, before
// h (the API, whose authentication does not apply to it).
func (s *Server) withWebhook(h http.Handler) http.Handler {
	if len(s.opts.WebhookSecret) == 0 {
		return h
	}
	wh := gitwebhook.Handler(s.opts.WebhookSecret, 0, s.notifyPushed)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == WebhookPath {
			wh.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// notifyPushed tells every git repository registered with one of urls
// (normalised) that it changed (an open one at once, a closed one reads
// afresh when it opens), asks the poller to poll each of them at once
// (or for a whole pass, when too many wait), and returns their names
// (namespace/name).
func (s *Server) notifyPushed(urls map[string]bool) []string {
	var told []string
	for _, e := range s.entries("") {
		if e.spec.Git == nil || !urls[gitwebhook.NormalizeURL(e.spec.Git.Repo)] {
			continue
		}
		if e.openErr() != nil {
			continue
		}
		if repo, release, ok := s.pool.Peek(e.key); ok {
			if n, ok := repo.(repository.Notifiable); ok {
				n.Changed()
			}
			release()
		}
		told = append(told, e.ns+"/"+e.name)
		select {
		case s.pushed <- e:
		default:
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
	}
	s.log.Debug("push webhook", "repositories", told)
	return told
}
