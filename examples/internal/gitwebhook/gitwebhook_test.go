package gitwebhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

func sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func TestNormalizeURL(t *testing.T) {
	same := [][]string{
		{"https://github.com/Org/repo.git", "https://github.com/Org/repo", "git@github.com:Org/repo.git", "ssh://git@github.com/Org/repo", "https://user@GitHub.com:443/Org/repo/"},
		{"http://127.0.0.1:8080/git/r.git", "http://127.0.0.1:8080/git/r"},
	}
	for _, group := range same {
		for _, u := range group[1:] {
			if NormalizeURL(u) != NormalizeURL(group[0]) {
				t.Errorf("%s → %q, %s → %q", u, NormalizeURL(u), group[0], NormalizeURL(group[0]))
			}
		}
	}
	if NormalizeURL("https://github.com/org/a") == NormalizeURL("https://github.com/org/b") {
		t.Error("two repositories compare equal")
	}
	if NormalizeURL("http://127.0.0.1:8080/r") == NormalizeURL("http://127.0.0.1:9090/r") {
		t.Error("two ports compare equal")
	}
}

func TestRepositoryURLs(t *testing.T) {
	for name, payload := range map[string]string{
		"github":    `{"ref":"refs/heads/main","repository":{"clone_url":"https://h/o/r.git","ssh_url":"git@h:o/r.git","html_url":"https://h/o/r"}}`,
		"gitlab":    `{"object_kind":"push","project":{"git_http_url":"https://h/o/r.git","git_ssh_url":"git@h:o/r.git"},"repository":{"url":"git@h:o/r.git"}}`,
		"bitbucket": `{"push":{},"repository":{"links":{"html":{"href":"https://h/o/r"}}}}`,
	} {
		urls, err := RepositoryURLs([]byte(payload))
		if err != nil || len(urls) == 0 {
			t.Fatalf("%s: %v %v", name, urls, err)
		}
		for _, u := range urls {
			if NormalizeURL(u) != "h/o/r" {
				t.Errorf("%s: %s → %s", name, u, NormalizeURL(u))
			}
		}
	}
	if _, err := RepositoryURLs([]byte("[1]")); err == nil {
		t.Error("a JSON array accepted")
	}
}

func TestHandler(t *testing.T) {
	secret := []byte("s3cret")
	var got map[string]bool
	h := Handler(secret, 1<<10, func(urls map[string]bool) []string {
		got = urls
		return []string{"default/r"}
	})
	body := []byte(`{"repository":{"clone_url":"https://h/o/r.git"}}`)
	do := func(body []byte, hdr map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/webhooks/git", bytes.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for name, hdr := range map[string]map[string]string{
		"github": {"X-Hub-Signature-256": sign(secret, body)},
		"gitea":  {"X-Gitea-Signature": sign(secret, body)[len("sha256="):]},
		"gitlab": {"X-Gitlab-Token": "s3cret"},
	} {
		got = nil
		rec := do(body, hdr)
		if rec.Code != http.StatusOK || !got["h/o/r"] {
			t.Fatalf("%s: %d %s %v", name, rec.Code, rec.Body, got)
		}
		var resp struct{ Repositories []string }
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || len(resp.Repositories) != 1 {
			t.Fatalf("%s: %s", name, rec.Body)
		}
	}
	for name, hdr := range map[string]map[string]string{
		"none":           {},
		"wrong hmac":     {"X-Hub-Signature-256": sign([]byte("other"), body)},
		"wrong token":    {"X-Gitlab-Token": "guess"},
		"not hex":        {"X-Hub-Signature-256": "sha256=zz"},
		"signed another": {"X-Hub-Signature-256": sign(secret, []byte("{}"))},
	} {
		got = nil
		if rec := do(body, hdr); rec.Code != http.StatusUnauthorized || got != nil {
			t.Errorf("%s: %d, notified %v", name, rec.Code, got)
		}
	}
	if rec := do(bytes.Repeat([]byte(" "), 2<<10), nil); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversize: %d", rec.Code)
	}
	if rec := do([]byte("nope"), map[string]string{"X-Gitlab-Token": "s3cret"}); rec.Code != http.StatusBadRequest {
		t.Errorf("not JSON: %d", rec.Code)
	}
	req := httptest.NewRequest("GET", "/webhooks/git", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", rec.Code)
	}
	if Verify(req, body, nil) == nil {
		t.Error("an empty secret verifies")
	}
}

func ExampleNormalizeURL() {
	fmt.Println(NormalizeURL("git@github.com:nephio-project/catalog.git"))
	fmt.Println(NormalizeURL("https://github.com/nephio-project/catalog"))
	// Output:
	// github.com/nephio-project/catalog
	// github.com/nephio-project/catalog
}
