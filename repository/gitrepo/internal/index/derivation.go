package index

import (
	"fmt"
	"hash/crc32"
	"sync/atomic"
)

// Kind names a kind of record the indexes hold, each derived from git
// objects by code of its own.
type Kind int

const (
	// PathRecords are cad-paths' path records: the tree a path leads
	// to under a root tree.
	PathRecords Kind = iota
	// WorkspaceRecords are cad-paths' workspace records: the workspace a
	// v<N> tag's object gives its package (package gitrepo's
	// objectWorkspace).
	WorkspaceRecords
	numKinds
)

func (k Kind) String() string {
	switch k {
	case PathRecords:
		return "path"
	case WorkspaceRecords:
		return "workspace"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Derivation versions: the version of the code that derives each kind of
// record from the objects. A record is a fact about immutable objects,
// so it is never stale, unless the code that derived it changes what it
// answers: then its kind's version must be bumped, and package gitrepo's
// TestDerivationGolden fails until it is (it hashes what each derivation
// answers on a fixed repository built by the git CLI, per version).
//
// A record's checksum is seeded with its kind's version (version 1 seeds
// nothing: the files written before versions existed), so that a record
// another version derived fails its checksum and is read as no record
// (a cache miss costing a read of the objects), never as an answer.
const (
	PathVersion      = 1
	WorkspaceVersion = 1
)

// seeds holds each kind's checksum seed, from its version; a variable
// for the tests (SetDerivationVersion).
var seeds = [numKinds]atomic.Uint32{}

func init() {
	for k, v := range [numKinds]int{PathVersion, WorkspaceVersion} {
		seeds[k].Store(seedOf(Kind(k), v))
	}
}

// seedOf is the checksum seed of version v of kind k's derivation.
func seedOf(k Kind, v int) uint32 {
	if v == 1 {
		return 0
	}
	return crc32.ChecksumIEEE(fmt.Appendf(nil, "cad %s derivation v%d", k, v))
}

// sum is the checksum of a record of kind k holding b.
func sum(k Kind, b []byte) uint32 {
	return crc32.Update(seeds[k].Load(), crc32.IEEETable, b)
}

// off holds the indexes the tests turned off (SetOff), a bit each:
// offPaths, offWorkspaces.
var off atomic.Uint32

const (
	offPaths = 1 << iota
	offWorkspaces
)

// isOff reports whether the tests turned the index bit off.
func isOff(bit uint32) bool { return off.Load()&bit != 0 }
