package ocirepo

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/repotest"
	"github.com/configasdata/cad/revision"
)

// damageTag replaces the published tag of key in r with a manifest over
// r's MaxManifestBytes, which a list leaves out as damaged, and returns
// the tag.
func damageTag(t *testing.T, r repository.Repository, key revision.Key) string {
	t.Helper()
	o := r.(*Repository)
	repo, err := o.repoOf(key.Package)
	if err != nil {
		t.Fatal(err)
	}
	spec := manifestSpec{tag: publishedTag(key.Revision), pkg: key.Package, workspace: key.Workspace,
		lifecycle: revision.LifecyclePublished, message: "@PAD@"}
	raw, err := spec.build()
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.Replace(raw, []byte("@PAD@"), bytes.Repeat([]byte("x"), int(o.opts.MaxManifestBytes)), 1)
	if err := o.pusher().Put(context.Background(), repo.Tag(publishedTag(key.Revision)), rawManifest(raw)); err != nil {
		t.Fatal(err)
	}
	return "tag " + publishedTag(key.Revision) + " of package " + key.Package
}

func TestConformanceInProcess(t *testing.T) {
	repotest.Run(t, repotest.Harness{
		Damage: damageTag,
		New: func(t *testing.T) repository.Repository {
			return mustOpen(t, ociSpec(inProcessRegistry(t)+"/packages"), nil)
		},
		// The second handle lists in pages of 3 (Link headers).
		Reopen: func(t *testing.T, r repository.Repository) repository.Repository {
			return mustOpen(t, r.(*Repository).spec, &Options{RemoteOptions: []remote.Option{remote.WithPageSize(3)}})
		},
		NoPlaceholder: true,
		NoBatch:       true,
	})
}

// TestConformanceInProcessRoot runs the suite with packages at the root of
// the registry (no path prefix).
func TestConformanceInProcessRoot(t *testing.T) {
	repotest.Run(t, repotest.Harness{
		New: func(t *testing.T) repository.Repository {
			return mustOpen(t, ociSpec(inProcessRegistry(t)), nil)
		},
		NoPlaceholder: true,
		NoBatch:       true,
		Concurrency:   4,
	})
}

func TestConformanceDistribution(t *testing.T) {
	reg := startDistribution(t)
	repotest.Run(t, repotest.Harness{
		New: func(t *testing.T) repository.Repository {
			return mustOpen(t, ociSpec(reg.host+"/"+uniquePrefix()), nil)
		},
		Reopen: func(t *testing.T, r repository.Repository) repository.Repository {
			return mustOpen(t, r.(*Repository).spec, nil)
		},
		NoPlaceholder: true,
		NoBatch:       true,
	})
}
