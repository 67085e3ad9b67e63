// Package urlcred finds, redacts and strips the credentials a repository
// URL may embed (https://user:password@host/...), for the reference server
// and cadctl, which never store, list or print them.
package urlcred

import "strings"

// Redacted replaces the user information of a URL in Redact's output.
const Redacted = "REDACTED"

// userinfo returns the authority's user information of u ("" when none)
// and where it ends, without relying on u parsing as a URL: a URL that
// does not parse may still carry a password.
func userinfo(u string) (info string, scheme string, start, end int) {
	i := strings.Index(u, "://")
	if i < 0 {
		return "", "", 0, 0
	}
	scheme = strings.ToLower(u[:i])
	rest := u[i+3:]
	auth := rest
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		auth = rest[:j]
	}
	at := strings.LastIndex(auth, "@")
	if at < 0 {
		return "", scheme, 0, 0
	}
	return auth[:at], scheme, i + 3, i + 3 + at + 1
}

// Has reports whether u embeds credentials: any user information in an
// http(s) URL (git servers take a lone user name as a token), a password
// in other URLs (ssh://git@host names a user, not a secret). Scp-like
// addresses (git@host:path) and paths carry none.
func Has(u string) bool {
	info, scheme, _, end := userinfo(u)
	if end == 0 {
		return false
	}
	if scheme == "http" || scheme == "https" {
		return true
	}
	return strings.Contains(info, ":")
}

// Redact returns u with the user information of a URL that Has
// credentials replaced by REDACTED.
func Redact(u string) string {
	if !Has(u) {
		return u
	}
	_, _, start, end := userinfo(u)
	return u[:start] + Redacted + "@" + u[end:]
}

// Strip returns u without the user information of a URL that Has
// credentials.
func Strip(u string) string {
	if !Has(u) {
		return u
	}
	_, _, start, end := userinfo(u)
	return u[:start] + u[end:]
}
