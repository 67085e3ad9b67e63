package deps_test

import (
	"context"
	"fmt"
	"log"

	"github.com/configasdata/cad/deps"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
)

// A deployment repository holds a published cert-manager package, whose
// CRD provides the Certificate API. A web package requires that API and
// an ingress capability nothing provides yet.
func Example() {
	ctx := context.Background()
	repo := memrepo.New("deploy", nil)
	defer repo.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"deploy": repo}})
	if err != nil {
		log.Fatal(err)
	}
	create := func(pkg string, files map[string]string) revision.Key {
		key := revision.Key{Package: pkg, Workspace: "v1"}
		_, err := e.Init(ctx, "deploy", key, engine.InitOptions{Mutate: func(_ context.Context, f revision.Files) (revision.Files, error) {
			for p, c := range files {
				if f, err = f.With(p, []byte(c)); err != nil {
					return f, err
				}
			}
			return f, nil
		}})
		if err != nil {
			log.Fatal(err)
		}
		return key
	}
	cm := create("cert-manager", map[string]string{"crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: certificates.cert-manager.io}
spec:
  group: cert-manager.io
  names: {kind: Certificate}
  versions: [{name: v1, served: true}]
`})
	if _, err := e.Propose(ctx, "deploy", cm); err != nil {
		log.Fatal(err)
	}
	if _, err := e.Approve(ctx, "deploy", cm); err != nil {
		log.Fatal(err)
	}
	web := create("web", map[string]string{revision.PackageFileName: `apiVersion: cad.configasdata.dev/v1alpha1
kind: Package
metadata: {name: web}
spec:
  requires:
  - api: {group: cert-manager.io, version: v1, kind: Certificate}
  - capability: ingress
`})
	res, err := e.Dependencies(ctx, "deploy", web, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res)
	fmt.Println(res.Condition().Status, res.Condition().Message)

	// The same resolution without an engine: the repository's latest
	// published revisions are the universe.
	universe, err := deps.Latest(ctx, repo)
	if err != nil {
		log.Fatal(err)
	}
	pr, err := repo.Get(ctx, web)
	if err != nil {
		log.Fatal(err)
	}
	pkg, err := deps.Read(ctx, pr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(deps.Resolve(pkg, universe).Missing()), "missing")
	// Output:
	// deploy:web@v1
	//   Satisfied api cert-manager.io/v1, Kind=Certificate (implicit): deploy:cert-manager@v1/v1
	//   Missing   capability ingress (implicit): nothing provides it
	// not satisfied: 1 missing, 0 cycle(s)
	// False missing capability ingress: nothing provides it
	// 1 missing
}
