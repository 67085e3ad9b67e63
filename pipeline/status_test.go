package pipeline_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestRenderStatusThatCannotBeWrittenFailsTheRender has a function leave
// the root Kptfile unreadable (an old schema version), so the render status
// cannot be recorded in it: the render fails and says so, instead of
// succeeding with the Kptfile's stale Rendered=False condition.
func TestRenderStatusThatCannotBeWrittenFailsTheRender(t *testing.T) {
	const kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n" +
		"status:\n  conditions:\n  - type: Rendered\n    status: \"False\"\n    reason: RenderFailed\n"
	in := revision.MustFiles(map[string]string{
		"Kptfile": kptfile,
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	})
	breakKptfile := pipeline.FunctionFunc(func(_ context.Context, rl *pipeline.ResourceList) error {
		for _, it := range rl.Items {
			if it.GetKind() == revision.KptfileKind {
				if err := it.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode("kpt.dev/v1alpha2"))); err != nil {
					return err
				}
			}
		}
		return nil
	})
	resolver := pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) { return breakKptfile, nil })
	p := pipeline.New(resolver, pipeline.Steps{Mutators: []pipeline.Step{{Name: "fn"}}}, nil)
	out, err := p.Render(context.Background(), in)
	if err == nil {
		kf, _ := out.Files.Get(revision.KptfileName)
		t.Fatalf("render succeeded without recording its status; Kptfile:\n%s", kf)
	}
	if !strings.Contains(err.Error(), "render status") || !strings.Contains(err.Error(), "Kptfile") {
		t.Fatalf("error %q does not say the render status could not be recorded in the Kptfile", err)
	}
}

// stderrFn is a stream function that copies its input and writes stderr
// to its standard error, and a result whose message is stderr too.
type stderrFn struct{ stderr string }

func (f stderrFn) Run(_ context.Context, rl *pipeline.ResourceList) error {
	rl.Results = append(rl.Results, &pipeline.Result{Message: f.stderr, Severity: pipeline.SeverityInfo})
	return nil
}

func (f stderrFn) RunStream(_ context.Context, in io.Reader, out io.Writer) (string, error) {
	_, err := io.Copy(out, in)
	return f.stderr, err
}

// renderTwice renders in with a function whose standard error and result
// message are stderr, then renders the output again: the recorded render
// status must read back both times, with the text as the function wrote
// it, in cad's Kptfile and in kpt's.
func renderTwice(t *testing.T, stderr string, kptStyle bool) {
	t.Helper()
	in := revision.MustFiles(map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n    - image: fn\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	})
	fn := stderrFn{stderr}
	resolver := pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) { return fn, nil })
	p := pipeline.New(resolver, pipeline.Steps{Mutators: []pipeline.Step{{Image: "fn"}}}, &pipeline.Options{KptStyleKptfile: kptStyle})
	files := in
	for i := range 2 {
		out, err := p.Render(context.Background(), files)
		if err != nil {
			t.Fatalf("render %d with stderr %q (kpt style %v): %v", i+1, stderr, kptStyle, err)
		}
		files = out.Files
		data, _ := files.Get(revision.KptfileName)
		kf, err := revision.ParseKptfile(data)
		if err != nil {
			t.Fatalf("render %d with stderr %q: the Kptfile does not read back: %v\n%s", i+1, stderr, err, data)
		}
		if kf.Status == nil || kf.Status.RenderStatus == nil || len(kf.Status.RenderStatus.MutationSteps) != 1 {
			t.Fatalf("render %d: no render status for the step:\n%s", i+1, data)
		}
		got := kf.Status.RenderStatus.MutationSteps[0]
		if got.Stderr != stderr {
			t.Fatalf("render %d: stderr reads back as %q, want %q\n%s", i+1, got.Stderr, stderr, data)
		}
	}
}

// A function's standard error is recorded in the root Kptfile as written,
// whatever its lines begin with: a starlark print(" x") then print("y")
// once made a Kptfile that could not be read back (issue 34).
func TestRenderStatusKeepsAnyStderr(t *testing.T) {
	for _, s := range []string{" x\ny\n", " x\ny", "\tindented\nnext\n", "a\n\tb\n", "\n x\n", "line\n", "plain", "- a\n- b\n", "key: value\n  more\n"} {
		renderTwice(t, s, false)
		renderTwice(t, s, true)
	}
}

func FuzzRenderStatusStderr(f *testing.F) {
	for _, s := range []string{" x\ny\n", "\tx\ny", "x\n y\n", "#\n'", "---\n...\n", "a: [\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // standard error is recorded as text
		}
		renderTwice(t, s, false)
	})
}
