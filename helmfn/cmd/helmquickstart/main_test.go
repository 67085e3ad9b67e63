package main

import (
	"bytes"
	"strings"
	"testing"
)

// helmquickstart runs its whole flow: a chart repository on loopback, a
// clone of chart version 1.0.0 with values, a local edit, discovery of
// 2.0.0, an upgrade that keeps the edit and the values and takes the
// chart's changes, and nothing newer afterwards.
func TestHelmQuickstart(t *testing.T) {
	var buf bytes.Buffer
	out = &buf
	if err := run(); err != nil {
		t.Fatalf("run: %v\n%s", err, buf.String())
	}
	got := buf.String()
	for _, want := range []string{
		"1. versions of chart web: [2.0.0 1.0.0]",
		"2. clone web 1.0.0: deployments:web-prod@v1 Draft, files [cadpackage.yaml prod/deployment_web.yaml]",
		"        type: helm\n        helm:\n",
		"          values:\n            replicas: 3\n",
		"3. local edit (label team: storefront), published: deployments:web-prod@v1/v1 Published",
		"4. discover: deployments:web-prod@v1/v1 is at chart web 1.0.0; newer: [2.0.0]",
		"5. upgrade to web 2.0.0: deployments:web-prod@v2, files [cadpackage.yaml prod/deployment_web.yaml prod/service_web.yaml]",
		"        team: storefront\n",
		"      replicas: 3\n",
		"            image: nginx:1.28\n",
		"5. published deployments:web-prod@v2/v2, locked to chart web 2.0.0",
		"6. discover: deployments:web-prod@v2/v2 is at chart web 2.0.0; newer: []",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
