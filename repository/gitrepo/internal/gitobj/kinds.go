package gitobj

// Cache kinds: what an entry of the cache holds for its object id. The
// pack reader keeps resolved objects (kindPacked) and delta ropes
// (kindRope, deltatree.go); package gitrepo keeps the rest.
const (
	KindTree byte = iota
	KindCommit
	KindPeel
	KindPackages     // packages under a tree, the tree being a package candidate
	KindPackagesRoot // packages under a tree at the top of the directory
	KindFiles
	KindInfo
	KindTagAnnotations // kpt: annotations of an annotated tag's message
	KindSubtree        // the directory a path leads to under a tree
	KindReplaced       // the tree made of a tree with one entry replaced, by a hash of the four
	kindPacked         // an object resolved out of a pack, by pack and offset
)
