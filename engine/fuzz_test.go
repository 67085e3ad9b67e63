package engine_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// FuzzUpdateYAML feeds arbitrary YAML through Engine.Update on memrepo, as
// a resource file and as the Kptfile. Every update either succeeds or
// fails with an error matching repository.ErrInvalidInput that leaves the
// draft as it was, and none allocates more than a bound that grows with
// the input's size only linearly: the YAML bounds keep an alias bomb, deep
// nesting or a huge mapping from costing more. The engine's bounds are
// scaled down (fuzzLimits) so that the fuzzer explores inputs around them
// at a few kilobytes instead of megabytes; the seeds are the hostile
// files at those sizes.
//
//	go test -run '^$' -fuzz FuzzUpdateYAML -fuzztime 60s ./engine/
func FuzzUpdateYAML(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # c\ndata:\n  x: &x {a: 1}\n  y: *x\n  z: {<<: *x, b: 2}\n",
		"apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
		"---\na: 1\n---\n- [1, 2]\n",
		hostileyaml.Laughs(9, 9),
		hostileyaml.Laughs(3, 20),
		hostileyaml.MergeBomb(),
		hostileyaml.Deep(fuzzLimits.MaxDepth),
		hostileyaml.ManyDocuments(fuzzLimits.MaxDocuments + 1),
		hostileyaml.HugeMap(fuzzLimits.MaxMapEntries + 1),
	} {
		f.Add([]byte(seed))
	}
	ctx := context.Background()
	r := memrepo.New(repoName, nil)
	defer r.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{repoName: r}, YAMLLimits: &fuzzLimits})
	if err != nil {
		f.Fatal(err)
	}
	key := revision.Key{Package: "app", Workspace: "ws1"}
	if _, err := e.Init(ctx, repoName, key, engine.InitOptions{}); err != nil {
		f.Fatal(err)
	}
	const kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, file := range []string{"cm.yaml", revision.KptfileName} {
			in := map[string][]byte{revision.KptfileName: []byte(kptfile), file: data}
			files, err := revision.NewFiles(in)
			if err != nil {
				t.Fatal(err)
			}
			before, err := r.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			_, err = e.Update(ctx, repoName, key, files, engine.UpdateOptions{})
			runtime.ReadMemStats(&m1)
			if alloc, bound := m1.TotalAlloc-m0.TotalAlloc, uint64(64<<20+4096*len(data)); alloc > bound {
				t.Fatalf("update of %d bytes as %s allocated %d bytes, more than %d", len(data), file, alloc, bound)
			}
			if err == nil {
				continue
			}
			if !errors.Is(err, repository.ErrInvalidInput) {
				t.Fatalf("update as %s: %v, want nil or an error matching ErrInvalidInput", file, err)
			}
			after, gerr := r.Get(ctx, key)
			if gerr != nil {
				t.Fatal(gerr)
			}
			if after.Meta().Version != before.Meta().Version {
				t.Fatalf("the refused update as %s (%v) changed the draft", file, err)
			}
		}
	})
}

// fuzzLimits are the YAML bounds of FuzzUpdateYAML, scaled down from the
// defaults so that inputs near them are small.
var fuzzLimits = revision.YAMLLimits{
	MaxBytes: 1 << 20, MaxDocuments: 50, MaxDepth: 100, MaxNodes: 20_000, MaxAliasNodes: 5_000, MaxMapEntries: 500,
	MaxPackageDocuments: 60, MaxPackageNodes: 40_000,
}
