package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/internal/benchpkg"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// ordinaryPackage returns benchpkg's ordinary package of n files and a
// Kptfile; version varies a value so that consecutive updates differ.
func ordinaryPackage(n, version int) map[string]string {
	files := benchpkg.Resources(n, version)
	files["Kptfile"] = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"
	return files
}

// BenchmarkUpdateYAMLBounds measures what the YAML bounds cost an
// ordinary package: "update" is a whole Engine.Update on memrepo of a
// 20-file, 60-resource package (40 KB) whose every file changed (bounds
// included), "update-pipeline" the same through an engine with a
// Pipeline (one in-process step that changes nothing), and "check" is
// revision.CheckYAML over the same files alone, the part of the update
// the bounds add. The "update" benchmarks use only the public API, so
// they run unchanged on the code before the bounds.
func BenchmarkUpdateYAMLBounds(b *testing.B) {
	ctx := context.Background()
	pkgs := [2]revision.Files{revision.MustFiles(ordinaryPackage(20, 1)), revision.MustFiles(ordinaryPackage(20, 2))}
	b.Run("update", func(b *testing.B) {
		r := memrepo.New(repoName, nil)
		defer r.Close()
		e, err := engine.New(&engine.Options{Repositories: engine.Repos{repoName: r}})
		if err != nil {
			b.Fatal(err)
		}
		key := revision.Key{Package: "app", Workspace: "ws1"}
		if _, err := e.Init(ctx, repoName, key, engine.InitOptions{}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := e.Update(ctx, repoName, key, pkgs[i%2], engine.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// update-pipeline: the same update through an engine with a Pipeline
	// (the Kptfile's, one in-process step that changes nothing), where
	// both the engine and the render check the files against the bounds.
	b.Run("update-pipeline", func(b *testing.B) {
		r := memrepo.New(repoName, nil)
		defer r.Close()
		noop := pipeline.ResolverFunc(func(context.Context, pipeline.Step) (pipeline.Function, error) {
			return pipeline.FunctionFunc(func(context.Context, *pipeline.ResourceList) error { return nil }), nil
		})
		e, err := engine.New(&engine.Options{Repositories: engine.Repos{repoName: r}, Pipeline: pipeline.NewKptfile(noop, nil)})
		if err != nil {
			b.Fatal(err)
		}
		key := revision.Key{Package: "app", Workspace: "ws1"}
		if _, err := e.Init(ctx, repoName, key, engine.InitOptions{}); err != nil {
			b.Fatal(err)
		}
		var withPipeline [2]revision.Files
		for i, v := range []int{1, 2} {
			m := ordinaryPackage(20, v)
			m["Kptfile"] += "pipeline:\n  mutators:\n  - image: noop\n"
			withPipeline[i] = revision.MustFiles(m)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := e.Update(ctx, repoName, key, withPipeline[i%2], engine.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range pkgs[0].Paths() {
				data, _ := pkgs[0].Get(p)
				if err := revision.CheckYAML(ctx, p, data, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkUpdateLargeMapping updates a ConfigMap of 19,000 keys (just
// under DefaultYAMLMaxMapEntries) whose previous version has a comment,
// alternating a value: the comment-keeping path whose kyaml steps are
// quadratic in a mapping's size (kio.FromBytes' alias expansion and
// comments.CopyComments).
func BenchmarkUpdateLargeMapping(b *testing.B) {
	ctx := context.Background()
	r := memrepo.New(repoName, nil)
	defer r.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{repoName: r}})
	if err != nil {
		b.Fatal(err)
	}
	key := revision.Key{Package: "app", Workspace: "ws1"}
	if _, err := e.Init(ctx, repoName, key, engine.InitOptions{}); err != nil {
		b.Fatal(err)
	}
	cm := func(v, comment string) revision.Files {
		var sb strings.Builder
		sb.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big" + comment + "\ndata:\n")
		for i := range 19_000 {
			fmt.Fprintf(&sb, "  k%d: %s\n", i, v)
		}
		return revision.MustFiles(map[string]string{"cm.yaml": sb.String()})
	}
	if _, err := e.Update(ctx, repoName, key, cm("v", " # a comment"), engine.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	next := [2]revision.Files{cm("a", ""), cm("b", "")}
	for i := 0; b.Loop(); i++ {
		if _, err := e.Update(ctx, repoName, key, next[i%2], engine.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOrdinaryPackageKeepsComments: the benchmark's package round-trips:
// an update without its comments gets them back, anchors kept.
func TestOrdinaryPackageKeepsComments(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, memrepo.New(repoName, nil), nil)
	key := revision.Key{Package: "app", Workspace: "ws1"}
	if _, err := e.Init(ctx, repoName, key, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(ctx, repoName, key, revision.MustFiles(ordinaryPackage(2, 1)), engine.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stripped := map[string]string{}
	for p, s := range ordinaryPackage(2, 2) {
		stripped[p] = strings.NewReplacer(" # the app", "", " # http", "", "# app 0\n", "", "# app 1\n", "").Replace(s)
	}
	pr, err := e.Update(ctx, repoName, key, revision.MustFiles(stripped), engine.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := files(t, pr)
	for p, want := range ordinaryPackage(2, 2) {
		if data, _ := got.Get(p); string(data) != want {
			t.Errorf("%s:\n%s\nwant:\n%s", p, data, want)
		}
	}
}
