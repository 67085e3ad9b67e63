package engine_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/repository/ocirepo"
	"github.com/configasdata/cad/revision"
)

// A blueprint published in an OCI registry is cloned into a git-shaped
// repository, upgraded when the registry gets v2, and discovered as
// upgradable in between: the engine reads every backend through the same
// contract.
func TestCloneAndUpgradeFromOCI(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	catalog, err := ocirepo.Open(ctx, repository.Spec{Name: "catalog", Type: repository.TypeOCI, OCI: &repository.OCISpec{Registry: host + "/blueprints"}},
		&ocirepo.Options{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer catalog.Close()
	deploy := memrepo.New("deploy", nil)
	defer deploy.Close()
	e, err := engine.New(&engine.Options{Repositories: engine.Repos{"catalog": catalog, "deploy": deploy}})
	if err != nil {
		t.Fatal(err)
	}
	publish := func(repo string, k revision.Key) revision.PackageRevision {
		t.Helper()
		if _, err := e.Propose(ctx, repo, k); err != nil {
			t.Fatal(err)
		}
		pr, err := e.Approve(ctx, repo, k)
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	d, err := e.Init(ctx, "catalog", revision.Key{Package: "basens", Workspace: "v1"}, engine.InitOptions{Description: "a namespace"})
	if err != nil {
		t.Fatal(err)
	}
	files, err := d.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err = files.With("ns.yaml", []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: example\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(ctx, "catalog", d.Meta().Key, files, engine.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	v1 := publish("catalog", d.Meta().Key)

	clone, err := e.Clone(ctx, "deploy", revision.Key{Package: "team-a", Workspace: "v1"},
		engine.CloneSource{Revision: &revision.Key{Repository: "catalog", Package: "basens", Revision: 1}}, engine.CloneOptions{})
	if err != nil {
		t.Fatalf("Clone from OCI: %v", err)
	}
	info, err := clone.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// kpt's generic lock, not a git lock naming a registry as a git repo.
	wantLock := revision.GenericLock{StoreID: "oci://" + host + "/blueprints", ResourceID: "basens/v1", ResourceVersion: v1.Meta().Commit}
	if info.UpstreamLock == nil || info.UpstreamLock.Type != revision.GenericOrigin || info.UpstreamLock.Git != nil ||
		info.UpstreamLock.Generic == nil || *info.UpstreamLock.Generic != wantLock || !strings.HasPrefix(v1.Meta().Commit, "sha256:") {
		t.Fatalf("upstream lock of a clone from OCI: %+v (published digest %s)", info.UpstreamLock, v1.Meta().Commit)
	}
	if info.Upstream == nil || info.Upstream.Type != revision.GenericOrigin || info.Upstream.Git != nil || info.Upstream.UpdateStrategy != "" {
		t.Fatalf("upstream of a clone from OCI: %+v", info.Upstream)
	}
	cf, err := clone.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := cf.Get("ns.yaml")
	if !strings.Contains(string(ns), "internal.kpt.dev/upstream-identifier: '|Namespace|default|example'") {
		t.Fatalf("cloned ns.yaml lacks its merge key:\n%s", ns)
	}
	local := publish("deploy", clone.Meta().Key)

	cp, err := e.Copy(ctx, "catalog", v1.Meta().Key, "v2", engine.CopyOptions{Mutate: func(_ context.Context, f revision.Files) (revision.Files, error) {
		return f.With("quota.yaml", []byte("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: default\n  namespace: example\n"))
	}})
	if err != nil {
		t.Fatal(err)
	}
	v2 := publish("catalog", cp.Meta().Key)
	cands, err := e.DiscoverUpgrades(ctx, []string{"deploy"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 1 || cands[0].Latest() != v2.Meta().Key {
		t.Fatalf("DiscoverUpgrades: %+v, want team-a with %s", cands, v2.Meta().Key)
	}
	up, err := e.Upgrade(ctx, "deploy", local.Meta().Key, engine.Ref{Repository: "catalog", Key: v1.Meta().Key},
		engine.Ref{Repository: "catalog", Key: v2.Meta().Key}, "v2", engine.UpgradeOptions{})
	if err != nil {
		t.Fatalf("Upgrade from OCI: %v", err)
	}
	uf, err := up.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !uf.Has("quota.yaml") || !uf.Has("ns.yaml") {
		t.Fatalf("upgraded files %v", uf.Paths())
	}
	ui, err := up.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g := ui.UpstreamLock.Generic; g == nil || g.ResourceVersion != v2.Meta().Commit || g.ResourceID != "basens/v2" || g.StoreID != wantLock.StoreID {
		t.Fatalf("upstream lock after upgrade: %+v", ui.UpstreamLock)
	}
	// The OCI upstream cannot be deleted while the upgraded package names it.
	if _, err := e.ProposeDelete(ctx, "catalog", v2.Meta().Key); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Propose(ctx, "deploy", up.Meta().Key); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Approve(ctx, "deploy", up.Meta().Key); err != nil {
		t.Fatal(err)
	}
	var refErr *engine.ReferencedError
	if err := e.Delete(ctx, "catalog", v2.Meta().Key); !errors.As(err, &refErr) {
		t.Fatalf("deleting an OCI upstream named by a generic lock: %v, want a *ReferencedError", err)
	}
}
