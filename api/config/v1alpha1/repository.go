package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Repository registers a package repository: config.porch.kpt.dev/v1alpha1
// Repository. Its name is unique in its namespace and is the
// spec.repository of its PackageRevisions.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=repo,categories=porch
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Deployment",type=boolean,JSONPath=`.spec.deployment`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.git.repo`
type Repository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RepositorySpec   `json:"spec,omitempty"`
	Status RepositoryStatus `json:"status,omitempty"`
}

// RepositoryList is a list of Repositories.
//
// +kubebuilder:object:root=true
type RepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Repository `json:"items"`
}

// RepositoryType is git or oci.
//
// +kubebuilder:validation:Enum=git;oci
type RepositoryType string

// Repository types.
const (
	RepositoryTypeGit RepositoryType = "git"
	RepositoryTypeOCI RepositoryType = "oci"
)

// ContentPackage is the only value of RepositorySpec.Content.
const ContentPackage = "Package"

// RepositorySpec is Porch's Repository spec.
type RepositorySpec struct {
	// +optional
	Description string `json:"description,omitempty"`
	// Deployment marks a repository of deployment-ready packages.
	// +optional
	Deployment bool `json:"deployment,omitempty"`
	// Type is git or oci; default git, or oci when only Oci is set.
	// +optional
	Type RepositoryType `json:"type,omitempty"`
	// Content is deprecated; its only value is Package, the default.
	// +optional
	// +kubebuilder:default=Package
	Content string `json:"content,omitempty"`
	// Sync is Porch's sync schedule; cad reads repositories directly and
	// keeps it without acting on it.
	// +optional
	Sync *RepositorySync `json:"sync,omitempty"`
	// +optional
	Git *GitRepository `json:"git,omitempty"`
	// +optional
	Oci *OciRepository `json:"oci,omitempty"`
}

// GitRepository locates a package repository in git.
type GitRepository struct {
	// Repo is the repository URL: https://, http://, ssh://,
	// user@host:path, file:// or a local path.
	Repo string `json:"repo"`
	// Branch is the registered branch; default "main".
	// +optional
	// +kubebuilder:default=main
	Branch string `json:"branch,omitempty"`
	// CreateBranch creates Branch when it does not exist.
	// +optional
	CreateBranch bool `json:"createBranch,omitempty"`
	// Directory is the directory under which packages live; package paths
	// are relative to it. Default: the root.
	// +optional
	Directory string `json:"directory,omitempty"`
	// SecretRef names a Secret with the credentials: basic auth (username
	// and password) or a bearer token (bearerToken).
	// +optional
	SecretRef SecretRef `json:"secretRef,omitempty"`
	// Author and Email are the commit author identity.
	// +optional
	Author string `json:"author,omitempty"`
	// +optional
	Email string `json:"email,omitempty"`
}

// OciRepository locates a package repository in an OCI registry.
type OciRepository struct {
	// Registry is the image prefix, such as "registry.example/packages".
	Registry string `json:"registry"`
	// +optional
	SecretRef SecretRef `json:"secretRef,omitempty"`
}

// SecretRef names a Secret in the object's namespace.
type SecretRef struct {
	// +optional
	Name string `json:"name,omitempty"`
}

// RepositorySync is Porch's sync schedule of a repository.
type RepositorySync struct {
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// +optional
	RunOnceAt *metav1.Time `json:"runOnceAt,omitempty"`
}

// RepositoryStatus is the observed state of a repository.
type RepositoryStatus struct {
	// Conditions has one condition of type Ready: True with reason Ready
	// once the repository is open, False with reason Error and the error
	// otherwise.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// PackageCount is the number of package revisions found.
	// +optional
	PackageCount int `json:"packageCount,omitempty"`
	// GitCommitHash is the commit of the registered branch last read.
	// +optional
	GitCommitHash string `json:"gitCommitHash,omitempty"`
}

// Repository condition type and reasons.
const (
	RepositoryReady   = "Ready"
	ReasonReady       = "Ready"
	ReasonError       = "Error"
	ReasonReconciling = "Reconciling"
)
