package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// A package is created, edited, proposed and approved; approval is refused
// until its readiness gate is satisfied.
func Example() {
	ctx := context.Background()
	repo := memrepo.New("blueprints", nil)
	defer repo.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"blueprints": repo}})
	if err != nil {
		log.Fatal(err)
	}

	key := revision.Key{Package: "basens", Workspace: "first"}
	pr, err := e.Init(ctx, "blueprints", key, engine.InitOptions{Description: "a base namespace"})
	if err != nil {
		log.Fatal(err)
	}
	files, _ := pr.Files(ctx)
	fmt.Println(pr.Meta().Key, pr.Meta().Lifecycle, files.Paths())

	// Replace the content: a namespace, and a gate that is not yet met.
	edit := revision.MustFiles(map[string]string{
		"Kptfile": `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: basens
info:
  readinessGates:
  - conditionType: Tested
`,
		"namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: example\n",
	})
	if _, err := e.Update(ctx, "blueprints", key, edit, engine.UpdateOptions{}); err != nil {
		log.Fatal(err)
	}
	if _, err := e.Propose(ctx, "blueprints", key); err != nil {
		log.Fatal(err)
	}
	_, err = e.Approve(ctx, "blueprints", key)
	fmt.Println(errors.Is(err, engine.ErrNotReady), err)

	// Back to draft, record the condition, propose and approve.
	if _, err := e.Reject(ctx, "blueprints", key); err != nil {
		log.Fatal(err)
	}
	kf, _ := edit.Get("Kptfile")
	kf = append(kf, "status:\n  conditions:\n  - type: Tested\n    status: \"True\"\n"...)
	edit, _ = edit.With("Kptfile", kf)
	if _, err := e.Update(ctx, "blueprints", key, edit, engine.UpdateOptions{}); err != nil {
		log.Fatal(err)
	}
	if _, err := e.Propose(ctx, "blueprints", key); err != nil {
		log.Fatal(err)
	}
	var pub revision.PackageRevision
	err = engine.RetryOnConflict(ctx, 5, func() error {
		var err error
		pub, err = e.Approve(ctx, "blueprints", key)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(pub.Meta().Key, pub.Meta().Lifecycle)

	latest, _ := e.Latest(ctx, "blueprints", "basens")
	fmt.Println("latest:", latest.Meta().Key)
	// Output:
	// blueprints:basens@first Draft [Kptfile README.md package-context.yaml]
	// true approve blueprints:basens@first: readiness gates not satisfied (condition not True): Tested
	// blueprints:basens@first/v1 Published
	// latest: blueprints:basens@first/v1
}
