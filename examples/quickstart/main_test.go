package main

import (
	"bytes"
	"strings"
	"testing"
)

// The quickstart runs end to end and writes Porch's layout: the approval
// merge commit on main, tagged apps/hello/v1, with the kpt: annotation.
func TestQuickstart(t *testing.T) {
	var buf bytes.Buffer
	out = &buf
	if err := run(false); err != nil {
		t.Fatalf("run: %v\n%s", err, buf.String())
	}
	got := buf.String()
	for _, want := range []string{
		"published blueprints:apps/hello@ws1/v1 as revision 1",
		"refs/heads/main",
		"refs/tags/apps/hello/v1",
		"Approving package revision apps/hello/1 (merge of 2 parents)",
		`kpt:{"package":"apps/hello","workspaceName":"ws1","revision":"1"}`,
		"by Package Orchestration Service <porch@kpt.dev>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "refs/heads/drafts/") || strings.Contains(got, "refs/heads/proposed/") {
		t.Errorf("draft or proposal branches left after approval:\n%s", got)
	}
}
