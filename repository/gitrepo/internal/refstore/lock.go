package refstore

// LockName is the name of cad's lock file in a git directory. Every
// cross-process lock cad takes on a repository is one byte of this file
// (a LockRole), locked apart from the others; see "The cross-process
// lock" in the package documentation.
const LockName = "cad.lock"

// LockRole is what a FileLock guards: the byte of cad.lock it locks.
type LockRole int64

// The roles, one byte of cad.lock each (the offset is the value).
const (
	// RoleStore is the storage: held shared by readers and exclusive by
	// a writer.
	RoleStore LockRole = iota
	// RoleMaintain is held exclusive by a maintenance run.
	RoleMaintain
	// RolePush is held exclusive by a write to a remote, from before
	// its fetch until the mirror's refs are set.
	RolePush
	// RoleFetch is held exclusive by a read's staged fetch of a remote.
	RoleFetch

	numRoles
)

// String returns the role's name, for errors.
func (r LockRole) String() string {
	switch r {
	case RoleStore:
		return "store"
	case RoleMaintain:
		return "maintenance"
	case RolePush:
		return "push"
	case RoleFetch:
		return "fetch"
	}
	return "unknown"
}
