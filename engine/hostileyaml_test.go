package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/internal/hostileyaml"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/repository/ocirepo"
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

// TestUpdateRefusesDocumentsSplitOverFiles: 85,000 small documents split
// over nine files, each under the per-file bound, are refused by the
// package bound (before it, the render of such a package took 68 s and
// 1.9 GB), with and without a pipeline, and the draft is unchanged.
func TestUpdateRefusesDocumentsSplitOverFiles(t *testing.T) {
	ctx := context.Background()
	for _, p := range []pipeline.Pipeline{nil, pipeline.NewKptfile(fnruntime.NewRegistry(nil), nil)} {
		r := memrepo.New(repoName, nil)
		e := newEngine(t, r, p)
		key := revision.Key{Package: "app", Workspace: "ws1"}
		pr, err := e.Init(ctx, repoName, key, engine.InitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		in := files(t, pr)
		for i := range 9 {
			if in, err = in.With(fmt.Sprintf("cm%d.yaml", i), []byte(hostileyaml.ManyDocuments(9_444))); err != nil {
				t.Fatal(err)
			}
		}
		_, err = e.Update(ctx, repoName, key, in, engine.UpdateOptions{})
		var le *revision.YAMLLimitError
		if !errors.Is(err, repository.ErrInvalidInput) || !errors.As(err, &le) || le.Limit != "MaxPackageDocuments" || le.File != "cm1.yaml" {
			t.Fatalf("update: %v, want MaxPackageDocuments crossed in cm1.yaml", err)
		}
		if cur, _ := r.Get(ctx, key); cur.Meta().Version != pr.Meta().Version {
			t.Fatal("the refused update changed the draft")
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

// TestCloneRefusesHostileOCIUpstream: a published revision in an OCI
// registry whose layer holds an alias bomb (written by an engine with the
// bounds lifted, as another tool could) is refused by Clone and Upgrade
// with a *revision.YAMLLimitError naming the file, and nothing is written
// downstream.
func TestCloneRefusesHostileOCIUpstream(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	catalog, err := ocirepo.Open(ctx, repository.Spec{Name: "catalog", Type: repository.TypeOCI,
		OCI: &repository.OCISpec{Registry: strings.TrimPrefix(srv.URL, "http://") + "/blueprints"}}, &ocirepo.Options{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer catalog.Close()
	deploy := memrepo.New("deploy", nil)
	defer deploy.Close()
	repos := engine.Repos{"catalog": catalog, "deploy": deploy}
	unbounded := &revision.YAMLLimits{MaxBytes: -1, MaxDocuments: -1, MaxDepth: -1, MaxNodes: -1, MaxAliasNodes: -1, MaxMapEntries: -1,
		MaxPackageDocuments: -1, MaxPackageNodes: -1}
	loose, err := engine.New(&engine.Options{Repositories: repos, YAMLLimits: unbounded})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(&engine.Options{Repositories: repos})
	if err != nil {
		t.Fatal(err)
	}
	publish := func(k revision.Key, bomb bool) {
		t.Helper()
		var d revision.PackageRevision
		var err error
		if k.Workspace == "v1" {
			d, err = loose.Init(ctx, "catalog", k, engine.InitOptions{})
		} else {
			d, err = loose.Copy(ctx, "catalog", revision.Key{Repository: "catalog", Package: k.Package, Revision: 1}, k.Workspace, engine.CopyOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		f := files(t, d)
		if bomb {
			f, _ = f.With("bomb.yaml", []byte(hostileyaml.Laughs(9, 9)))
			if _, err := loose.Update(ctx, "catalog", k, f, engine.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := loose.Propose(ctx, "catalog", k); err != nil {
			t.Fatal(err)
		}
		if _, err := loose.Approve(ctx, "catalog", k); err != nil {
			t.Fatal(err)
		}
	}
	publish(revision.Key{Package: "bad", Workspace: "v1"}, true)
	_, err = e.Clone(ctx, "deploy", revision.Key{Package: "bad", Workspace: "ws"},
		engine.CloneSource{Revision: &revision.Key{Repository: "catalog", Package: "bad", Revision: 1}}, engine.CloneOptions{})
	var le *revision.YAMLLimitError
	if !errors.Is(err, repository.ErrInvalidInput) || !errors.As(err, &le) || le.File != "bomb.yaml" {
		t.Fatalf("clone: %v, want a *revision.YAMLLimitError for bomb.yaml", err)
	}
	if got, err := deploy.List(ctx, repository.ListOptions{}); err != nil || len(got) != 0 {
		t.Fatalf("after the refused clone, deploy holds %d revisions (%v)", len(got), err)
	}

	// An upgrade to a hostile new upstream is refused the same way.
	publish(revision.Key{Package: "good", Workspace: "v1"}, false)
	if _, err := e.Clone(ctx, "deploy", revision.Key{Package: "good", Workspace: "ws"},
		engine.CloneSource{Revision: &revision.Key{Repository: "catalog", Package: "good", Revision: 1}}, engine.CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	publish(revision.Key{Package: "good", Workspace: "v2"}, true)
	before, _ := deploy.List(ctx, repository.ListOptions{})
	_, err = e.UpgradeDraft(ctx, "deploy", revision.Key{Package: "good", Workspace: "ws"},
		engine.Ref{Key: revision.Key{Repository: "catalog", Package: "good", Revision: 1}},
		engine.Ref{Key: revision.Key{Repository: "catalog", Package: "good", Revision: 2}}, engine.UpgradeOptions{})
	if !errors.As(err, &le) || le.File != "bomb.yaml" {
		t.Fatalf("upgrade: %v, want a *revision.YAMLLimitError for bomb.yaml", err)
	}
	after, _ := deploy.List(ctx, repository.ListOptions{})
	if len(after) != len(before) || after[0].Meta().Version != before[0].Meta().Version {
		t.Fatal("the refused upgrade changed deploy")
	}
}
