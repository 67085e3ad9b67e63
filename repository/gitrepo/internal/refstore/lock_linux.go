package refstore

// setLockCmd is F_OFD_SETLK: the lock belongs to the open file
// description, as an flock does, rather than to the process. (The process
// shares one description among its FileLocks all the same, as the other
// systems must.) A variable so that tests run the other systems' F_SETLK.
var setLockCmd = 37 // F_OFD_SETLK, the same on every Linux architecture

// legacyFlock: the store's role is also taken as an flock on the whole of
// cad.lock, which is what cad before v0.2 took for it, so that a process
// of an older cad and one of this one sharing a repository keep their
// readers and writers apart. On Linux flock and record locks are
// independent; see "The cross-process lock" in the package
// documentation. A variable for the tests.
var legacyFlock = true
