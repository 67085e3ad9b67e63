package memrepo_test

import (
	"testing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/memrepo"
	"github.com/configasdata/cad/repository/repotest"
)

func TestConformance(t *testing.T) {
	repotest.Run(t, repotest.Harness{
		New:         func(t *testing.T) repository.Repository { return memrepo.New("test", nil) },
		Concurrency: 16,
	})
}
