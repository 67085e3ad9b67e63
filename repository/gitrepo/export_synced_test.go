package gitrepo

import (
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository/gitrepo/internal/refstore"
)

// SetObjectSyncHook sets the hook called with every loose object a write
// syncs (internal/refstore/synced.go), for the tests of package gitrepo_test.
func SetObjectSyncHook(f func(h plumbing.Hash)) { refstore.ObjectSyncHook = f }
