package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PackageRevision is one revision of a package in a repository, as a custom
// resource: porch.kpt.dev/v1alpha2 PackageRevision.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rpkg,categories=porch
// +kubebuilder:printcolumn:name="Package",type=string,JSONPath=`.spec.packageName`
// +kubebuilder:printcolumn:name="Workspace",type=string,JSONPath=`.spec.workspaceName`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Lifecycle",type=string,JSONPath=`.spec.lifecycle`
// +kubebuilder:printcolumn:name="Repository",type=string,JSONPath=`.spec.repository`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:selectablefield:JSONPath=`.spec.packageName`
// +kubebuilder:selectablefield:JSONPath=`.spec.repository`
// +kubebuilder:selectablefield:JSONPath=`.spec.workspaceName`
// +kubebuilder:selectablefield:JSONPath=`.spec.lifecycle`
// +kubebuilder:selectablefield:JSONPath=`.status.revision`
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

// Lifecycle is the lifecycle of a PackageRevision.
//
// +kubebuilder:validation:Enum=Draft;Proposed;Published;DeletionProposed
type Lifecycle string

// The lifecycle values.
const (
	LifecycleDraft            Lifecycle = "Draft"
	LifecycleProposed         Lifecycle = "Proposed"
	LifecyclePublished        Lifecycle = "Published"
	LifecycleDeletionProposed Lifecycle = "DeletionProposed"
)

// PackageRevisionSpec is the desired state of a PackageRevision.
type PackageRevisionSpec struct {
	// PackageName is the package path relative to the repository's
	// directory; it may contain slashes.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="packageName is immutable"
	PackageName string `json:"packageName"`
	// RepositoryName is the name of the Repository (in the same namespace)
	// the revision lives in.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="repository is immutable"
	RepositoryName string `json:"repository"`
	// WorkspaceName names the line of work the revision came from; unique
	// per package.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workspaceName is immutable"
	WorkspaceName string `json:"workspaceName"`
	// Lifecycle is the desired lifecycle; changing it proposes, approves,
	// rejects or proposes deletion. Default Draft.
	// +kubebuilder:default=Draft
	// +optional
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`
	// Source says how the revision is created; it is applied once and is
	// immutable. Revisions discovered in a repository have none.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="source is immutable"
	// +optional
	Source *PackageSource `json:"source,omitempty"`
	// ReadinessGates name conditions that must be True in
	// status.packageConditions before the revision is approved; they
	// mirror the Kptfile's info.readinessGates.
	// +optional
	ReadinessGates []ReadinessGate `json:"readinessGates,omitempty"`
	// PackageMetadata is the Kptfile's metadata labels and annotations
	// (distinct from the object's own).
	// +optional
	PackageMetadata *PackageMetadata `json:"packageMetadata,omitempty"`
}

// PackageSource creates a revision: exactly one field is set.
//
// +kubebuilder:validation:XValidation:rule="[has(self.init), has(self.cloneFrom), has(self.copyFrom), has(self.upgrade)].filter(x, x).size() == 1",message="exactly one of init, cloneFrom, copyFrom and upgrade must be set"
type PackageSource struct {
	// Init creates a new package, as kpt pkg init.
	// +optional
	Init *PackageInitSpec `json:"init,omitempty"`
	// CloneFrom creates the package as a clone of an upstream package.
	// +optional
	CloneFrom *UpstreamPackage `json:"cloneFrom,omitempty"`
	// CopyFrom creates a new revision of the same package from one of its
	// published revisions.
	// +optional
	CopyFrom *PackageRevisionRef `json:"copyFrom,omitempty"`
	// Upgrade creates a new revision of CurrentPackage's package that moves
	// it from OldUpstream to NewUpstream with a three-way merge.
	// +optional
	Upgrade *PackageUpgradeSpec `json:"upgrade,omitempty"`
}

// PackageInitSpec is the Kptfile information of a new package.
type PackageInitSpec struct {
	// Subpackage, when set, initialises a subpackage at that path of an
	// existing package (not supported by cad's operator).
	// +optional
	Subpackage string `json:"subpackage,omitempty"`
	// +optional
	Description string `json:"description,omitempty"`
	// +optional
	Keywords []string `json:"keywords,omitempty"`
	// +optional
	Site string `json:"site,omitempty"`
}

// UpstreamPackage is the source of a clone: exactly one of a
// PackageRevision of a registered repository (UpstreamRef) and a package
// in a git repository (Git).
//
// +kubebuilder:validation:XValidation:rule="has(self.upstreamRef) != has(self.git)",message="exactly one of upstreamRef and git must be set"
type UpstreamPackage struct {
	// Type is the kind of the upstream, as in Porch: git for Git, empty
	// for UpstreamRef (where Porch also accepts git). Informative: the
	// field that is set says where the upstream is.
	// +kubebuilder:validation:Enum=git;oci
	// +optional
	Type OriginType `json:"type,omitempty"`
	// +optional
	UpstreamRef *PackageRevisionRef `json:"upstreamRef,omitempty"`
	// +optional
	Git *GitPackage `json:"git,omitempty"`
}

// GitPackage is a package in a git repository.
type GitPackage struct {
	// Repo is the repository URL.
	Repo string `json:"repo"`
	// Ref is a tag, branch or commit.
	Ref string `json:"ref"`
	// Directory is the package's directory in the repository.
	Directory string `json:"directory"`
	// SecretRef names a Secret with the credentials.
	// +optional
	SecretRef *SecretRef `json:"secretRef,omitempty"`
}

// SecretRef names a Secret in the object's namespace.
type SecretRef struct {
	Name string `json:"name"`
}

// PackageRevisionRef names a PackageRevision in the same namespace.
type PackageRevisionRef struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// MergeStrategy is an upgrade strategy.
//
// +kubebuilder:validation:Enum=resource-merge;fast-forward;force-delete-replace;copy-merge
type MergeStrategy string

// Merge strategies.
const (
	ResourceMerge      MergeStrategy = "resource-merge"
	FastForward        MergeStrategy = "fast-forward"
	ForceDeleteReplace MergeStrategy = "force-delete-replace"
	CopyMerge          MergeStrategy = "copy-merge"
)

// PackageUpgradeSpec moves CurrentPackage from OldUpstream to NewUpstream.
type PackageUpgradeSpec struct {
	// OldUpstream is the published revision CurrentPackage was cloned
	// from (or last upgraded to).
	OldUpstream PackageRevisionRef `json:"oldUpstream"`
	// NewUpstream is the published revision to move to.
	NewUpstream PackageRevisionRef `json:"newUpstream"`
	// CurrentPackage is the published downstream revision to upgrade; the
	// new revision is of its package.
	CurrentPackage PackageRevisionRef `json:"currentPackage"`
	// Strategy is the merge strategy; default resource-merge.
	// +optional
	Strategy MergeStrategy `json:"strategy,omitempty"`
}

// ReadinessGate names a condition that must be True before the revision is
// approved.
type ReadinessGate struct {
	ConditionType string `json:"conditionType"`
}

// PackageMetadata is the labels and annotations of a package's Kptfile.
type PackageMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PackageRevisionStatus is what the repository holds for the revision and
// what the controller last did.
type PackageRevisionStatus struct {
	// Revision is 0 for drafts and proposals, 1, 2, ... once published and
	// -1 for the placeholder revision (the package on the branch).
	// +optional
	Revision int `json:"revision"`
	// UpstreamLock is the Kptfile's upstreamLock: where the package was
	// cloned from, resolved to a commit.
	// +optional
	UpstreamLock *Locator `json:"upstreamLock,omitempty"`
	// SelfLock locates the revision itself: repository, directory, ref and
	// commit.
	// +optional
	SelfLock *Locator `json:"selfLock,omitempty"`
	// PublishedBy is who approved the revision.
	// +optional
	PublishedBy string `json:"publishedBy,omitempty"`
	// PublishedAt is when the revision was approved.
	// +optional
	PublishedAt *metav1.Time `json:"publishedAt,omitempty"`
	// Deployment is the repository's spec.deployment.
	// +optional
	Deployment bool `json:"deployment,omitempty"`
	// PackageConditions are the revision's conditions: the Kptfile's
	// status.conditions merged with those kept beside the revision. For a
	// Draft or Proposed revision they are also an input: an entry set here
	// (through the status subresource) that differs is recorded by the
	// controller, provided ObservedVersion is still the revision's
	// version. On a Draft it is written to the Kptfile. A Proposed
	// revision's content is frozen (as in Porch), so there it is kept as
	// revision data beside it: reported here and counted by the readiness
	// gates at approval, and written to the Kptfile if the revision goes
	// back to Draft and is proposed again.
	// +listType=map
	// +listMapKey=type
	// +optional
	PackageConditions []PackageCondition `json:"packageConditions,omitempty"`
	// Conditions are the controller's: Ready and Rendered.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the metadata.generation the status was
	// computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ObservedVersion is the repository's version of the revision (for
	// git, of its commit and refs) that the status was read from; a cad
	// extension. Conditions set in PackageConditions are written to the
	// Kptfile only while it is current, so that a status read before
	// someone else changed the Kptfile never undoes that change.
	// +optional
	ObservedVersion string `json:"observedVersion,omitempty"`
	// CreationSource is how the revision was created, as Porch records
	// it: init, clone, copy or upgrade (the spec.source field that was
	// applied, or the creation the repository records for a discovered
	// revision); empty when unknown.
	// +optional
	CreationSource string `json:"creationSource,omitempty"`
	// ObservedPrrResourceVersion is the resourceVersion of the revision's
	// content (Porch's PackageRevisionResources) that the status and the
	// last render describe; cad sets it to ObservedVersion.
	// +optional
	ObservedPrrResourceVersion string `json:"observedPrrResourceVersion,omitempty"`
	// RenderingPrrResourceVersion is the resourceVersion of the content
	// being rendered, set while a render is in progress. cad renders
	// within the write, so it is empty outside one.
	// +optional
	RenderingPrrResourceVersion string `json:"renderingPrrResourceVersion,omitempty"`
}

// Locator locates a package at a commit.
type Locator struct {
	// Type is the repository type, "git".
	// +optional
	Type OriginType `json:"type,omitempty"`
	// +optional
	Git *GitLock `json:"git,omitempty"`
}

// OriginType is the kind of repository a Locator points into.
type OriginType string

// OriginTypeGit is a git repository.
const OriginTypeGit OriginType = "git"

// GitLock is a package in a git repository, resolved to a commit.
type GitLock struct {
	// +optional
	Repo string `json:"repo,omitempty"`
	// +optional
	Directory string `json:"directory,omitempty"`
	// +optional
	Ref string `json:"ref,omitempty"`
	// +optional
	Commit string `json:"commit,omitempty"`
}

// ConditionStatus is True, False or Unknown.
//
// +kubebuilder:validation:Enum=True;False;Unknown
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// PackageCondition is a condition of the package, in the Kptfile's shape
// (no transition time).
type PackageCondition struct {
	Type   string          `json:"type"`
	Status ConditionStatus `json:"status"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}
