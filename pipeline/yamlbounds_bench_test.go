package pipeline

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/configasdata/cad/internal/benchpkg"
	"github.com/configasdata/cad/internal/yamlmemo"
	"github.com/configasdata/cad/revision"
)

// benchPackage returns benchpkg's ordinary package of n files (as
// engine's BenchmarkUpdateYAMLBounds uses) and a Kptfile whose pipeline
// runs the image fn once.
func benchPackage(n int, fn string) revision.Files {
	files := benchpkg.Resources(n, 3)
	files["Kptfile"] = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - image: " + fn + "\n"
	return revision.MustFiles(files)
}

// echoStream is a stream function (as an exec or container function is)
// that returns its input unchanged; last keeps the last output.
type echoStream struct{ last []byte }

func (e *echoStream) Run(ctx context.Context, rl *ResourceList) error { return nil }

func (e *echoStream) RunStream(ctx context.Context, in io.Reader, out io.Writer) (string, error) {
	b, err := io.ReadAll(in)
	if err != nil {
		return "", err
	}
	e.last = b
	_, err = out.Write(b)
	return "", err
}

// BenchmarkRenderYAMLBounds measures what the YAML bounds cost a render of
// an ordinary package (20 files, 60 resources, 40 KB, anchors in every
// file, so no file passes the byte scan and each is parsed by the check):
//
//   - render-inprocess, render-stream: a whole Render whose Kptfile runs
//     one function that changes nothing, in process (no serialisation) or
//     as a stream function (the ResourceList written and read back, as an
//     exec or container function's is);
//   - check-files: revision.CheckYAMLFiles over the package, the bound
//     every Render applies to its input;
//   - check-files-remembered, render-inprocess-remembered: the same
//     when the files passed a check before (the engine's, just before the
//     render; internal/yamlmemo remembers them), so the check hashes them
//     instead of parsing them;
//   - check-output: revision.CheckYAML of the stream function's output
//     with the ResourceList bounds, the bound each stream step's output
//     gets (in-process steps get none).
//
// The bounds' share of a render is check-files (plus check-output per
// stream step) over render-*.
func BenchmarkRenderYAMLBounds(b *testing.B) {
	ctx := context.Background()
	echo := &echoStream{}
	resolver := ResolverFunc(func(ctx context.Context, st Step) (Function, error) {
		if strings.Contains(st.Image, "stream") {
			return echo, nil
		}
		return FunctionFunc(func(ctx context.Context, rl *ResourceList) error { return nil }), nil
	})
	for _, fn := range []string{"inprocess", "stream"} {
		files := benchPackage(20, fn)
		r := NewKptfile(resolver, nil)
		b.Run("render-"+fn, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				yamlmemo.Reset() // the files were not checked before
				if _, err := r.Render(ctx, files); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	files := benchPackage(20, "stream")
	b.Run("check-files", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			yamlmemo.Reset()
			if err := revision.CheckYAMLFiles(ctx, files, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	// After the engine's own check, the memo holds the files:
	// check-files-remembered is what the render's check costs then
	// (hashing each file, no parse), and render-inprocess-remembered the
	// whole render.
	if err := revision.CheckYAMLFiles(ctx, files, nil); err != nil {
		b.Fatal(err)
	}
	b.Run("check-files-remembered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := revision.CheckYAMLFiles(ctx, files, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	inproc := benchPackage(20, "inprocess")
	if err := revision.CheckYAMLFiles(ctx, inproc, nil); err != nil {
		b.Fatal(err)
	}
	b.Run("render-inprocess-remembered", func(b *testing.B) {
		r := NewKptfile(resolver, nil)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Render(ctx, inproc); err != nil {
				b.Fatal(err)
			}
		}
	})
	if _, err := NewKptfile(resolver, nil).Render(ctx, files); err != nil {
		b.Fatal(err)
	}
	out := echo.last
	b.Run("check-output", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			yamlmemo.Reset()
			if err := revision.CheckYAML(ctx, "output", out, resourceListLimits(nil)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(out)), "output-bytes")
	})
}
