// Package gitwebhook reads the push webhooks of common git servers (GitHub,
// Gitea and Forgejo, GitLab, Bitbucket), so that a push makes the
// repositories it names be read at once and polls can be rare.
//
// A webhook is checked against a shared secret before anything in it is
// read: GitHub's X-Hub-Signature-256 (and Gitea's and Forgejo's
// X-Gitea-Signature / X-Forgejo-Signature), an HMAC-SHA256 of the body, or
// GitLab's X-Gitlab-Token, the secret itself; a request with none of them,
// or a wrong one, is refused. The repository URLs the payload names (its
// clone, SSH and web URLs) are compared with registered URLs in a
// normalised form (NormalizeURL).
package gitwebhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ErrUnauthorized is returned by Verify for a request without a valid
// signature or token.
var ErrUnauthorized = errors.New("gitwebhook: the request carries no valid signature or token for the webhook secret")

// DefaultMaxBodyBytes bounds a payload when Handler's maxBody is 0: git
// servers send up to 25 MB for a push of many commits; only the
// repository's fields are read.
const DefaultMaxBodyBytes = 25 << 20

// Verify checks that body came with a valid signature or token of secret
// in r's headers. It returns ErrUnauthorized otherwise.
func Verify(r *http.Request, body, secret []byte) error {
	if len(secret) == 0 {
		return ErrUnauthorized
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	want := mac.Sum(nil)
	for _, h := range []string{"X-Hub-Signature-256", "X-Gitea-Signature", "X-Forgejo-Signature"} {
		v := r.Header.Get(h)
		if v == "" {
			continue
		}
		got, err := hex.DecodeString(strings.TrimPrefix(v, "sha256="))
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
		return ErrUnauthorized
	}
	if v := r.Header.Get("X-Gitlab-Token"); v != "" {
		if subtle.ConstantTimeCompare([]byte(v), secret) == 1 {
			return nil
		}
	}
	return ErrUnauthorized
}

// RepositoryURLs returns the repository URLs a push payload names, as the
// payloads of GitHub, Gitea, Forgejo, GitLab and Bitbucket carry them. It
// returns an error for a body that is not a JSON object.
func RepositoryURLs(body []byte) ([]string, error) {
	var p struct {
		Repository map[string]any `json:"repository"`
		Project    map[string]any `json:"project"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("gitwebhook: the payload is not a JSON object: %w", err)
	}
	var out []string
	add := func(m map[string]any, keys ...string) {
		for _, k := range keys {
			if s, ok := m[k].(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	add(p.Repository, "clone_url", "ssh_url", "git_url", "html_url", "url", "git_http_url", "git_ssh_url", "homepage")
	add(p.Project, "git_http_url", "git_ssh_url", "web_url", "http_url", "ssh_url")
	if links, ok := p.Repository["links"].(map[string]any); ok { // Bitbucket
		if html, ok := links["html"].(map[string]any); ok {
			add(html, "href")
		}
	}
	return out, nil
}

// NormalizeURL returns the form in which two URLs of one repository
// compare equal: the host (lower case, without user and default port) and
// the path, without scheme, a trailing ".git" or "/". An scp-like
// address (git@host:owner/repo.git) normalises as its ssh:// form.
func NormalizeURL(raw string) string {
	s := strings.TrimSpace(raw)
	if !strings.Contains(s, "://") {
		if at := strings.Index(s, "@"); at >= 0 && strings.Contains(s[at:], ":") {
			host, path, _ := strings.Cut(s[at+1:], ":")
			s = "ssh://" + host + "/" + strings.TrimPrefix(path, "/")
		} else {
			return strings.TrimSuffix(strings.TrimSuffix(s, "/"), ".git")
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	host := strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" && p != "443" && p != "80" && p != "22" {
		host += ":" + p
	}
	path := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), ".git")
	return host + path
}

// Handler serves push webhooks: it verifies each against secret, reads the
// repository URLs it names (at most maxBody bytes, DefaultMaxBodyBytes
// when 0) and calls notify with their normalised forms; notify returns
// the names of the repositories it told, which the response lists as
// JSON ({"repositories": [...]}). Answers: 405 for a method other than
// POST, 401 for a bad signature, 413 for a body over the bound, 400 for a
// payload that is not JSON, 200 otherwise (also when no repository
// matched, so that the git server does not retry).
func Handler(secret []byte, maxBody int64, notify func(urls map[string]bool) []string) http.Handler {
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyBytes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST a push webhook", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			http.Error(w, "reading the payload: "+err.Error(), http.StatusBadRequest)
			return
		}
		if int64(len(body)) > maxBody {
			http.Error(w, fmt.Sprintf("the payload is larger than %d bytes", maxBody), http.StatusRequestEntityTooLarge)
			return
		}
		if err := Verify(r, body, secret); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		raw, err := RepositoryURLs(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		urls := map[string]bool{}
		for _, u := range raw {
			urls[NormalizeURL(u)] = true
		}
		told := notify(urls)
		if told == nil {
			told = []string{}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"repositories": told})
	})
}
