package porchapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/repository"
)

// Repository registers a package repository: config.porch.kpt.dev/v1alpha1
// Repository. Its name is unique in its namespace and is the
// spec.repository of its PackageRevisions.
type Repository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RepositorySpec   `json:"spec,omitempty"`
	Status RepositoryStatus `json:"status,omitempty"`
}

// RepositoryList is a list of Repositories.
type RepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Repository `json:"items"`
}

// RepositorySpec is Porch's Repository spec. Its git and oci sections are
// cad's repository.GitSpec and OCISpec, which have Porch's JSON.
type RepositorySpec struct {
	Description string `json:"description,omitempty"`
	// Deployment marks a repository of deployment-ready packages.
	Deployment bool `json:"deployment,omitempty"`
	// Type is git or oci.
	Type RepositoryType `json:"type,omitempty"`
	// Content is deprecated; its only value is Package.
	Content string `json:"content,omitempty"`
	// Sync is kept but not acted on: cad reads repositories directly.
	Sync *RepositorySync     `json:"sync,omitempty"`
	Git  *repository.GitSpec `json:"git,omitempty"`
	Oci  *repository.OCISpec `json:"oci,omitempty"`
}

// RepositorySync is Porch's sync schedule of a repository.
type RepositorySync struct {
	Schedule  string       `json:"schedule,omitempty"`
	RunOnceAt *metav1.Time `json:"runOnceAt,omitempty"`
}

// RepositoryStatus is the observed state of a repository.
type RepositoryStatus struct {
	// Conditions has one condition of type Ready: True with reason Ready
	// once the repository is open, False with reason Error and the error
	// otherwise.
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	PackageCount       int                `json:"packageCount,omitempty"`
	GitCommitHash      string             `json:"gitCommitHash,omitempty"`
}

// Repository condition type and reasons.
const (
	RepositoryReady       = "Ready"
	ReasonReady           = "Ready"
	ReasonError           = "Error"
	ReasonReconciling     = "Reconciling"
	ContentPackage        = "Package"
	repositoryDefaultType = RepositoryTypeGit
)

// ToSpec returns the repository.Spec of r: its name, labels and spec,
// defaulted (see repository.Spec.Defaulted) but not validated.
func (r *Repository) ToSpec() repository.Spec {
	s := repository.Spec{
		Name:        r.Name,
		Description: r.Spec.Description,
		Type:        repository.Type(r.Spec.Type),
		Deployment:  r.Spec.Deployment,
		Labels:      r.Labels,
	}
	if s.Type == "" {
		switch {
		case r.Spec.Oci != nil && r.Spec.Git == nil:
			s.Type = repository.TypeOCI
		default:
			s.Type = repository.Type(repositoryDefaultType)
		}
	}
	if r.Spec.Git != nil {
		g := *r.Spec.Git
		s.Git = &g
	}
	if r.Spec.Oci != nil {
		o := *r.Spec.Oci
		s.OCI = &o
	}
	return s.Defaulted()
}

// RepositoryFromSpec returns a Repository object for s in namespace ns,
// with TypeMeta set.
func RepositoryFromSpec(ns string, s repository.Spec) Repository {
	r := Repository{
		TypeMeta:   metav1.TypeMeta{APIVersion: ConfigGroupVersion.String(), Kind: KindRepository},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: ns, Labels: s.Labels},
		Spec: RepositorySpec{
			Description: s.Description,
			Deployment:  s.Deployment,
			Type:        RepositoryType(s.Type),
			Content:     ContentPackage,
		},
	}
	if s.Git != nil {
		g := *s.Git
		r.Spec.Git = &g
	}
	if s.OCI != nil {
		o := *s.OCI
		r.Spec.Oci = &o
	}
	return r
}
