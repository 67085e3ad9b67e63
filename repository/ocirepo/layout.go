package ocirepo

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/configasdata/cad/revision"
)

// Manifest annotations, in the kpt.dev/ namespace that Porch's
// experimental OCI support used.
const (
	AnnotationPackage      = "kpt.dev/package"
	AnnotationWorkspace    = "kpt.dev/workspace"
	AnnotationRevision     = "kpt.dev/revision"
	AnnotationLifecycle    = "kpt.dev/lifecycle"
	AnnotationUpstreamLock = "kpt.dev/upstream-lock"
	AnnotationPublishedBy  = "kpt.dev/published-by"
	AnnotationPublishedAt  = "kpt.dev/published-at"
	AnnotationMessage      = "kpt.dev/message"
	// AnnotationTag is the tag the manifest was written for, so that no
	// two tags share a manifest digest and a manifest copied under another
	// tag is ignored.
	AnnotationTag = "kpt.dev/tag"
	// AnnotationWriteID is a random id of the write that made the
	// manifest: every write has a digest of its own.
	AnnotationWriteID = "kpt.dev/write-id"
	// AnnotationMarks is, on a deletion-proposal marker, the digest of the
	// published manifest it marks.
	AnnotationMarks = "kpt.dev/marks"
	// AnnotationLockExpires is, on a lock manifest, when its lease ends.
	AnnotationLockExpires = "kpt.dev/lock-expires"
	// AnnotationMetadata is, on a metadata manifest, the labels and
	// annotations of the revision of its workspace, as JSON.
	AnnotationMetadata = "kpt.dev/metadata"
	// AnnotationTask is, on a revision's manifest, how the revision was
	// created (revision.Creation): Porch's creation task JSON, which
	// Porch's OCI support wrote into the layer history.
	AnnotationTask    = "kpt.dev/task"
	annotationCreated = "org.opencontainers.image.created"
)

// Tag prefixes and suffixes of the layout.
const (
	workspaceTagPrefix = "ws."
	lockTagPrefix      = "lock."
	metadataTagPrefix  = "meta."
	deletionSuffix     = ".deletion-proposed"
)

// tagKind classifies a tag of a package's image repository.
type tagKind int

const (
	tagForeign   tagKind = iota // not ours: ignored
	tagPublished                // v<N>
	tagDeletion                 // v<N>.deletion-proposed
	tagWorkspace                // ws.<workspace>
	tagLock                     // lock.<id>
	tagMetadata                 // meta.<workspace>
)

func publishedTag(n int) string     { return "v" + strconv.Itoa(n) }
func deletionTag(n int) string      { return publishedTag(n) + deletionSuffix }
func workspaceTag(ws string) string { return workspaceTagPrefix + ws }

// parseTag returns the kind of tag, its revision number (published and
// deletion tags) and workspace (workspace tags).
func parseTag(tag string) (tagKind, int, string) {
	switch {
	case strings.HasPrefix(tag, workspaceTagPrefix):
		ws := tag[len(workspaceTagPrefix):]
		if revision.ValidateWorkspace(ws) != nil {
			return tagForeign, 0, ""
		}
		return tagWorkspace, 0, ws
	case strings.HasPrefix(tag, lockTagPrefix):
		return tagLock, 0, ""
	case strings.HasPrefix(tag, metadataTagPrefix):
		ws := tag[len(metadataTagPrefix):]
		if revision.ValidateWorkspace(ws) != nil {
			return tagForeign, 0, ""
		}
		return tagMetadata, 0, ws
	case strings.HasPrefix(tag, "v"):
		kind := tagPublished
		num := tag[1:]
		if s, ok := strings.CutSuffix(num, deletionSuffix); ok {
			kind, num = tagDeletion, s
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 || strconv.Itoa(n) != num {
			return tagForeign, 0, ""
		}
		return kind, n, ""
	}
	return tagForeign, 0, ""
}

// record is a parsed manifest: immutable, cached by digest.
type record struct {
	digest      v1.Hash
	raw         []byte
	manifest    *v1.Manifest
	annotations map[string]string
	lifecycle   revision.Lifecycle
	workspace   string
	revision    int
	pkg         string
	tag         string
	publishedBy string
	publishedAt time.Time
	layer       *v1.Descriptor     // nil for lock and metadata manifests
	md          *revision.Metadata // of a metadata manifest
}

// parseRecord parses a manifest read from the registry. Problems make it
// a foreign record that the reader ignores, never an error: the registry
// may hold images that are not ours.
func parseRecord(d v1.Hash, raw []byte) (*record, bool) {
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, false
	}
	a := m.Annotations
	rec := &record{digest: d, raw: raw, manifest: m, annotations: a}
	if a == nil {
		return rec, false
	}
	rec.tag = a[AnnotationTag]
	rec.pkg = a[AnnotationPackage]
	rec.workspace = a[AnnotationWorkspace]
	rec.lifecycle = revision.Lifecycle(a[AnnotationLifecycle])
	if s := a[AnnotationRevision]; s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return rec, false
		}
		rec.revision = n
	}
	rec.publishedBy = a[AnnotationPublishedBy]
	if s := a[AnnotationPublishedAt]; s != "" {
		rec.publishedAt, _ = time.Parse(time.RFC3339Nano, s)
	}
	if len(m.Layers) == 1 {
		rec.layer = &m.Layers[0]
	}
	if s, ok := a[AnnotationMetadata]; ok {
		md, err := revision.ParseMetadata([]byte(s))
		if err != nil {
			return rec, false
		}
		rec.md = &md
	}
	return rec, true
}

// valid reports whether rec is a sound revision record for tag in package
// pkg: it names them, and its lifecycle and number fit the tag.
func (rec *record) valid(pkg, tag string) bool {
	if rec == nil || rec.tag != tag || rec.pkg != pkg || rec.layer == nil || !rec.lifecycle.Valid() {
		return false
	}
	if revision.ValidateWorkspace(rec.workspace) != nil {
		return false
	}
	kind, n, ws := parseTag(tag)
	switch kind {
	case tagPublished:
		return rec.lifecycle == revision.LifecyclePublished && rec.revision == n
	case tagDeletion:
		return rec.lifecycle == revision.LifecycleDeletionProposed && rec.revision == n && rec.annotations[AnnotationMarks] != ""
	case tagWorkspace:
		if rec.workspace != ws {
			return false
		}
		switch rec.lifecycle {
		case revision.LifecycleDraft, revision.LifecycleProposed:
			return rec.revision == 0
		case revision.LifecyclePublished:
			return rec.revision > 0 // an alias of v<N>
		}
	}
	return false
}

// manifestSpec is what a new manifest records.
type manifestSpec struct {
	tag          string
	pkg          string
	workspace    string
	revision     int
	lifecycle    revision.Lifecycle
	config       v1.Descriptor
	layer        v1.Descriptor
	upstreamLock string
	publishedBy  string
	publishedAt  time.Time
	message      string
	marks        string
	task         string
	created      time.Time
}

// build returns the raw OCI image manifest for s.
func (s manifestSpec) build() ([]byte, error) {
	a := map[string]string{
		AnnotationTag:       s.tag,
		AnnotationPackage:   s.pkg,
		AnnotationWorkspace: s.workspace,
		AnnotationRevision:  strconv.Itoa(s.revision),
		AnnotationLifecycle: string(s.lifecycle),
		AnnotationWriteID:   nonce(),
		annotationCreated:   s.created.UTC().Format(time.RFC3339Nano),
	}
	if s.upstreamLock != "" {
		a[AnnotationUpstreamLock] = s.upstreamLock
	}
	if s.publishedBy != "" {
		a[AnnotationPublishedBy] = s.publishedBy
	}
	if !s.publishedAt.IsZero() {
		a[AnnotationPublishedAt] = s.publishedAt.UTC().Format(time.RFC3339Nano)
	}
	if s.message != "" {
		a[AnnotationMessage] = s.message
	}
	if s.marks != "" {
		a[AnnotationMarks] = s.marks
	}
	if s.task != "" {
		a[AnnotationTask] = s.task
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        s.config,
		Layers:        []v1.Descriptor{s.layer},
		Annotations:   a,
	}
	return json.Marshal(m)
}

// specOf returns the manifestSpec that rewrites rec under a new state.
func specOf(rec *record) manifestSpec {
	return manifestSpec{
		pkg:          rec.pkg,
		workspace:    rec.workspace,
		revision:     rec.revision,
		lifecycle:    rec.lifecycle,
		config:       rec.manifest.Config,
		layer:        *rec.layer,
		upstreamLock: rec.annotations[AnnotationUpstreamLock],
		publishedBy:  rec.publishedBy,
		publishedAt:  rec.publishedAt,
		message:      rec.annotations[AnnotationMessage],
		task:         rec.annotations[AnnotationTask],
	}
}

// rawManifest is a ggcr Taggable for manifest bytes built here.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error)        { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
