package engine_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/internal/yamlmemo"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// noopPipeline is a Kptfile renderer whose every step is an in-process
// function that changes nothing, with the renderer's YAML bounds lim.
func noopPipeline(lim *revision.YAMLLimits) *pipeline.Renderer {
	return pipeline.NewKptfile(pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) {
		return pipeline.FunctionFunc(func(context.Context, *pipeline.ResourceList) error { return nil }), nil
	}), &pipeline.Options{YAMLLimits: lim})
}

// pipelinePackage is ordinaryPackage of n files whose Kptfile runs one
// step.
func pipelinePackage(n, version int) revision.Files {
	m := ordinaryPackage(n, version)
	m["Kptfile"] += "pipeline:\n  mutators:\n  - image: noop\n"
	return revision.MustFiles(m)
}

// checksOnce asserts that every file of in was parsed by the bounds
// check exactly once, as c counted.
func checksOnce(t *testing.T, c *yamlmemo.Counter, in revision.Files) {
	t.Helper()
	for _, p := range in.Paths() {
		data, _ := in.Get(p)
		if revision.IsYAMLFile(p) && c.Of(data) != 1 {
			t.Errorf("%s was parsed by the YAML bounds check %d times, want once", p, c.Of(data))
		}
	}
}

// TestUpdateChecksEachFileOnce: an Update through a pipeline parses each
// file for the bounds once, not once in the engine and again in the
// render (before, every file was parsed twice).
func TestUpdateChecksEachFileOnce(t *testing.T) {
	e := newEngine(t, memrepo.New(repoName, nil), noopPipeline(nil))
	key := revision.Key{Package: "app", Workspace: "ws1"}
	if _, err := e.Init(context.Background(), repoName, key, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= 2; v++ {
		var c yamlmemo.Counter
		in := pipelinePackage(3, v)
		restore := yamlmemo.SetParseHook(c.Add)
		_, err := e.Update(context.Background(), repoName, key, in, engine.UpdateOptions{})
		restore()
		if err != nil {
			t.Fatal(err)
		}
		checksOnce(t, &c, in)
		if c.Most() != 1 {
			t.Errorf("a content was parsed by the YAML bounds check %d times, want once", c.Most())
		}
	}
}

// TestCloneChecksEachFileOnce: a Clone through a pipeline parses each
// content for the bounds once. Here the upstream is itself a clone, so
// its resources already carry their upstream identifiers and reach the
// render as they were read; before, each was parsed twice (the engine's
// check of the upstream and the render's).
func TestCloneChecksEachFileOnce(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, memrepo.New(repoName, nil), noopPipeline(nil))
	first := revision.Key{Package: "first", Workspace: "ws1"}
	if _, err := e.Init(ctx, repoName, first, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(ctx, repoName, first, pipelinePackage(3, 1), engine.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	src := publish(t, e, first).Meta().Key
	up := revision.Key{Package: "up", Workspace: "ws1"}
	if _, err := e.Clone(ctx, repoName, up, engine.CloneSource{Revision: &src}, engine.CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	pub := publish(t, e, up)
	upFiles := files(t, pub)
	var c yamlmemo.Counter
	src = pub.Meta().Key
	down := revision.Key{Package: "down", Workspace: "ws1"}
	restore := yamlmemo.SetParseHook(c.Add)
	pr, err := e.Clone(ctx, repoName, down, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
	restore()
	if err != nil {
		t.Fatal(err)
	}
	if c.Most() != 1 {
		t.Errorf("a content was parsed by the YAML bounds check %d times, want once", c.Most())
	}
	got := files(t, pr)
	same := 0
	for _, p := range upFiles.Paths() {
		data, _ := upFiles.Get(p)
		if strings.HasSuffix(p, ".yaml") && c.Of(data) != 1 {
			t.Errorf("upstream %s was parsed by the YAML bounds check %d times, want once", p, c.Of(data))
		}
		if g, _ := got.Get(p); string(g) == string(data) {
			same++
		}
	}
	if same < 3 {
		t.Fatalf("only %d files reached the clone unchanged; the test needs the upstream's resources to", same)
	}
}

// swapPipeline replaces the file at path, when there is one, with data
// before rendering with next: content that changed after the engine
// checked its input.
type swapPipeline struct {
	next       pipeline.Pipeline
	path, data string
}

func (s swapPipeline) Render(ctx context.Context, files revision.Files) (*pipeline.Output, error) {
	if !files.Has(s.path) {
		return s.next.Render(ctx, files)
	}
	f, err := files.With(s.path, []byte(s.data))
	if err != nil {
		return nil, err
	}
	return s.next.Render(ctx, f)
}

// TestRenderChecksWhatChangedAfterTheEngine: the render does not take the
// engine's check for a file whose bytes changed since (here a pipeline
// that swaps a file for an alias bomb before rendering), nor for a file
// the engine checked under looser bounds than the renderer's; either way
// the update is refused and the draft unchanged.
func TestRenderChecksWhatChangedAfterTheEngine(t *testing.T) {
	ctx := context.Background()
	loose := &revision.YAMLLimits{MaxAliasNodes: -1, MaxNodes: -1, MaxPackageNodes: -1}
	bomb := hostileyaml.Laughs(4, 9) // 7,380 alias nodes: within loose, over the renderer's 5,000
	strict := &revision.YAMLLimits{MaxAliasNodes: 5_000}
	cases := map[string]struct {
		engineLimits *revision.YAMLLimits
		p            pipeline.Pipeline
		in           revision.Files
	}{
		"changed after the engine's check": {
			p:  swapPipeline{next: noopPipeline(nil), path: "app01.yaml", data: hostileyaml.Laughs(9, 9)},
			in: pipelinePackage(3, 1),
		},
		"checked by the engine under looser bounds": {
			engineLimits: loose,
			p:            noopPipeline(strict),
			in: func() revision.Files {
				f, err := pipelinePackage(3, 1).With("app01.yaml", []byte(bomb))
				if err != nil {
					t.Fatal(err)
				}
				return f
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := memrepo.New(repoName, nil)
			e, err := engine.New(&engine.Options{Repositories: engine.Repos{repoName: r}, Pipeline: tc.p, YAMLLimits: tc.engineLimits})
			if err != nil {
				t.Fatal(err)
			}
			key := revision.Key{Package: "app", Workspace: "ws1"}
			pr, err := e.Init(ctx, repoName, key, engine.InitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var c yamlmemo.Counter
			restore := yamlmemo.SetParseHook(c.Add)
			_, err = e.Update(ctx, repoName, key, tc.in, engine.UpdateOptions{})
			restore()
			var le *revision.YAMLLimitError
			if !errors.As(err, &le) || le.File != "app01.yaml" || le.Limit != "MaxAliasNodes" || !errors.Is(err, repository.ErrInvalidInput) {
				t.Fatalf("update: %v, want a MaxAliasNodes *revision.YAMLLimitError for app01.yaml", err)
			}
			if cur, _ := r.Get(ctx, key); cur.Meta().Version != pr.Meta().Version {
				t.Fatal("the refused update changed the draft")
			}
			if c.Total() == 0 {
				t.Fatal("the counter saw no check")
			}
		})
	}
}

// bombOutput is a stream function whose output is an alias bomb.
type bombOutput struct{ pipeline.FunctionFunc }

func (bombOutput) RunStream(_ context.Context, in io.Reader, out io.Writer) (string, error) {
	_, _ = io.Copy(io.Discard, in)
	laughs := "    " + strings.ReplaceAll(strings.TrimSuffix(hostileyaml.Laughs(9, 9), "\n"), "\n", "\n    ") + "\n"
	_, err := io.WriteString(out, "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- kind: ConfigMap\n  metadata: {name: x}\n  data:\n"+laughs)
	return "", err
}

// TestUpdateRefusesHostileFunctionOutput: within an Update, whose memo
// holds the input files, a function whose output is an alias bomb still
// fails the update and changes nothing.
func TestUpdateRefusesHostileFunctionOutput(t *testing.T) {
	ctx := context.Background()
	r := memrepo.New(repoName, nil)
	e := newEngine(t, r, pipeline.NewKptfile(pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) {
		return bombOutput{}, nil
	}), nil))
	key := revision.Key{Package: "app", Workspace: "ws1"}
	pr, err := e.Init(ctx, repoName, key, engine.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Update(ctx, repoName, key, pipelinePackage(2, 1), engine.UpdateOptions{})
	var le *revision.YAMLLimitError
	if !errors.As(err, &le) || le.Limit != "MaxAliasNodes" || !errors.Is(err, repository.ErrInvalidInput) {
		t.Fatalf("update: %v, want a MaxAliasNodes *revision.YAMLLimitError", err)
	}
	if cur, _ := r.Get(ctx, key); cur.Meta().Version != pr.Meta().Version {
		t.Fatal("the refused update changed the draft")
	}
}

// TestUpgradeChecksEachFileOnce: an Upgrade through a pipeline parses
// each content for the bounds once: the upstream files it checks and
// the merged package it renders share every file the upgrade leaves as
// the new upstream has it.
func TestUpgradeChecksEachFileOnce(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, memrepo.New(repoName, nil), noopPipeline(nil))
	first := revision.Key{Package: "first", Workspace: "ws1"}
	if _, err := e.Init(ctx, repoName, first, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(ctx, repoName, first, pipelinePackage(3, 1), engine.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	src := publish(t, e, first).Meta().Key
	up := revision.Key{Package: "up", Workspace: "ws1"}
	if _, err := e.Clone(ctx, repoName, up, engine.CloneSource{Revision: &src}, engine.CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	up1 := publish(t, e, up)
	d, err := e.Copy(ctx, repoName, up1.Meta().Key, "ws2", engine.CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	next := files(t, d)
	app0, _ := next.Get("app00.yaml")
	if next, err = next.With("app00.yaml", []byte(strings.Replace(string(app0), "replicas: 1", "replicas: 5", 1))); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(ctx, repoName, d.Meta().Key, next, engine.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	up2 := publish(t, e, d.Meta().Key)
	down := revision.Key{Package: "down", Workspace: "ws1"}
	src = up1.Meta().Key
	if _, err := e.Clone(ctx, repoName, down, engine.CloneSource{Revision: &src}, engine.CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	local := publish(t, e, down)
	var c yamlmemo.Counter
	restore := yamlmemo.SetParseHook(c.Add)
	pr, err := e.Upgrade(ctx, repoName, local.Meta().Key,
		engine.Ref{Key: up1.Meta().Key}, engine.Ref{Key: up2.Meta().Key}, "ws2", engine.UpgradeOptions{})
	restore()
	if err != nil {
		t.Fatal(err)
	}
	if c.Most() != 1 {
		t.Errorf("a content was parsed by the YAML bounds check %d times, want once", c.Most())
	}
	got, _ := files(t, pr).Get("app00.yaml")
	if !strings.Contains(string(got), "replicas: 5") {
		t.Fatalf("the upgrade did not bring the new upstream's change:\n%s", got)
	}
}
