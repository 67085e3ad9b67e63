package ocirepo

import (
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/repotest"
)

func TestConformanceInProcess(t *testing.T) {
	repotest.Run(t, repotest.Harness{
		New: func(t *testing.T) repository.Repository {
			return mustOpen(t, ociSpec(inProcessRegistry(t)+"/packages"), nil)
		},
		// The second handle lists in pages of 3 (Link headers).
		Reopen: func(t *testing.T, r repository.Repository) repository.Repository {
			return mustOpen(t, r.(*Repository).spec, &Options{RemoteOptions: []remote.Option{remote.WithPageSize(3)}})
		},
		NoPlaceholder: true,
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
	})
}
