package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PackageRevision is one revision of a package in a registered repository:
// porch.kpt.dev/v1alpha1 PackageRevision. It is served by an aggregated API
// server (Porch's, or cad's reference server), not stored as a custom
// resource; see porch/v1alpha2 for the custom resource.
//
// +kubebuilder:object:root=true
type PackageRevision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageRevisionSpec   `json:"spec,omitempty"`
	Status PackageRevisionStatus `json:"status,omitempty"`
}

// PackageRevisionList is a list of PackageRevisions.
//
// +kubebuilder:object:root=true
type PackageRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PackageRevision `json:"items"`
}

// Lifecycle is the lifecycle of a PackageRevision: Draft, Proposed,
// Published or DeletionProposed (the values of cad's revision.Lifecycle).
type Lifecycle string

// The lifecycle values.
const (
	LifecycleDraft            Lifecycle = "Draft"
	LifecycleProposed         Lifecycle = "Proposed"
	LifecyclePublished        Lifecycle = "Published"
	LifecycleDeletionProposed Lifecycle = "DeletionProposed"
)

// PackageRevisionSpec is the spec of a PackageRevision.
type PackageRevisionSpec struct {
	// PackageName is the package path relative to the repository's
	// directory; it may contain slashes.
	PackageName string `json:"packageName,omitempty"`
	// RepositoryName is the name of the Repository object (in the same
	// namespace) the revision lives in.
	RepositoryName string `json:"repository,omitempty"`
	// WorkspaceName names the line of work the revision came from; unique
	// per package.
	WorkspaceName string `json:"workspaceName,omitempty"`
	// Revision is 0 for drafts and proposals, 1, 2, ... once published and
	// -1 for the placeholder revision.
	Revision int `json:"revision,omitempty"`
	// Parent is deprecated in Porch and ignored.
	Parent *ParentReference `json:"parent,omitempty"`
	// Lifecycle is the revision's state; updating it proposes, rejects or
	// proposes deletion.
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`
	// Tasks is, on create, the one creation task; on read, the creation
	// task the revision records (revision.Meta.Creation), if any.
	Tasks []Task `json:"tasks,omitempty"`
	// ReadinessGates mirror the Kptfile's info.readinessGates.
	ReadinessGates []ReadinessGate `json:"readinessGates,omitempty"`
	// PackageMetadata mirrors the Kptfile's metadata labels and
	// annotations (distinct from the object's own).
	PackageMetadata *PackageMetadata `json:"packageMetadata,omitempty"`
}

// ParentReference names a parent package revision (deprecated in Porch).
type ParentReference struct {
	Name string `json:"name"`
}

// PackageMetadata is the labels and annotations of a package's Kptfile.
type PackageMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ReadinessGate names a condition that must be True before the revision is
// approved.
type ReadinessGate struct {
	ConditionType string `json:"conditionType,omitempty"`
}

// TaskType is the type of a creation task.
type TaskType string

// Creation task types. Porch also knows render and push, which are internal
// and refused on create.
const (
	TaskTypeInit    TaskType = "init"
	TaskTypeClone   TaskType = "clone"
	TaskTypeEdit    TaskType = "edit"
	TaskTypeUpgrade TaskType = "upgrade"
	TaskTypeRender  TaskType = "render"
	TaskTypePush    TaskType = "push"
)

// Task is the instruction that creates a PackageRevision: exactly the field
// its Type names is set.
type Task struct {
	Type    TaskType                `json:"type"`
	Init    *PackageInitTaskSpec    `json:"init,omitempty"`
	Clone   *PackageCloneTaskSpec   `json:"clone,omitempty"`
	Edit    *PackageEditTaskSpec    `json:"edit,omitempty"`
	Upgrade *PackageUpgradeTaskSpec `json:"upgrade,omitempty"`
}

// PackageInitTaskSpec creates a new package, as kpt pkg init.
type PackageInitTaskSpec struct {
	// Subpackage, when set, initialises a subpackage at that path of an
	// existing package (not supported by cad's server).
	Subpackage  string   `json:"subpackage,omitempty"`
	Description string   `json:"description,omitempty"`
	Keywords    []string `json:"keywords,omitempty"`
	Site        string   `json:"site,omitempty"`
}

// PackageCloneTaskSpec creates a new package from an upstream.
type PackageCloneTaskSpec struct {
	// Upstream is the package to clone.
	Upstream UpstreamPackage `json:"upstreamRef,omitempty"`
	// Strategy is the Kptfile's upstream.updateStrategy; default
	// resource-merge.
	Strategy MergeStrategy `json:"strategy,omitempty"`
}

// PackageEditTaskSpec creates a new revision of a package from one of its
// published revisions (porchctl's copy).
type PackageEditTaskSpec struct {
	Source *PackageRevisionRef `json:"sourceRef,omitempty"`
}

// PackageUpgradeTaskSpec creates a new revision of LocalPackageRevisionRef's
// package that moves it from OldUpstream to NewUpstream.
type PackageUpgradeTaskSpec struct {
	OldUpstream             PackageRevisionRef `json:"oldUpstreamRef,omitempty"`
	NewUpstream             PackageRevisionRef `json:"newUpstreamRef,omitempty"`
	LocalPackageRevisionRef PackageRevisionRef `json:"localPackageRevisionRef,omitempty"`
	Strategy                MergeStrategy      `json:"strategy,omitempty"`
}

// MergeStrategy is an upgrade strategy (the values of cad's
// revision.UpdateStrategy).
type MergeStrategy string

// Merge strategies.
const (
	ResourceMerge      MergeStrategy = "resource-merge"
	FastForward        MergeStrategy = "fast-forward"
	ForceDeleteReplace MergeStrategy = "force-delete-replace"
	CopyMerge          MergeStrategy = "copy-merge"
)

// RepositoryType is git or oci.
type RepositoryType string

// Repository types.
const (
	RepositoryTypeGit RepositoryType = "git"
	RepositoryTypeOCI RepositoryType = "oci"
)

// UpstreamPackage is the source of a clone: a PackageRevision of a
// registered repository (UpstreamRef), or a package in a git repository
// (Git). OCI upstreams are not supported by cad's server.
type UpstreamPackage struct {
	Type        RepositoryType      `json:"type,omitempty"`
	Git         *GitPackage         `json:"git,omitempty"`
	Oci         *OciPackage         `json:"oci,omitempty"`
	UpstreamRef *PackageRevisionRef `json:"upstreamRef,omitempty"`
}

// GitPackage is a package in a git repository.
type GitPackage struct {
	// Repo is the repository URL.
	Repo string `json:"repo"`
	// Ref is a tag or branch; "<directory>/<ref>" is tried first.
	Ref string `json:"ref"`
	// Directory is the package's directory in the repository.
	Directory string `json:"directory"`
	// SecretRef names credentials (not resolved by cad's server).
	SecretRef SecretRef `json:"secretRef,omitempty"`
}

// OciPackage is a package in an OCI registry.
type OciPackage struct {
	Image string `json:"image"`
}

// SecretRef names a Secret.
type SecretRef struct {
	Name string `json:"name"`
}

// PackageRevisionRef names a PackageRevision in the same namespace.
type PackageRevisionRef struct {
	Name string `json:"name"`
}

// PackageRevisionStatus is the status of a PackageRevision.
type PackageRevisionStatus struct {
	// UpstreamLock is the Kptfile's upstreamLock.
	UpstreamLock *UpstreamLock `json:"upstreamLock,omitempty"`
	// SelfLock locates the revision itself (cad sets it for git
	// repositories whose URL it knows).
	SelfLock *UpstreamLock `json:"selfLock,omitempty"`
	// PublishedBy is who approved the revision.
	PublishedBy string `json:"publishedBy,omitempty"`
	// PublishedAt is when it was approved; its JSON name is Porch's
	// publishTimestamp.
	PublishedAt metav1.Time `json:"publishTimestamp,omitzero"`
	// Deployment is the repository's spec.deployment.
	Deployment bool `json:"deployment,omitempty"`
	// Conditions mirror the Kptfile's status.conditions.
	Conditions []Condition `json:"conditions,omitempty"`
}

// UpstreamLock is a resolved upstream: the Kptfile's upstreamLock.
type UpstreamLock struct {
	Type OriginType `json:"type,omitempty"`
	Git  *GitLock   `json:"git,omitempty"`
}

// OriginType is the kind of an upstream ("git").
type OriginType string

// GitLock is a resolved git upstream.
type GitLock struct {
	Repo      string `json:"repo,omitempty"`
	Directory string `json:"directory,omitempty"`
	Ref       string `json:"ref,omitempty"`
	Commit    string `json:"commit,omitempty"`
}

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Condition is a condition of a package revision, in the shape Porch and the
// Kptfile use (not metav1.Condition: no transition time is kept).
type Condition struct {
	Type    string          `json:"type"`
	Status  ConditionStatus `json:"status"`
	Reason  string          `json:"reason,omitempty"`
	Message string          `json:"message,omitempty"`
}

// PackageRevisionResources is the content of a PackageRevision, with the
// same name: porch.kpt.dev/v1alpha1 PackageRevisionResources.
//
// +kubebuilder:object:root=true
type PackageRevisionResources struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageRevisionResourcesSpec   `json:"spec,omitempty"`
	Status PackageRevisionResourcesStatus `json:"status,omitempty"`
}

// PackageRevisionResourcesList is a list of PackageRevisionResources.
//
// +kubebuilder:object:root=true
type PackageRevisionResourcesList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PackageRevisionResources `json:"items"`
}

// PackageRevisionResourcesSpec is the key of the revision and its files.
type PackageRevisionResourcesSpec struct {
	PackageName    string `json:"packageName,omitempty"`
	WorkspaceName  string `json:"workspaceName,omitempty"`
	Revision       int    `json:"revision,omitempty"`
	RepositoryName string `json:"repository,omitempty"`
	// Resources maps each file's package-relative path to its full
	// content. An update replaces the whole map: files left out are
	// deleted.
	Resources map[string]string `json:"resources,omitempty"`
}

// PackageRevisionResourcesStatus is the outcome of the last render done by
// the request that returned the object.
type PackageRevisionResourcesStatus struct {
	RenderStatus RenderStatus `json:"renderStatus,omitempty"`
}

// RenderStatus is the result of a render: the function results and the
// error, if it failed.
type RenderStatus struct {
	Result ResultList `json:"result,omitempty"`
	Err    string     `json:"error"`
}

// ResultList is kpt's kpt.dev/v1 FunctionResultList.
type ResultList struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// ExitCode is 1 when a function failed, else 0.
	ExitCode int       `json:"exitCode"`
	Items    []*Result `json:"items,omitempty"`
}

// Result is the outcome of one function.
type Result struct {
	Image    string       `json:"image,omitempty"`
	ExecPath string       `json:"exec,omitempty"`
	Stderr   string       `json:"stderr,omitempty"`
	ExitCode int          `json:"exitCode"`
	Results  []ResultItem `json:"results,omitempty"`
}

// ResultItem is one diagnostic of a function: the config.kubernetes.io/v1
// result schema (cad's revision.ResultItem).
type ResultItem struct {
	Message     string            `json:"message,omitempty"`
	Severity    string            `json:"severity,omitempty"`
	ResourceRef *ResourceRef      `json:"resourceRef,omitempty"`
	Field       *Field            `json:"field,omitempty"`
	File        *File             `json:"file,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
}

// ResourceRef identifies the resource a result is about.
type ResourceRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
}

// Field identifies the field a result is about. Its values are any JSON
// value, kept as the JSON they were given.
type Field struct {
	Path          string                `json:"path,omitempty"`
	CurrentValue  *runtime.RawExtension `json:"currentValue,omitempty"`
	ProposedValue *runtime.RawExtension `json:"proposedValue,omitempty"`
}

// File identifies the file a result is about.
type File struct {
	Path  string `json:"path,omitempty"`
	Index int    `json:"index,omitempty"`
}
