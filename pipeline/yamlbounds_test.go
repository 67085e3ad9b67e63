package pipeline_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

const boundsKptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - image: emit\n"

// TestRenderRefusesHostileYAML: a hostile resource file or Kptfile makes
// Render fail with a *revision.YAMLLimitError naming the file, before any
// function runs.
func TestRenderRefusesHostileYAML(t *testing.T) {
	ran := false
	fn := pipeline.FunctionFunc(func(context.Context, *pipeline.ResourceList) error { ran = true; return nil })
	r := pipeline.NewKptfile(pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) { return fn, nil }), nil)
	for name, data := range hostileyaml.All() {
		for _, file := range []string{"sub/cm.yaml", "Kptfile"} {
			files := map[string]string{"Kptfile": boundsKptfile}
			files[file] = data
			_, err := r.Render(context.Background(), revision.MustFiles(files))
			var le *revision.YAMLLimitError
			var re *pipeline.RenderError
			if !errors.As(err, &re) || !errors.As(err, &le) || le.File != file || !errors.Is(err, pipeline.ErrInvalidPackage) {
				t.Errorf("%s in %s: %v, want a *RenderError wrapping a *revision.YAMLLimitError", name, file, err)
			}
			if ran {
				t.Fatalf("%s in %s: a function ran", name, file)
			}
		}
	}
}

// bombStream is a stream function whose output is an alias bomb.
type bombStream struct{ pipeline.FunctionFunc }

func (bombStream) RunStream(_ context.Context, in io.Reader, out io.Writer) (string, error) {
	_, _ = io.Copy(io.Discard, in)
	_, err := io.WriteString(out, "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- kind: ConfigMap\n  metadata: {name: x}\n  data:\n"+
		indent(hostileyaml.Laughs(9, 9), "    "))
	return "", err
}

func indent(s, by string) string {
	return by + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+by) + "\n"
}

// TestRenderRefusesHostileFunctionOutput: a function whose output is an
// alias bomb fails the render with a *revision.YAMLLimitError, and so
// does ParseResourceList on that output.
func TestRenderRefusesHostileFunctionOutput(t *testing.T) {
	r := pipeline.NewKptfile(pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) { return bombStream{}, nil }), nil)
	in := revision.MustFiles(map[string]string{"Kptfile": boundsKptfile, "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"})
	_, err := r.Render(context.Background(), in)
	var le *revision.YAMLLimitError
	if !errors.As(err, &le) || le.Limit != "MaxAliasNodes" || !errors.Is(err, pipeline.ErrInvalidPackage) {
		t.Fatalf("render: %v, want a *revision.YAMLLimitError for MaxAliasNodes", err)
	}
	var sb strings.Builder
	_, _ = bombStream{}.RunStream(context.Background(), strings.NewReader(""), &sb)
	if _, err := pipeline.ParseResourceList([]byte(sb.String())); !errors.As(err, &le) {
		t.Fatalf("ParseResourceList: %v, want a *revision.YAMLLimitError", err)
	}
}

// TestRenderStopsWhenCallerGone: once the context ends, no further step
// runs (in-process functions need not watch the context themselves), and
// the render fails with the context's error.
func TestRenderStopsWhenCallerGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ran []string
	r := pipeline.NewKptfile(pipeline.ResolverFunc(func(_ context.Context, st pipeline.Step) (pipeline.Function, error) {
		return pipeline.FunctionFunc(func(context.Context, *pipeline.ResourceList) error {
			ran = append(ran, st.Image)
			cancel() // the client goes away during the first step
			return nil
		}), nil
	}), nil)
	kf := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - image: first\n  - image: second\n  validators:\n  - image: third\n"
	_, err := r.Render(ctx, revision.MustFiles(map[string]string{"Kptfile": kf, "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("render: %v, want context.Canceled", err)
	}
	if len(ran) != 1 {
		t.Fatalf("steps run: %v, want only the first", ran)
	}
}

// BenchmarkRenderLargeMapping renders a ConfigMap of 19,999 keys (just
// under DefaultYAMLMaxMapEntries) through one in-process function, whose
// output gets the input's comments back key by key.
func BenchmarkRenderLargeMapping(b *testing.B) {
	fn := pipeline.FunctionFunc(func(context.Context, *pipeline.ResourceList) error { return nil })
	r := pipeline.NewKptfile(pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) { return fn, nil }), nil)
	in := revision.MustFiles(map[string]string{"Kptfile": boundsKptfile, "cm.yaml": strings.Replace(hostileyaml.HugeMap(19_999), "k1: v", "k1: v # a comment", 1)})
	for b.Loop() {
		out, err := r.Render(context.Background(), in)
		if err != nil {
			b.Fatal(err)
		}
		if data, _ := out.Files.Get("cm.yaml"); !strings.Contains(string(data), "k1: v # a comment") {
			b.Fatal("comment lost")
		}
	}
}
