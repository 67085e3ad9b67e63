package revision_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/revision"
)

// helmRecords are a Helm upstream and its lock with nested values.
func helmRecords() (*revision.Upstream, *revision.UpstreamLock) {
	return &revision.Upstream{
			Type: revision.HelmOrigin,
			Helm: &revision.Helm{Repo: "https://charts.example.com", Chart: "hello", Version: "^1.0", ReleaseName: "web", Namespace: "prod",
				Values: map[string]any{"replicas": 3, "message": "hi", "tls": true, "ratio": 0.5,
					"extra": map[string]any{"a": "one", "list": []any{"x", 2}}}},
			UpdateStrategy: revision.ResourceMerge,
		}, &revision.UpstreamLock{
			Type: revision.HelmOrigin,
			Helm: &revision.HelmLock{Repo: "https://charts.example.com", Chart: "hello", Version: "1.2.0", Digest: "0123abcd"},
		}
}

// A Helm upstream and lock written into a Kptfile read back equal, values
// included, and in kpt's shape (upstream.helm, upstreamLock.helm).
func TestKptfileHelmRoundTrip(t *testing.T) {
	up, lock := helmRecords()
	kf := revision.NewKptfile("app")
	kf.Upstream, kf.UpstreamLock = up, lock
	data, err := kf.Encode()
	require.NoError(t, err)
	for _, want := range []string{"type: helm", "  helm:\n    repo: https://charts.example.com\n    chart: hello\n", "releaseName: web", "digest: 0123abcd", "replicas: 3"} {
		assert.Contains(t, string(data), want)
	}
	back, err := revision.ParseKptfile(data)
	require.NoError(t, err)
	assert.Equal(t, up, back.Upstream)
	assert.Equal(t, lock, back.UpstreamLock)
}

// Values written by hand keep their comments when an upgrade rewrites
// only the lock; rewriting the values replaces them.
func TestKptfileHelmValuesKeepComments(t *testing.T) {
	const text = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
upstream:
  type: helm
  helm:
    repo: oci://registry.example.com/charts
    chart: hello
    version: 1.0.0
    values:
      # three for production
      replicas: 3
      extra: {a: one}
upstreamLock:
  type: helm
  helm:
    repo: oci://registry.example.com/charts
    chart: hello
    version: 1.0.0
    digest: sha256:aaaa
`
	kf, err := revision.ParseKptfile([]byte(text))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"replicas": 3, "extra": map[string]any{"a": "one"}}, kf.Upstream.Helm.Values)
	kf.UpstreamLock.Helm.Version, kf.UpstreamLock.Helm.Digest = "2.0.0", "sha256:bbbb"
	kf.Upstream.Helm.Version = "2.0.0"
	data, err := kf.Encode()
	require.NoError(t, err)
	assert.Contains(t, string(data), "# three for production")
	assert.Contains(t, string(data), "digest: sha256:bbbb")
	back, err := revision.ParseKptfile(data)
	require.NoError(t, err)
	assert.Equal(t, kf.Upstream.Helm.Values, back.Upstream.Helm.Values)

	back.Upstream.Helm.Values = map[string]any{"replicas": 5}
	data, err = back.Encode()
	require.NoError(t, err)
	again, err := revision.ParseKptfile(data)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"replicas": 5}, again.Upstream.Helm.Values)
}

// An unknown field under helm is refused, as every unknown Kptfile field is.
func TestKptfileHelmUnknownField(t *testing.T) {
	_, err := revision.ParseKptfile([]byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\nupstream:\n  type: helm\n  helm:\n    chart: x\n    valuesFile: v.yaml\n"))
	require.ErrorIs(t, err, revision.ErrInvalid)
}

// cad's package file, where a clone of a chart (which has no Kptfile)
// records its upstream, round-trips the Helm records too, and its Info
// reports them.
func TestPackageFileHelmRoundTrip(t *testing.T) {
	up, lock := helmRecords()
	pf := revision.NewPackageFile("app")
	pf.Upstream, pf.UpstreamLock = up, lock
	data, err := pf.Encode()
	require.NoError(t, err)
	assert.Contains(t, string(data), "type: helm")
	back, err := revision.ParsePackageFile(data)
	require.NoError(t, err)
	assert.Equal(t, up, back.Upstream)
	assert.Equal(t, lock, back.UpstreamLock)

	// Changing the lock only rewrites the lock.
	back.UpstreamLock = &revision.UpstreamLock{Type: revision.HelmOrigin, Helm: &revision.HelmLock{Repo: lock.Helm.Repo, Chart: "hello", Version: "1.3.0", Digest: "ff"}}
	data, err = back.Encode()
	require.NoError(t, err)
	files := revision.MustFiles(map[string]string{revision.PackageFileName: string(data)})
	info, err := revision.InfoFromFiles(files)
	require.NoError(t, err)
	assert.Equal(t, up, info.Upstream)
	assert.Equal(t, "1.3.0", info.UpstreamLock.Helm.Version)
}

// The records marshal to JSON (the API types carry them) and back; JSON
// numbers come back as float64, which is what a JSON decoder gives.
func TestHelmJSON(t *testing.T) {
	up, lock := helmRecords()
	b, err := json.Marshal(struct {
		U *revision.Upstream     `json:"upstream"`
		L *revision.UpstreamLock `json:"upstreamLock"`
	}{up, lock})
	require.NoError(t, err)
	s := string(b)
	assert.True(t, strings.Contains(s, `"helm":{"repo":"https://charts.example.com","chart":"hello","version":"^1.0"`), s)
	var back struct {
		U *revision.Upstream     `json:"upstream"`
		L *revision.UpstreamLock `json:"upstreamLock"`
	}
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, lock, back.L)
	assert.Equal(t, float64(3), back.U.Helm.Values["replicas"])
	assert.Equal(t, map[string]any{"a": "one", "list": []any{"x", float64(2)}}, back.U.Helm.Values["extra"])
}

func TestCloneValues(t *testing.T) {
	in := map[string]any{"a": map[string]any{"b": []any{1, map[string]any{"c": "d"}}}, "e": "f"}
	out := revision.CloneValues(in)
	out["a"].(map[string]any)["b"].([]any)[1].(map[string]any)["c"] = "changed"
	out["e"] = "changed"
	if in["e"] != "f" || in["a"].(map[string]any)["b"].([]any)[1].(map[string]any)["c"] != "d" {
		t.Fatalf("the copy shares state with the original: %v", in)
	}
	if revision.CloneValues(nil) != nil {
		t.Fatal("CloneValues(nil) is not nil")
	}
}
