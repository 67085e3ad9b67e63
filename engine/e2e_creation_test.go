package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/revision"
)

// e2eTask is what Porch's readers take from a commit's kpt: annotation:
// porchctl rpkg upgrade reads tasks[0].clone.upstreamRef.upstreamRef.name
// or tasks[0].upgrade.newUpstreamRef.name of a revision.
type e2eTask struct {
	Type string `json:"type"`
	Init *struct {
		Description string `json:"description"`
	} `json:"init"`
	Clone *struct {
		UpstreamRef struct {
			UpstreamRef *struct {
				Name string `json:"name"`
			} `json:"upstreamRef"`
		} `json:"upstreamRef"`
	} `json:"clone"`
	Edit *struct {
		SourceRef struct {
			Name string `json:"name"`
		} `json:"sourceRef"`
	} `json:"edit"`
	Upgrade *struct {
		NewUpstreamRef struct {
			Name string `json:"name"`
		} `json:"newUpstreamRef"`
		OldUpstreamRef struct {
			Name string `json:"name"`
		} `json:"oldUpstreamRef"`
		LocalPackageRevisionRef struct {
			Name string `json:"name"`
		} `json:"localPackageRevisionRef"`
	} `json:"upgrade"`
}

// e2eTaskOf reads, with the git CLI, the task of the kpt: annotation of
// the commit ref names for package pkg.
func e2eTaskOf(t *testing.T, r *e2eRepo, ref, pkg string) e2eTask {
	t.Helper()
	for _, line := range strings.Split(r.git(t, "log", "-1", "--format=%B", ref), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "kpt:")
		if !ok {
			continue
		}
		var a struct {
			Package string          `json:"package"`
			Task    json.RawMessage `json:"task"`
		}
		if err := json.Unmarshal([]byte(rest), &a); err != nil || a.Package != pkg {
			continue
		}
		var task e2eTask
		if err := json.Unmarshal(a.Task, &task); err != nil {
			t.Fatalf("%s: task %s: %v", ref, a.Task, err)
		}
		return task
	}
	t.Fatalf("%s has no kpt: annotation with a task for %s", ref, pkg)
	return e2eTask{}
}

// TestE2ECreationTask: every revision records how it was created, as the
// creation task Porch writes in the kpt: annotation of the draft's commits
// and of the approval, so that Porch's readers find the upstream of a
// clone or an upgrade and the source of a copy; the engine reads it back
// as Meta.Creation.
func TestE2ECreationTask(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eBlueprints, e2eTest)
		v1, v2 := env.blueprints(e2eBlueprints)
		want := func(what string, pr revision.PackageRevision, c revision.Creation) {
			t.Helper()
			if got := pr.Meta().Creation; !got.Equal(&c) {
				t.Fatalf("%s: creation %+v, want %+v", what, got, c)
			}
		}
		bk := func(pr revision.PackageRevision) *revision.Key {
			k := pr.Meta().Key
			k.Repository, k.Revision = e2eBlueprints, 0
			return &k
		}
		want("blueprint v1", v1, revision.Creation{Op: revision.CreatedByInit, Description: "basens description"})
		want("blueprint v2", v2, revision.Creation{Op: revision.CreatedByCopy, Source: bk(v1)})

		// A clone names its upstream by revision number only; the record
		// names it by workspace, as Porch does.
		key := revision.Key{Package: "ns", Workspace: "v1"}
		src := revision.Key{Repository: e2eBlueprints, Package: "basens", Revision: 1}
		cloned, err := env.e.Clone(e2eCtx, e2eTest, key, engine.CloneSource{Revision: &src}, engine.CloneOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want("clone", cloned, revision.Creation{Op: revision.CreatedByClone, Source: bk(v1)})
		if _, err := env.e.Update(e2eCtx, e2eTest, key, e2eWith(t, e2eFiles(t, cloned), map[string]string{"cm.yaml": "a: 1\n"}), engine.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		pub := env.publish(e2eTest, key)
		want("published clone", pub, revision.Creation{Op: revision.CreatedByClone, Source: bk(v1)})

		up := revision.Key{Package: "ns", Workspace: "v2"}
		upgraded, err := env.e.Upgrade(e2eCtx, e2eTest, pub.Meta().Key, engine.Ref{Repository: e2eBlueprints, Key: v1.Meta().Key},
			engine.Ref{Repository: e2eBlueprints, Key: revision.Key{Package: "basens", Revision: 2}}, up.Workspace, engine.UpgradeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		local := pub.Meta().Key
		local.Repository, local.Revision = e2eTest, 0
		want("upgrade", upgraded, revision.Creation{Op: revision.CreatedByUpgrade, OldUpstream: bk(v1), NewUpstream: bk(v2), Local: &local})

		if env.repo[e2eTest].bare == "" {
			return
		}
		// What Porch reads, read by the git CLI.
		r := env.repo[e2eTest]
		if task := e2eTaskOf(t, r, "refs/tags/ns/v1", "ns"); task.Type != "clone" || task.Clone == nil || task.Clone.UpstreamRef.UpstreamRef == nil ||
			task.Clone.UpstreamRef.UpstreamRef.Name != "test-blueprints.basens.v1" {
			t.Fatalf("the approval of the clone records the task %+v", task)
		}
		if task := e2eTaskOf(t, r, "refs/heads/drafts/ns/v2", "ns"); task.Type != "upgrade" || task.Upgrade == nil ||
			task.Upgrade.NewUpstreamRef.Name != "test-blueprints.basens.v2" || task.Upgrade.OldUpstreamRef.Name != "test-blueprints.basens.v1" ||
			task.Upgrade.LocalPackageRevisionRef.Name != "porch-test.ns.v1" {
			t.Fatalf("the upgrade's draft records the task %+v", task)
		}
		bp := env.repo[e2eBlueprints]
		if task := e2eTaskOf(t, bp, "refs/tags/basens/v2", "basens"); task.Type != "edit" || task.Edit == nil || task.Edit.SourceRef.Name != "test-blueprints.basens.v1" {
			t.Fatalf("the copy records the task %+v", task)
		}
		if task := e2eTaskOf(t, bp, "refs/tags/basens/v1", "basens"); task.Type != "init" || task.Init == nil || task.Init.Description != "basens description" {
			t.Fatalf("the init records the task %+v", task)
		}
	})
}
