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

// A package that requires a capability cannot be approved, once
// enforcement is on for it, until a package providing the capability is
// published and the check runs again.
func ExampleEngine_CheckDependencies() {
	ctx := context.Background()
	repo := memrepo.New("deploy", nil)
	defer repo.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"deploy": repo}})
	if err != nil {
		log.Fatal(err)
	}
	withPackageFile := func(spec string) engine.Mutation {
		return func(_ context.Context, f revision.Files) (revision.Files, error) {
			return f.With(revision.PackageFileName, []byte("apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nspec:\n"+spec))
		}
	}
	app := revision.Key{Package: "app", Workspace: "v1"}
	if _, err := e.Init(ctx, "deploy", app, engine.InitOptions{Mutate: withPackageFile("  requires: [{capability: ingress}]\n")}); err != nil {
		log.Fatal(err)
	}
	res, _, err := e.CheckDependencies(ctx, "deploy", app, &engine.DependenciesOptions{Gate: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("satisfied:", res.Satisfied())
	if _, err := e.Propose(ctx, "deploy", app); err != nil {
		log.Fatal(err)
	}
	_, err = e.Approve(ctx, "deploy", app)
	fmt.Println("approve refused:", errors.Is(err, engine.ErrNotReady))

	nginx := revision.Key{Package: "nginx", Workspace: "v1"}
	if _, err := e.Init(ctx, "deploy", nginx, engine.InitOptions{Mutate: withPackageFile("  provides: [{capability: ingress}]\n")}); err != nil {
		log.Fatal(err)
	}
	if _, err := e.Propose(ctx, "deploy", nginx); err != nil {
		log.Fatal(err)
	}
	if _, err := e.Approve(ctx, "deploy", nginx); err != nil {
		log.Fatal(err)
	}

	res, _, err = e.CheckDependencies(ctx, "deploy", app, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res)
	pub, err := e.Approve(ctx, "deploy", app)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("approved:", pub.Meta().Key)
	// Output:
	// satisfied: false
	// approve refused: true
	// deploy:app@v1
	//   Satisfied capability ingress (implicit): deploy:nginx@v1/v1
	// satisfied
	// approved: deploy:app@v1/v1
}
