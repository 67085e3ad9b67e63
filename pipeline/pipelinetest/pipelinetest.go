package pipelinetest

import (
	"bytes"
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// UpdateFlagName is the name of the flag that asks for golden files to be
// rewritten.
const UpdateFlagName = "update"

// EnvUpdate is the environment variable that, set to any value, asks for
// golden files to be rewritten, with or without the flag.
const EnvUpdate = "CAD_UPDATE_GOLDEN"

// UpdateFlag defines the boolean -update flag on flag.CommandLine and
// returns it; when a flag of that name is defined already (the test's own
// -update), it defines nothing and returns nil. Importing the package
// defines no flag, so that a test binary with its own -update does not
// panic; call UpdateFlag from TestMain, before flag.Parse (m.Run parses
// the flags), to make "go test -update" work in a test that has none:
//
//	func TestMain(m *testing.M) {
//		pipelinetest.UpdateFlag()
//		os.Exit(m.Run())
//	}
func UpdateFlag() *bool {
	if flag.Lookup(UpdateFlagName) != nil {
		return nil
	}
	return flag.Bool(UpdateFlagName, false, "rewrite the golden expectations of pipelinetest cases")
}

// updating reports whether golden files are to be rewritten: the
// CAD_UPDATE_GOLDEN variable is set, or a flag named update (ours or the
// test's own) is set to true.
func updating() bool {
	if os.Getenv(EnvUpdate) != "" {
		return true
	}
	f := flag.Lookup(UpdateFlagName)
	if f == nil {
		return false
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if b, ok := g.Get().(bool); ok {
			return b
		}
	}
	return f.Value.String() == "true"
}

// Run renders the input/ of every case under dir with p and compares the
// outcome with the case's expectations.
func Run(t *testing.T, dir string, p pipeline.Pipeline) {
	t.Helper()
	run(t, dir, func(string) (pipeline.Pipeline, error) { return p, nil })
}

// RunFunction runs fn as the single mutator over the input/ of every case
// under dir, with the case's config.yaml (if any) as its functionConfig,
// and compares the outcome with the case's expectations.
func RunFunction(t *testing.T, dir string, fn pipeline.Function) {
	t.Helper()
	resolver := pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) { return fn, nil })
	run(t, dir, func(caseDir string) (pipeline.Pipeline, error) {
		step := pipeline.Step{Name: "function-under-test"}
		if data, err := os.ReadFile(filepath.Join(caseDir, "config.yaml")); err == nil {
			var cfg map[string]any
			if err := yaml.Unmarshal(data, &cfg); err != nil {
				return nil, err
			}
			step.Config = cfg
		}
		return pipeline.New(resolver, pipeline.Steps{Mutators: []pipeline.Step{step}}, &pipeline.Options{NoRenderStatus: true}), nil
	})
}

func run(t *testing.T, dir string, build func(caseDir string) (pipeline.Pipeline, error)) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("pipelinetest: %v", err)
	}
	n := 0
	for _, e := range entries {
		caseDir := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(caseDir, "input")); err != nil {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			p, err := build(caseDir)
			if err != nil {
				t.Fatalf("case setup: %v", err)
			}
			runCase(t, caseDir, p)
		})
	}
	if n == 0 {
		t.Fatalf("pipelinetest: no case (a directory with input/) under %s", dir)
	}
}

func runCase(t *testing.T, caseDir string, p pipeline.Pipeline) {
	input, err := ReadDir(filepath.Join(caseDir, "input"))
	if err != nil {
		t.Fatal(err)
	}
	out, rerr := p.Render(context.Background(), input)
	var steps []pipeline.StepResult
	var got revision.Files
	if rerr != nil {
		if re, ok := rerr.(*pipeline.RenderError); ok {
			steps = re.Steps()
		}
	} else {
		steps, got = out.Steps, out.Files
	}
	var results pipeline.Results
	for _, s := range steps {
		results = append(results, s.Results...)
	}
	resultsYAML := []byte{}
	if len(results) > 0 {
		if resultsYAML, err = yaml.Marshal(results); err != nil {
			t.Fatal(err)
		}
	}
	errPath := filepath.Join(caseDir, "errors.txt")
	expDir := filepath.Join(caseDir, "expected")
	resPath := filepath.Join(caseDir, "results.yaml")
	if updating() {
		_ = os.Remove(errPath)
		_ = os.RemoveAll(expDir)
		if rerr != nil {
			writeFile(t, errPath, []byte(rerr.Error()+"\n"))
		} else if err := WriteDir(expDir, got); err != nil {
			t.Fatal(err)
		}
		if len(resultsYAML) > 0 {
			writeFile(t, resPath, resultsYAML)
		} else {
			_ = os.Remove(resPath)
		}
		return
	}
	if want, err := os.ReadFile(errPath); err == nil {
		if rerr == nil {
			t.Fatalf("render succeeded, want error containing %q", strings.TrimSpace(string(want)))
		}
		if !strings.Contains(rerr.Error(), strings.TrimSpace(string(want))) {
			t.Errorf("error %q does not contain %q", rerr.Error(), strings.TrimSpace(string(want)))
		}
	} else if rerr != nil {
		t.Fatalf("render failed: %v", rerr)
	} else {
		want, err := ReadDir(expDir)
		if err != nil {
			t.Fatalf("read expected/: %v (run with -update to create it)", err)
		}
		compareFiles(t, got, want)
	}
	want, err := os.ReadFile(resPath)
	if err != nil {
		want = nil
	}
	if !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(resultsYAML)) {
		t.Errorf("results differ\n--- got\n%s\n--- want\n%s", resultsYAML, want)
	}
}

func compareFiles(t *testing.T, got, want revision.Files) {
	t.Helper()
	paths := map[string]bool{}
	for _, p := range got.Paths() {
		paths[p] = true
	}
	for _, p := range want.Paths() {
		paths[p] = true
	}
	var all []string
	for p := range paths {
		all = append(all, p)
	}
	sort.Strings(all)
	for _, p := range all {
		g, gok := got.Get(p)
		w, wok := want.Get(p)
		switch {
		case !gok:
			t.Errorf("%s: missing from the output", p)
		case !wok:
			t.Errorf("%s: unexpected in the output:\n%s", p, g)
		case !bytes.Equal(g, w):
			t.Errorf("%s differs\n--- got\n%s\n--- want\n%s", p, g, w)
		}
	}
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ReadDir reads the regular files under dir into Files.
func ReadDir(dir string) (revision.Files, error) {
	m := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		m[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		return revision.Files{}, err
	}
	return revision.NewFiles(m)
}

// WriteDir writes files under dir, creating directories as needed.
func WriteDir(dir string, files revision.Files) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, p := range files.Paths() {
		data, _ := files.Get(p)
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
