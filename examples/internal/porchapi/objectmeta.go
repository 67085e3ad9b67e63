package porchapi

import (
	"encoding/json"
	"path"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// Annotations of a revision's metadata (revision.Metadata, which keeps
// labels and annotations) under which the object metadata that has no
// place of its own there is kept, so that it lives where labels and
// annotations do (in git, the metadata ref) and survives restarts and
// other servers. They never appear on a served object: FromRevision moves
// them into the object's fields, and MetadataOf takes them from there,
// ignoring any such annotation a client sends.
const (
	// OwnerReferencesAnnotation holds metadata.ownerReferences as JSON.
	OwnerReferencesAnnotation = "cad.configasdata.dev/owner-references"
	// FinalizersAnnotation holds metadata.finalizers as JSON.
	FinalizersAnnotation = "cad.configasdata.dev/finalizers"
	// DeletionTimestampAnnotation holds metadata.deletionTimestamp
	// (RFC 3339): the server sets it when a revision with finalizers is
	// deleted, and deletes the revision when the last finalizer goes.
	DeletionTimestampAnnotation = "cad.configasdata.dev/deletion-timestamp"
)

// objectMetaAnnotations are the annotations FromRevision turns into fields.
var objectMetaAnnotations = []string{OwnerReferencesAnnotation, FinalizersAnnotation, DeletionTimestampAnnotation}

// withObjectMeta returns md with pr's ownerReferences and finalizers in
// their annotations, and without a deletion timestamp (which only the
// server sets, see WithDeletionTimestamp).
func withObjectMeta(md revision.Metadata, pr *PackageRevision) revision.Metadata {
	for _, k := range objectMetaAnnotations {
		delete(md.Annotations, k)
	}
	set := func(k string, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			return // plain data
		}
		if md.Annotations == nil {
			md.Annotations = map[string]string{}
		}
		md.Annotations[k] = string(data)
	}
	if len(pr.OwnerReferences) > 0 {
		set(OwnerReferencesAnnotation, pr.OwnerReferences)
	}
	if len(pr.Finalizers) > 0 {
		set(FinalizersAnnotation, pr.Finalizers)
	}
	if len(md.Annotations) == 0 {
		md.Annotations = nil
	}
	return md
}

// setObjectMeta moves the object-metadata annotations of pr into its
// fields. An annotation that does not decode is dropped.
func setObjectMeta(pr *PackageRevision) {
	if len(pr.Annotations) == 0 {
		return
	}
	if v, ok := pr.Annotations[OwnerReferencesAnnotation]; ok {
		var refs []metav1.OwnerReference
		if json.Unmarshal([]byte(v), &refs) == nil {
			pr.OwnerReferences = refs
		}
	}
	if v, ok := pr.Annotations[FinalizersAnnotation]; ok {
		var fs []string
		if json.Unmarshal([]byte(v), &fs) == nil {
			pr.Finalizers = fs
		}
	}
	if v, ok := pr.Annotations[DeletionTimestampAnnotation]; ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			mt := metav1.NewTime(t)
			pr.DeletionTimestamp = &mt
		}
	}
	for _, k := range objectMetaAnnotations {
		delete(pr.Annotations, k)
	}
	if len(pr.Annotations) == 0 {
		pr.Annotations = nil
	}
}

// Finalizers returns the finalizers md records (see FinalizersAnnotation).
func Finalizers(md revision.Metadata) []string {
	var fs []string
	if v, ok := md.Annotations[FinalizersAnnotation]; ok {
		_ = json.Unmarshal([]byte(v), &fs)
	}
	return fs
}

// OwnerReferences returns the owner references md records (see
// OwnerReferencesAnnotation).
func OwnerReferences(md revision.Metadata) []metav1.OwnerReference {
	var refs []metav1.OwnerReference
	if v, ok := md.Annotations[OwnerReferencesAnnotation]; ok {
		_ = json.Unmarshal([]byte(v), &refs)
	}
	return refs
}

// DeletionRequested reports whether md records a deletion waiting for
// finalizers (see DeletionTimestampAnnotation).
func DeletionRequested(md revision.Metadata) bool {
	_, ok := md.Annotations[DeletionTimestampAnnotation]
	return ok
}

// WithDeletionTimestamp returns a copy of md that records a deletion
// requested at t, or, for a zero t, none.
func WithDeletionTimestamp(md revision.Metadata, t time.Time) revision.Metadata {
	out := md.Clone()
	if t.IsZero() {
		delete(out.Annotations, DeletionTimestampAnnotation)
		if len(out.Annotations) == 0 {
			out.Annotations = nil
		}
		return out
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[DeletionTimestampAnnotation] = t.UTC().Format(time.RFC3339)
	return out
}

// WithOwnerReferences returns a copy of md that records refs as its owner
// references.
func WithOwnerReferences(md revision.Metadata, refs []metav1.OwnerReference) revision.Metadata {
	pr := &PackageRevision{}
	pr.OwnerReferences = slices.Clone(refs)
	pr.Finalizers = Finalizers(md)
	out := withObjectMeta(md.Clone(), pr)
	if v, ok := md.Annotations[DeletionTimestampAnnotation]; ok {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[DeletionTimestampAnnotation] = v
	}
	return out
}

// SelfRef returns the git ref Porch names in a revision's status.selfLock:
// the registered branch for the placeholder, drafts/<dir>/<workspace> and
// proposed/<dir>/<workspace> for drafts and proposals, and the tag
// <dir>/v<N> (<dir>/<workspace> for a tag not of the form v<N>) for
// published revisions; dir is the package's path in the repository (the
// repository's directory joined with the package).
func SelfRef(m revision.Meta, dir, branch string) string {
	if branch == "" {
		branch = repository.DefaultBranch
	}
	switch {
	case m.Key.IsPlaceholder() && m.Key.Workspace == branch:
		return branch
	case m.Lifecycle == revision.LifecycleDraft:
		return "drafts/" + dir + "/" + m.Key.Workspace
	case m.Lifecycle == revision.LifecycleProposed:
		return "proposed/" + dir + "/" + m.Key.Workspace
	case m.Key.Revision > 0:
		return dir + "/v" + strconv.Itoa(m.Key.Revision)
	default:
		return dir + "/" + m.Key.Workspace
	}
}

// SelfLock returns the status.selfLock of a revision with meta m in the
// git repository at url (without credentials) registered with spec g: the
// repository, the package's directory, its ref (see SelfRef) and commit.
// It returns nil when g is nil (a repository that is not git).
func SelfLock(m revision.Meta, url string, g *repository.GitSpec) *UpstreamLock {
	if g == nil || url == "" {
		return nil
	}
	dir := path.Join(g.Directory, m.Key.Package)
	return &UpstreamLock{Type: OriginType(revision.GitOrigin),
		Git: &GitLock{Repo: url, Directory: dir, Ref: SelfRef(m, dir, g.Branch), Commit: m.Commit}}
}
