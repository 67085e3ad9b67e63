package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// e2eRenderer is the Kptfile pipeline with cad's builtin functions, no
// containers, and e2eFailingImage, a function that fails when it runs, as
// a nonexistent image fails in Porch once the functions before it ran. An
// image without an implementation fails before any function runs.
func e2eRenderer() pipeline.Pipeline {
	reg := fnruntime.NewRegistry(nil)
	reg.Register(e2eFailingImage, pipeline.FunctionFunc(func(context.Context, *pipeline.ResourceList) error {
		return errors.New("the function failed at run time")
	}))
	return pipeline.NewKptfile(reg, nil)
}

const (
	e2eSetAnnotations = "ghcr.io/kptdev/krm-functions-catalog/set-annotations:v0.1.4"
	e2eMissingImage   = "ghcr.io/kptdev/krm-functions-catalog/no-such-function:v0.0.1"
	e2eFailingImage   = "example.com/fails-at-run-time:v1"
	e2eRenderCM       = `apiVersion: v1
kind: ConfigMap
metadata:
  name: test-config
data:
  key: before-render
`
)

// e2eWithPipeline returns f with the root Kptfile's mutators set to fns and,
// when save, the kpt.dev/save-on-render-failure annotation.
func e2eWithPipeline(t *testing.T, f revision.Files, save bool, fns ...revision.Function) revision.Files {
	t.Helper()
	kf := e2eKptfile(t, f)
	kf.Pipeline = &revision.Pipeline{Mutators: fns}
	if save {
		if kf.Metadata.Annotations == nil {
			kf.Metadata.Annotations = map[string]string{}
		}
		kf.Metadata.Annotations["kpt.dev/save-on-render-failure"] = "true"
	}
	data, err := kf.Encode()
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.With(revision.KptfileName, data)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestE2ERender: TestUpdateResources, TestUpdateResourcesEmptyPatch,
// TestRenderFailureNoPush, TestRenderFailureWithPushAnnotation and
// TestRenderFailureWithSaveAndPushAnnotations, with cad's Kptfile
// pipeline and builtin functions.
func TestE2ERender(t *testing.T) {
	e2eRun(t, func(t *testing.T, b e2eBackend) {
		env := newE2E(t, b, e2eTest)
		env.e = env.engine(e2eRenderer())
		r := env.repo[e2eTest]

		t.Run("UpdateResources", func(t *testing.T) {
			key := revision.Key{Package: "update-resources", Workspace: "workspace"}
			pr, err := env.e.Init(e2eCtx, e2eTest, key, engine.InitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := e2eKptfile(t, e2eFiles(t, pr)).Condition(pipeline.ConditionRendered); !ok || c.Status != revision.ConditionTrue {
				t.Fatalf("init not rendered: %+v", c)
			}
			f := e2eWithPipeline(t, e2eFiles(t, pr), false, revision.Function{Image: e2eSetAnnotations,
				ConfigMap: map[string]string{"color": "red", "fruit": "apple"}})
			f = e2eWith(t, f, map[string]string{"config-map.yaml": e2eRenderCM})
			if _, err := env.e.Update(e2eCtx, e2eTest, key, f, engine.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			got := e2eFiles(t, env.mustGet(e2eTest, key))
			cm := e2eFile(t, got, "config-map.yaml")
			if !strings.Contains(cm, "color: red") || !strings.Contains(cm, "fruit: apple") {
				t.Fatalf("config-map.yaml not rendered:\n%s", cm)
			}
			kf := e2eKptfile(t, got)
			if c, ok := kf.Condition(pipeline.ConditionRendered); !ok || c.Status != revision.ConditionTrue {
				t.Fatalf("Rendered condition %+v", c)
			}
			if rs := kf.Status.RenderStatus; rs != nil && rs.ErrorSummary != "" {
				t.Fatalf("render status %+v", rs)
			}

			// TestUpdateResourcesEmptyPatch: the same content again is a
			// no-op that writes nothing.
			cur := env.mustGet(e2eTest, key)
			refs := r.refs(t)
			same, err := env.e.Update(e2eCtx, e2eTest, key, got, engine.UpdateOptions{})
			if err != nil {
				t.Fatalf("empty update: %v", err)
			}
			if same.Meta().Version != cur.Meta().Version || !e2eFiles(t, same).Equal(got) {
				t.Fatalf("empty update changed the revision")
			}
			if after := r.refs(t); strings.Join(after, "\n") != strings.Join(refs, "\n") {
				t.Fatalf("empty update moved refs:\n%v\n%v", refs, after)
			}
			// So is an update to what the render makes of it anyway.
			cur = env.mustGet(e2eTest, key)
			if same, err = env.e.Update(e2eCtx, e2eTest, key, f, engine.UpdateOptions{}); err != nil || same.Meta().Version != cur.Meta().Version {
				t.Fatalf("update with unrendered but equivalent input: %v, version changed: %v", err, same != nil && same.Meta().Version != cur.Meta().Version)
			}
		})

		// failing is the package with a ConfigMap whose pipeline annotates
		// it and then runs a function that does not exist.
		failing := func(t *testing.T, key revision.Key, save bool, image string) (revision.PackageRevision, revision.Files) {
			t.Helper()
			pr, err := env.e.Init(e2eCtx, e2eTest, key, engine.InitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f := e2eWithPipeline(t, e2eFiles(t, pr), save,
				revision.Function{Image: e2eSetAnnotations, ConfigMap: map[string]string{"render-test": "partial"}},
				revision.Function{Image: image})
			return pr, e2eWith(t, f, map[string]string{"config-map.yaml": e2eRenderCM})
		}

		t.Run("RenderFailureNoPush", func(t *testing.T) {
			key := revision.Key{Package: "render-failure", Workspace: "workspace"}
			before, f := failing(t, key, false, e2eMissingImage)
			refs := r.refs(t)
			_, err := env.e.Update(e2eCtx, e2eTest, key, f, engine.UpdateOptions{})
			var re *pipeline.RenderError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "no-such-function") {
				t.Fatalf("update: %v, want a render error naming the function", err)
			}
			now := env.mustGet(e2eTest, key)
			if now.Meta().Version != before.Meta().Version || e2eFiles(t, now).Has("config-map.yaml") {
				t.Fatalf("a failed render saved %v", e2eFiles(t, now).Paths())
			}
			if after := r.refs(t); strings.Join(after, "\n") != strings.Join(refs, "\n") {
				t.Fatalf("a failed render moved refs")
			}
		})

		t.Run("RenderFailureWithPush", func(t *testing.T) {
			key := revision.Key{Package: "render-failure-push", Workspace: "workspace"}
			_, f := failing(t, key, false, e2eFailingImage)
			saved, err := env.e.Update(e2eCtx, e2eTest, key, f, engine.UpdateOptions{SaveOnRenderFailure: true})
			var re *pipeline.RenderError
			if !errors.As(err, &re) || saved == nil {
				t.Fatalf("update: %v (saved %v), want the saved revision and a render error", err, saved)
			}
			got := e2eFiles(t, env.mustGet(e2eTest, key))
			if !got.Equal(e2eFiles(t, saved)) {
				t.Fatalf("the returned revision is not what was saved")
			}
			cm := e2eFile(t, got, "config-map.yaml")
			if !strings.Contains(cm, "key: before-render") || strings.Contains(cm, "render-test") {
				t.Fatalf("want the unrendered input saved, got:\n%s", cm)
			}
			// A package that does not render cannot be proposed; it stays a
			// Draft, unchanged.
			if _, err := env.e.Propose(e2eCtx, e2eTest, key); !errors.As(err, &re) {
				t.Fatalf("propose: %v, want a render error", err)
			}
			if now := env.mustGet(e2eTest, key); now.Meta().Lifecycle != revision.LifecycleDraft || now.Meta().Version != saved.Meta().Version {
				t.Fatalf("failed propose changed the draft: %s", now.Meta().Lifecycle)
			}
		})

		t.Run("RenderFailureWithSaveAndPush", func(t *testing.T) {
			key := revision.Key{Package: "render-failure-save", Workspace: "workspace"}
			_, f := failing(t, key, true, e2eFailingImage)
			saved, err := env.e.Update(e2eCtx, e2eTest, key, f, engine.UpdateOptions{SaveOnRenderFailure: true})
			var re *pipeline.RenderError
			if !errors.As(err, &re) || saved == nil {
				t.Fatalf("update: %v (saved %v), want the saved revision and a render error", err, saved)
			}
			got := e2eFiles(t, env.mustGet(e2eTest, key))
			if cm := e2eFile(t, got, "config-map.yaml"); !strings.Contains(cm, "render-test: partial") || !strings.Contains(cm, "key: before-render") {
				t.Fatalf("want the partial render saved, got:\n%s", cm)
			}
			kf := e2eKptfile(t, got)
			if kf.Metadata.Annotations["kpt.dev/save-on-render-failure"] != "true" {
				t.Fatalf("Kptfile lost kpt.dev/save-on-render-failure:\n%s", e2eFile(t, got, "Kptfile"))
			}
			if c, ok := kf.Condition(pipeline.ConditionRendered); !ok || c.Status != revision.ConditionFalse {
				t.Fatalf("Rendered condition %+v, want False", c)
			}
		})

		// A create whose render fails writes nothing: Copy of a revision
		// whose pipeline no longer renders.
		t.Run("CopyRenderFailure", func(t *testing.T) {
			plain := env.engine(nil)
			key := revision.Key{Package: "copy-failure", Workspace: "v1"}
			pr, err := plain.Init(e2eCtx, e2eTest, key, engine.InitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f := e2eWithPipeline(t, e2eFiles(t, pr), false, revision.Function{Image: e2eMissingImage})
			if _, err := plain.Update(e2eCtx, e2eTest, key, f, engine.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := plain.Propose(e2eCtx, e2eTest, key); err != nil {
				t.Fatal(err)
			}
			v1, err := plain.Approve(e2eCtx, e2eTest, key)
			if err != nil {
				t.Fatal(err)
			}
			before := env.version(e2eTest)
			var re *pipeline.RenderError
			if _, err := env.e.Copy(e2eCtx, e2eTest, v1.Meta().Key, "v2", engine.CopyOptions{}); !errors.As(err, &re) {
				t.Fatalf("copy: %v, want a render error", err)
			}
			env.gone(e2eTest, revision.Key{Package: "copy-failure", Workspace: "v2"})
			if env.version(e2eTest) != before {
				t.Fatalf("a failed copy changed the repository")
			}
			if _, err := env.e.Clone(e2eCtx, e2eTest, revision.Key{Package: "clone-failure", Workspace: "ws"},
				engine.CloneSource{Revision: &revision.Key{Package: "copy-failure", Revision: 1}}, engine.CloneOptions{}); !errors.As(err, &re) {
				t.Fatalf("clone: %v, want a render error", err)
			}
			if env.version(e2eTest) != before || len(env.list(e2eTest, "clone-failure")) != 0 {
				t.Fatalf("a failed clone changed the repository")
			}
		})
	})
}
