package ocirepo_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/ocirepo"
	"github.com/configasdata/cad/revision"
)

func Example() {
	ctx := context.Background()
	// An in-process registry; any distribution-API registry works.
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	r, err := ocirepo.Open(ctx, repository.Spec{
		Name: "blueprints",
		Type: repository.TypeOCI,
		OCI:  &repository.OCISpec{Registry: host + "/packages"},
	}, &ocirepo.Options{Insecure: true})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	key := revision.Key{Package: "net/istio", Workspace: "first"}
	d, err := r.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: revision.MustFiles(map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: istio\n",
	})})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := d.Commit(ctx, revision.CommitOptions{Message: "init"}); err != nil {
		log.Fatal(err)
	}
	if _, err := r.UpdateLifecycle(ctx, key, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		log.Fatal(err)
	}
	pub, err := r.UpdateLifecycle(ctx, key, revision.LifecyclePublished, repository.UpdateOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(pub.Meta().Key, pub.Meta().Lifecycle)

	revs, err := r.List(ctx, repository.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, pr := range revs {
		fmt.Println(pr.Meta().Key.Package, pr.Meta().Key.Revision, pr.Meta().Lifecycle)
	}
	// Output:
	// blueprints:net/istio@first/v1 Published
	// net/istio 1 Published
}
