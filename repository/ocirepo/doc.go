// Package ocirepo keeps package revisions in an OCI registry, through
// go-containerregistry. It works with any registry that implements the
// distribution API (the catalog and tags list, paginated with Link
// headers, manifest PUT/HEAD/GET/DELETE), such as the CNCF distribution
// registry, not only Google's.
//
// Open a repository with a spec of type oci whose oci.registry is an image
// prefix, "host[:port][/path]":
//
//	r, err := ocirepo.Open(ctx, repository.Spec{
//		Name: "blueprints", Type: repository.TypeOCI,
//		OCI:  &repository.OCISpec{Registry: "registry.example/packages"},
//	}, &ocirepo.Options{Keychain: authn.DefaultKeychain})
//
// # Layout
//
// Package p is the image repository "<prefix>/p"; each revision is one
// OCI image manifest (application/vnd.oci.image.manifest.v1+json) with one
// gzip tar layer holding all the package's files (regular files only,
// sorted, with fixed times, so equal content has an equal digest and the
// blob is shared) and an image config whose rootfs lists that layer. The
// metadata is in the manifest annotations, in the kpt.dev/ namespace of
// Porch's experimental OCI support:
//
//	kpt.dev/package        the package path
//	kpt.dev/workspace      the workspace name
//	kpt.dev/revision       the revision number, "0" for drafts and proposals
//	kpt.dev/lifecycle      Draft, Proposed, Published or DeletionProposed
//	kpt.dev/upstream-lock  the Kptfile's upstreamLock as JSON, when there is one
//	kpt.dev/published-by   who approved (published revisions)
//	kpt.dev/published-at   when, RFC 3339
//	kpt.dev/message        the commit message
//	kpt.dev/task           how the revision was created (revision.Creation)
//	                       as Porch's creation task JSON, kept by every
//	                       write of the draft and by the approval
//	kpt.dev/tag            the tag the manifest was written for
//	kpt.dev/write-id       a random id: every write has its own digest
//	kpt.dev/marks          on a deletion marker, the digest it marks
//	kpt.dev/lock-expires   on a lock, when its lease ends
//	kpt.dev/metadata       on a metadata manifest, the revision's labels and
//	                       annotations as JSON
//
// The tags of a package's image repository are:
//
//	ws.<workspace>           a Draft or Proposed revision; after approval, an
//	                         alias of the published revision (same layer,
//	                         lifecycle Published, its number), so that the
//	                         workspace stays taken and is found with one HEAD
//	v<N>                     published revision N, written once on approval
//	                         and never rewritten
//	v<N>.deletion-proposed   the mark of a deletion proposal of revision N: a
//	                         manifest with the same layer, lifecycle
//	                         DeletionProposed and kpt.dev/marks = v<N>'s
//	                         digest; the published content is untouched and
//	                         rejecting the proposal deletes the mark
//	lock.<id>                a package write lock (see below)
//	meta.<workspace>         the labels, annotations, readiness gates and
//	                         conditions of the revision of
//	                         that workspace (repository.MetadataWriter): a
//	                         manifest without layers; written under the
//	                         package lock before the revision's own tag,
//	                         deleted after it, and never read when it
//	                         matches no revision
//
// [Repository.Adopt] turns any single-layer image of a package's image
// repository (by tag or digest, written by cad or not) into a revision:
// v<N> and its alias, or ws.<workspace>, naming the image's own config and
// layer blobs, so no file is rewritten.
//
// A revision's Version is the digest of the manifest that holds its state:
// the workspace tag's for drafts and proposals, v<N>'s for a published
// revision, the marker's while deletion is proposed, followed by "+" and a
// hash of the revision's metadata when it has any. Tags that do not fit
// the scheme, and manifests whose annotations disagree with their tag, are
// ignored. OCI has no branch, so there are no placeholder revisions.
//
// Listing reads the catalog (or only the one repository of
// ListOptions.Package), each repository's tag list and the manifests of
// the v<N> tags and of the workspace tags that are not their aliases
// (a HEAD per tag, which gives the manifest's digest and size, and a GET
// by digest of each manifest not yet cached; see Bounds), never a layer:
// about one request per revision, two the first time. Get reads two
// or three tags of one package, whatever the size of the registry. Layers
// are read on demand by PackageRevision.Files.
//
// # Concurrency
//
// A registry has no compare-and-swap: a manifest PUT to a tag overwrites
// it unconditionally. Every write is therefore done under a per-package
// write lock built from what a registry does guarantee, that a PUT of a
// new tag is visible to every tags list that starts after it:
//
//  1. The writer PUTs a lock manifest under a tag of its own,
//     lock.<random id>, with a lease end (now + LockTTL) in
//     kpt.dev/lock-expires. Tags of different writers never collide, so no
//     write is lost.
//  2. It lists the package's tags. If it sees another lock whose lease is
//     running, it deletes its own and retries after a random backoff, up
//     to LockTimeout, then fails with ErrConflict. Expired locks of
//     crashed writers are deleted. A lock that was listed but is gone when
//     looked at belongs to a writer that finished during the list, which
//     may therefore miss that writer's tags: the writer lists again,
//     keeping its own lock. It holds the lock only on a list that shows no
//     lock but its own; when the registry answered that list in several
//     pages (not one snapshot), it reads the tags once more, now that no
//     other writer can be running, and works from that.
//  3. Under the lock it reads the state, checks the preconditions (the
//     draft's base Version, the workspace being free, opts.Version, the
//     transition), writes, checks with a HEAD that each tag it wrote holds
//     its manifest (digest is unique per write), and deletes its lock.
//
// Of two writers that both PUT their lock, the later list of the two sees
// the other's lock, so at most one holds the lock at a time (both may back
// off, and retry), and the state a holder starts from includes every tag
// written by the holders before it. Within one Repository value, writers of a package also
// wait for each other in memory first, so that its goroutines never
// contend in the registry. Hence, as long as the registry's tag list is
// consistent (true of a single registry instance; for a replicated
// registry, only as far as its tag list is read-after-write) and no writer
// holds a lock past its lease:
//
//   - A commit succeeds only from the draft's current Version; a loser gets
//     ErrConflict (or ErrAlreadyExists for a new draft whose workspace was
//     taken) and has written no tag. The layer blob it uploaded before
//     locking is unreferenced and invisible.
//   - Approval assigns N = 1 + the highest number of any v<N> or marker tag
//     and writes v<N> before anything else: that PUT is the commit point.
//     Numbers are never handed out twice while the revision holding them
//     exists; the number of a deleted highest revision is the next
//     approval's, as in git and in Porch. Turning ws.<workspace> into an alias follows; until it has,
//     readers resolve the proposal to v<N> (List prefers v<N> for a
//     workspace; Get of a proposal checks the highest v<N>), and the next
//     writer of the package repairs a missing alias.
//   - Deleting a revision proposed for deletion deletes v<N> first (the
//     commit point), then its marker and alias; leftovers are ignored by
//     readers (a marker only applies to the digest it names).
//   - A writer checks its lease before each write and gives up with
//     ErrConflict past half the TTL, so a slow writer does not write after
//     another took its lock as abandoned. This is a lease without fencing:
//     a writer paused for longer than LockTTL/2 between that check and its
//     PUT (a stopped process, not a slow network round trip) could still
//     overwrite a tag; the HEAD after the PUT reports most such cases as
//     ErrConflict, not all. Pick LockTTL well above any pause you expect.
//
// Readers take no lock and see each tag either before or after a write.
// The distribution registry's filesystem storage rewrites link files in
// place, so a read racing a write to the same tag can fail transiently;
// such answers (5xx, DIGEST_INVALID, blob unknown) are retried.
//
// Deleting needs a registry that allows deletes (for the distribution
// registry, storage.delete.enabled). Registries differ: ggcr's deletes a
// tag, the distribution registry only a digest (with every tag on it), so
// both are tried; because every manifest names its tag and write id, no
// two tags share a digest.
//
// A Repository is safe for concurrent use. Watch polls with List every
// PollInterval; Version hashes what List sees. Neither starts goroutines
// outside the call.
//
// # Security
//
// Credentials come from Options.Auth or Options.Keychain and never appear
// in an error or a log line. Layers are untrusted: a layer over
// MaxLayerSize compressed, one that expands past MaxExpandedSize or holds
// more than MaxFiles entries, and entries with absolute paths, "..",
// names that fail revision.ValidatePath, symbolic or hard links, devices
// or FIFOs are refused with a *LayerError matching
// repository.ErrInvalidInput. The blob's digest is checked before it is
// decoded.
//
// # Bounds
//
// What the registry serves is untrusted, and each read is bounded before
// it is made. Over a bound a read fails with an error matching
// revision.ErrLimit and repository.ErrInvalidInput (a
// *revision.LimitError, or a *LayerError whose Limit names the bound);
// List leaves out a tag whose manifest is over its bound, with a
// warning, and lists the rest.
//
//   - Options.MaxManifestBytes, default DefaultMaxManifestBytes (4 MiB):
//     a manifest, checked from the size a HEAD reports before it is
//     fetched (by digest, so that its digest is verified).
//   - Options.ManifestCacheBytes, default DefaultManifestCacheBytes
//     (64 MiB): the cache of manifests read, by their size.
//   - Options.MaxLayerSize, default DefaultMaxLayerSize (64 MiB): the
//     size a layer's descriptor declares; at most that many bytes of the
//     blob are read, and a blob of another size is refused.
//   - Options.MaxFileBytes, default DefaultMaxFileBytes (32 MiB): one
//     file of a layer, from its tar header, before it is read.
//   - Options.MaxExpandedSize, default DefaultMaxExpandedSize (256 MiB):
//     the files of a layer in all, uncompressed.
//   - Options.MaxFiles, default DefaultMaxFiles (10,000): the entries of
//     a layer.
//
// EXPERIMENTAL: the tag and annotation scheme may still change.
package ocirepo
