package helmfn_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/helmfn"
	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// TestHostileYAMLRefused: an alias bomb in a values file of the package, or
// 10,001 documents written by a chart's template, fail the function with
// the revision.YAMLLimitError's message (naming the file or "rendered
// manifests") and leaves the items untouched.
func TestHostileYAMLRefused(t *testing.T) {
	const cfg = `apiVersion: fn.kpt.dev/v1alpha1
kind: RenderHelmChart
metadata:
  name: demo
helmGlobals:
  chartHome: charts
helmCharts:
- chartArgs:
    name: hello
  templateOptions:
    releaseName: loc
`
	for _, tc := range []struct {
		name, file, content, config, want string
		limit                             string
	}{
		{"values file", "values/bomb.yaml", hostileyaml.Laughs(9, 9),
			cfg + "    values:\n      valuesFiles: [values/bomb.yaml]\n", `"values/bomb.yaml"`, "MaxAliasNodes"},
		// Helm parses each template's output and refuses alias bombs
		// itself ("excessive aliasing"); what it lets through is more
		// documents than the bound.
		{"template", "charts/hello/templates/many.yaml",
			"{{- range until 10001 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{{ . }}\n{{- end }}\n",
			cfg, `"rendered manifests"`, "MaxDocuments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n"}
			for p, c := range helloChart("0.3.0") {
				m["charts/hello/"+p] = c
			}
			m[tc.file] = tc.content
			rl, err := run(t, &helmfn.Options{Files: revision.MustFiles(m)}, tc.config)
			assertFailed(t, rl, err, "YAMLLimits."+tc.limit)
			assertFailed(t, rl, err, tc.want)
		})
	}
}

// hostileIndex serves body as the index.yaml of a chart repository on a
// loopback server, or, when body is empty, an endless index (a comment
// line repeated until the client stops reading or 256 MiB are written).
// It returns the server's URL and the bytes written so far.
func hostileIndex(t *testing.T, body string) (string, *atomic.Int64) {
	t.Helper()
	var written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/index.yaml" {
			http.NotFound(w, r)
			return
		}
		if body != "" {
			n, _ := w.Write([]byte(body))
			written.Add(int64(n))
			return
		}
		line := []byte("# " + strings.Repeat("x", 1021) + "\n")
		chunk := bytes.Repeat(line, 64)
		for written.Load() < 256<<20 {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &written
}

// TestHostileIndexRefused: a chart repository whose index.yaml is an
// alias bomb, an endless stream, or over a bound the caller set is
// refused by Charts.Versions and by a render with the
// revision.YAMLLimitError (matching repository.ErrInvalidInput), naming
// the index; an endless index is read no further than the bound (plus
// what the connection buffers), not to MaxDownload; the render leaves the
// items untouched.
func TestHostileIndexRefused(t *testing.T) {
	entry := "  - apiVersion: v2\n    name: web\n    version: 1.0.%d\n    urls: [web-1.0.%d.tgz]\n"
	var ordinary strings.Builder
	ordinary.WriteString("apiVersion: v1\nentries:\n  web:\n")
	for i := range 100 {
		fmt.Fprintf(&ordinary, entry, i, i)
	}
	for _, tc := range []struct {
		name, body string
		limits     *revision.YAMLLimits
		limit      string
		max        int
		maxRead    int64 // bytes the server may write; 0 for no check
	}{
		{"alias bomb", "apiVersion: v1\n" + hostileyaml.Laughs(9, 9) + "entries: {}\n", nil, "MaxAliasNodes", revision.DefaultYAMLMaxAliasNodes, 0},
		{"endless", "", nil, "MaxBytes", revision.DefaultYAMLMaxBytes, revision.DefaultYAMLMaxBytes + 8<<20},
		{"over the caller's size", "", &revision.YAMLLimits{MaxBytes: 1 << 20}, "MaxBytes", 1 << 20, 8 << 20},
		{"over the caller's nodes", ordinary.String(), &revision.YAMLLimits{MaxNodes: 100}, "MaxNodes", 100, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, written := hostileIndex(t, tc.body)
			check := func(err error) {
				t.Helper()
				var le *revision.YAMLLimitError
				require.ErrorIs(t, err, repository.ErrInvalidInput)
				require.True(t, errors.As(err, &le), "%v is not a *revision.YAMLLimitError", err)
				assert.Equal(t, tc.limit, le.Limit)
				assert.Equal(t, tc.max, le.Max)
				assert.Equal(t, url+"/index.yaml", le.File)
				if tc.maxRead > 0 {
					assert.Less(t, written.Load(), tc.maxRead, "bytes served")
				}
			}
			opts := &helmfn.Options{IndexLimits: tc.limits}
			_, err := helmfn.NewCharts(opts).Versions(context.Background(), engine.HelmUpstream{Repo: url, Chart: "web"})
			check(err)

			written.Store(0)
			rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse(existing)}, FunctionConfig: yaml.MustParse(
				"apiVersion: fn.kpt.dev/v1alpha1\nkind: RenderHelmChart\nmetadata:\n  name: demo\nhelmCharts:\n- chartArgs:\n    name: web\n    repo: " + url + "\n")}
			err = helmfn.New(opts).Run(context.Background(), rl)
			assertFailed(t, rl, err, "YAMLLimits."+tc.limit)
		})
	}
}
