package pipeline_test

import (
	"context"
	"io/fs"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// A function in a render reads the non-KRM files of the package whose
// pipeline runs it, through ResourceList.PackageFiles: the root package
// sees its tree, a subpackage its own directory; outside a render there
// are none.
func TestPackageFiles(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // image -> what it read
	read := pipeline.ResolverFunc(func(_ context.Context, st pipeline.Step) (pipeline.Function, error) {
		return pipeline.FunctionFunc(func(ctx context.Context, rl *pipeline.ResourceList) error {
			f := rl.PackageFiles
			if f == nil {
				return nil
			}
			b, err := fs.ReadFile(f, "charts/values.txt")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				seen[st.Image] = "error: " + err.Error()
			} else {
				seen[st.Image] = string(b)
			}
			return nil
		}), nil
	})
	kf := func(name, image string) string {
		return "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\npipeline:\n  mutators:\n  - image: " + image + "\n"
	}
	files := revision.MustFiles(map[string]string{
		"Kptfile":                kf("root", "reader-root"),
		"charts/values.txt":      "root values",
		"sub/Kptfile":            kf("sub", "reader-sub"),
		"sub/charts/values.txt":  "sub values",
		"sub/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
		"other/charts/notes.txt": "not a package",
	})
	_, err := pipeline.NewKptfile(read, nil).Render(context.Background(), files)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"ghcr.io/kptdev/krm-functions-catalog/reader-root:latest": "root values",
		"ghcr.io/kptdev/krm-functions-catalog/reader-sub:latest":  "sub values",
	}, seen)

	// Outside a render a ResourceList has none.
	rl, err := pipeline.ParseResourceList([]byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"))
	require.NoError(t, err)
	assert.Nil(t, rl.PackageFiles)
}

// A mutator writes non-KRM files into the package whose pipeline runs it
// through ResourceList.WriteFiles: the root package's at the root, a
// subpackage's under its directory, replacing what was there. A path
// outside the package or a KRM file name fails the step with
// ErrBadOutput, and nothing is written.
func TestWriteFiles(t *testing.T) {
	write := func(files map[string][]byte) pipeline.Resolver {
		return pipeline.ResolverFunc(func(_ context.Context, st pipeline.Step) (pipeline.Function, error) {
			return pipeline.FunctionFunc(func(ctx context.Context, rl *pipeline.ResourceList) error {
				rl.WriteFiles = map[string][]byte{}
				for p, data := range files {
					rl.WriteFiles[p] = append([]byte(st.Image+": "), data...)
				}
				return nil
			}), nil
		})
	}
	kf := func(name, image string) string {
		return "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\npipeline:\n  mutators:\n  - image: " + image + "\n"
	}
	files := revision.MustFiles(map[string]string{
		"Kptfile":       kf("root", "w-root"),
		"README.md":     "old",
		"sub/Kptfile":   kf("sub", "w-sub"),
		"sub/README.md": "old sub",
	})
	out, err := pipeline.NewKptfile(write(map[string][]byte{"README.md": []byte("new"), "docs/a.txt": []byte("a")}), &pipeline.Options{NoRenderStatus: true}).Render(context.Background(), files)
	require.NoError(t, err)
	got := map[string]string{}
	for _, p := range []string{"README.md", "docs/a.txt", "sub/README.md", "sub/docs/a.txt"} {
		b, _ := out.Files.Get(p)
		got[p] = string(b)
	}
	assert.Equal(t, map[string]string{
		"README.md":      "ghcr.io/kptdev/krm-functions-catalog/w-root:latest: new",
		"docs/a.txt":     "ghcr.io/kptdev/krm-functions-catalog/w-root:latest: a",
		"sub/README.md":  "ghcr.io/kptdev/krm-functions-catalog/w-sub:latest: new",
		"sub/docs/a.txt": "ghcr.io/kptdev/krm-functions-catalog/w-sub:latest: a",
	}, got)

	for _, bad := range []string{"../x.txt", "/etc/x.txt", "cm.yaml", "Kptfile", "sub/x.json", ""} {
		out, err := pipeline.NewKptfile(write(map[string][]byte{bad: []byte("x"), "README.md": []byte("new")}), &pipeline.Options{NoRenderStatus: true}).Render(context.Background(), files)
		require.ErrorIs(t, err, pipeline.ErrBadOutput, bad)
		assert.Nil(t, out, bad)
		var re *pipeline.RenderError
		require.ErrorAs(t, err, &re, bad)
		b, _ := re.Output.Files.Get("README.md")
		assert.Equal(t, "old", string(b), bad)
	}
}
