package main

import (
	"bytes"
	"strings"
	"testing"
)

// The quickstart runs its whole flow end to end: render on save, approval
// as Porch lays it out in git, clone, upstream v2, discovery and an
// upgrade that keeps the local change and takes the upstream one.
func TestQuickstart(t *testing.T) {
	var buf bytes.Buffer
	out = &buf
	if err := run(false); err != nil {
		t.Fatalf("run: %v\n%s", err, buf.String())
	}
	got := buf.String()
	for _, want := range []string{
		"1. init:",
		"deployment.yaml metadata.labels.tier: frontend",
		"3. propose and approve:       blueprints:apps/hello@v1/v1              Published",
		"4. clone:                     deployments:hello-prod@v1                Draft",
		"6. discover:  deployments:hello-prod@v1/v1 tracks blueprints:apps/hello/v1; newer: blueprints:apps/hello@v2/v2",
		"deployment.yaml spec.replicas: 3",
		"image: nginx:1.28",
		"6. propose and approve:       deployments:hello-prod@v2/v2             Published",
		"refs/tags/apps/hello/v2",
		"refs/tags/hello-prod/v2",
		"Approving package revision hello-prod/2 (merge of 2 parents)",
		"Missing   capability tls-certificates (implicit): nothing provides it",
		"7. approve refused: approve deployments:hello-prod@v3: readiness gates not satisfied",
		"7. clone the provider:        deployments:certs@deps                   Draft",
		"Satisfied capability tls-certificates (implicit): deployments:certs@deps/v1",
		"7. propose and approve:       deployments:hello-prod@v3/v3             Published",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "refs/heads/drafts/") || strings.Contains(got, "refs/heads/proposed/") {
		t.Errorf("draft or proposal branches left after approval:\n%s", got)
	}
}
