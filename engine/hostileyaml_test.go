package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// TestUpdateRefusesHostileYAML: every hostile file, given to Update as a
// resource file or as the Kptfile, with and without a pipeline, is
// refused with a *revision.YAMLLimitError naming the file, and the draft
// is left as it was. Before the bounds, the bombs exhausted memory in
// kio.FromBytes and the 100,000-key mapping took minutes of CPU.
func TestUpdateRefusesHostileYAML(t *testing.T) {
	pipelines := map[string]pipeline.Pipeline{
		"no pipeline": nil,
		"kptfile":     pipeline.NewKptfile(fnruntime.NewRegistry(nil), nil),
	}
	for pname, p := range pipelines {
		ctx := context.Background()
		r := memrepo.New(repoName, nil)
		t.Cleanup(func() { r.Close() })
		e := newEngine(t, r, p)
		key := revision.Key{Package: "app", Workspace: "ws1"}
		pr, err := e.Init(ctx, repoName, key, engine.InitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		base := files(t, pr)
		for name, data := range hostileyaml.All() {
			for _, file := range []string{"cm.yaml", "Kptfile"} {
				t.Run(pname+"/"+name+"/"+file, func(t *testing.T) {
					in, err := base.With(file, []byte(data))
					if err != nil {
						t.Fatal(err)
					}
					_, err = e.Update(ctx, repoName, key, in, engine.UpdateOptions{})
					var le *revision.YAMLLimitError
					if !errors.Is(err, repository.ErrInvalidInput) || !errors.As(err, &le) || le.File != file {
						t.Fatalf("update: %v, want a *revision.YAMLLimitError for %s matching ErrInvalidInput", err, file)
					}
					if !strings.Contains(err.Error(), file) {
						t.Errorf("error %q does not name %s", err, file)
					}
					cur, err := r.Get(ctx, key)
					if err != nil {
						t.Fatal(err)
					}
					if cur.Meta().Version != pr.Meta().Version || !files(t, cur).Equal(base) {
						t.Fatalf("the refused update changed the draft: version %s, files %v", cur.Meta().Version, files(t, cur).Paths())
					}
				})
			}
		}
	}
}

// TestUpdateKeepsAnchorsAndComments: ordinary anchors, aliases and merge
// keys are accepted, saved as written, and a later update that drops the
// comments gets them back without the aliases being expanded.
func TestUpdateKeepsAnchorsAndComments(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, memrepo.New(repoName, nil), nil)
	key := revision.Key{Package: "app", Workspace: "ws1"}
	if _, err := e.Init(ctx, repoName, key, engine.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	const withAnchors = `# shared settings
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings # keep
data:
  base: &base {color: blue, size: small}
  merged:
    <<: *base
    size: large # the size
  same: *base
`
	pr, err := e.Update(ctx, repoName, key, revision.MustFiles(map[string]string{"cm.yaml": withAnchors}), engine.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := files(t, pr).Get("cm.yaml"); string(data) != withAnchors {
		t.Fatalf("saved:\n%s\nwant it as written:\n%s", data, withAnchors)
	}
	stripped := strings.NewReplacer(" # keep", "", " # the size", "", "# shared settings\n", "", "small", "medium").Replace(withAnchors)
	got, err := e.Update(ctx, repoName, key, revision.MustFiles(map[string]string{"cm.yaml": stripped}), engine.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := files(t, got).Get("cm.yaml")
	for _, want := range []string{"# shared settings", "name: settings # keep", "size: large # the size", "&base", "<<: *base", "same: *base", "medium"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("cm.yaml lacks %q:\n%s", want, data)
		}
	}
}

// TestUpdateLimitsConfigurable: Options.YAMLLimits lowers or lifts a
// bound.
func TestUpdateLimitsConfigurable(t *testing.T) {
	ctx := context.Background()
	docs := hostileyaml.ManyDocuments(20)
	for _, tc := range []struct {
		max  int
		fail bool
	}{{10, true}, {20, false}, {-1, false}} {
		r := memrepo.New(repoName, nil)
		e, err := engine.New(&engine.Options{Repositories: engine.Repos{repoName: r},
			YAMLLimits: &revision.YAMLLimits{MaxDocuments: tc.max}})
		if err != nil {
			t.Fatal(err)
		}
		key := revision.Key{Package: "app", Workspace: "ws1"}
		if _, err := e.Init(ctx, repoName, key, engine.InitOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = e.Update(ctx, repoName, key, revision.MustFiles(map[string]string{"cms.yaml": docs}), engine.UpdateOptions{})
		if got := errors.Is(err, repository.ErrInvalidInput); got != tc.fail {
			t.Errorf("MaxDocuments %d: update of 20 documents: %v", tc.max, err)
		}
	}
}
