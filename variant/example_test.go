package variant_test

import (
	"context"
	"fmt"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A PackageVariant clones a published blueprint into a deployment
// repository, specialised; a second sync finds nothing to do.
func ExampleSync() {
	ctx := context.Background()
	repos := engine.Repos{
		"blueprints":  memrepo.New("blueprints", nil),
		"deployments": memrepo.New("deployments", nil),
	}
	e, _ := engine.New(&engine.Options{Repositories: repos})

	// Publish a blueprint.
	key := revision.Key{Package: "bucket", Workspace: "v1"}
	if _, err := e.Init(ctx, "blueprints", key, engine.InitOptions{Description: "a bucket"}); err != nil {
		panic(err)
	}
	if _, err := e.Propose(ctx, "blueprints", key); err != nil {
		panic(err)
	}
	if _, err := e.Approve(ctx, "blueprints", key); err != nil {
		panic(err)
	}

	pv := &variant.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Name: "bucket-prod"},
		Spec: variant.PackageVariantSpec{
			Upstream:       &variant.Upstream{Repo: "blueprints", Package: "bucket"},
			Downstream:     &variant.Downstream{Repo: "deployments", Package: "prod-bucket"},
			Labels:         map[string]string{"env": "prod"},
			PackageContext: &variant.PackageContext{Data: map[string]string{"region": "eu"}},
		},
	}
	opts := &variant.Options{Repositories: repos}
	for range 2 {
		res, err := variant.Sync(ctx, e, pv, opts)
		if err != nil {
			panic(err)
		}
		fmt.Println(res)
	}
	pr, _ := e.Get(ctx, "deployments", revision.Key{Package: "prod-bucket", Workspace: "packagevariant-1"})
	fmt.Println(pr.Meta().Metadata.Labels["env"], pr.Meta().Metadata.Annotations[variant.OwnerAnnotation])
	// Output:
	// bucket-prod: created deployments:prod-bucket@packagevariant-1
	// bucket-prod: unchanged deployments:prod-bucket@packagevariant-1
	// prod bucket-prod
}
