package urlcred

import "testing"

func TestURLCredentials(t *testing.T) {
	for _, tc := range []struct {
		url, redacted, stripped string
		has                     bool
	}{
		{"https://github.com/org/repo.git", "https://github.com/org/repo.git", "https://github.com/org/repo.git", false},
		{"https://alice:s3cret@git.example/org/repo.git", "https://REDACTED@git.example/org/repo.git", "https://git.example/org/repo.git", true},
		{"https://ghp_token@git.example/r.git", "https://REDACTED@git.example/r.git", "https://git.example/r.git", true},
		{"HTTP://u:p@h/r", "HTTP://REDACTED@h/r", "HTTP://h/r", true},
		{"https://u:p%zz@h/r", "https://REDACTED@h/r", "https://h/r", true}, // does not parse as a URL
		{"https://h/r?x=a@b", "https://h/r?x=a@b", "https://h/r?x=a@b", false},
		{"ssh://git@h/r.git", "ssh://git@h/r.git", "ssh://git@h/r.git", false},
		{"ssh://git:pw@h/r.git", "ssh://REDACTED@h/r.git", "ssh://h/r.git", true},
		{"git@github.com:org/repo.git", "git@github.com:org/repo.git", "git@github.com:org/repo.git", false},
		{"/srv/git/r.git", "/srv/git/r.git", "/srv/git/r.git", false},
		{"file:///srv/r.git", "file:///srv/r.git", "file:///srv/r.git", false},
	} {
		if got := Has(tc.url); got != tc.has {
			t.Errorf("Has(%q) = %v", tc.url, got)
		}
		if got := Redact(tc.url); got != tc.redacted {
			t.Errorf("Redact(%q) = %q, want %q", tc.url, got, tc.redacted)
		}
		if got := Strip(tc.url); got != tc.stripped {
			t.Errorf("Strip(%q) = %q, want %q", tc.url, got, tc.stripped)
		}
	}
}
