package porchapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	"github.com/configasdata/cad/repository"
)

// Repository condition type and reasons.
const (
	RepositoryReady       = configv1alpha1.RepositoryReady
	ReasonReady           = configv1alpha1.ReasonReady
	ReasonError           = configv1alpha1.ReasonError
	ReasonReconciling     = configv1alpha1.ReasonReconciling
	ContentPackage        = configv1alpha1.ContentPackage
	repositoryDefaultType = RepositoryTypeGit
)

// DefaultRepository sets the defaults Porch's Repository CRD gives a
// Repository on create and update: spec.content "Package" when empty, and
// spec.git.branch "main" when a git section has none. It changes nothing
// else, so that what is stored and what is read back agree with Porch.
func DefaultRepository(r *Repository) {
	if r.Spec.Content == "" {
		r.Spec.Content = ContentPackage
	}
	if r.Spec.Git != nil && r.Spec.Git.Branch == "" {
		r.Spec.Git.Branch = repository.DefaultBranch
	}
}

// RepositoryToSpec returns the repository.Spec of r: its name, labels and
// spec, defaulted (see repository.Spec.Defaulted) but not validated.
func RepositoryToSpec(r *Repository) repository.Spec {
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
	if g := r.Spec.Git; g != nil {
		s.Git = &repository.GitSpec{Repo: g.Repo, Branch: g.Branch, CreateBranch: g.CreateBranch, Directory: g.Directory,
			SecretRef: repository.SecretRef{Name: g.SecretRef.Name}, Author: g.Author, Email: g.Email}
	}
	if o := r.Spec.Oci; o != nil {
		s.OCI = &repository.OCISpec{Registry: o.Registry, SecretRef: repository.SecretRef{Name: o.SecretRef.Name}}
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
			Type:        configv1alpha1.RepositoryType(s.Type),
			Content:     ContentPackage,
		},
	}
	if g := s.Git; g != nil {
		r.Spec.Git = &configv1alpha1.GitRepository{Repo: g.Repo, Branch: g.Branch, CreateBranch: g.CreateBranch, Directory: g.Directory,
			SecretRef: configv1alpha1.SecretRef{Name: g.SecretRef.Name}, Author: g.Author, Email: g.Email}
	}
	if o := s.OCI; o != nil {
		r.Spec.Oci = &configv1alpha1.OciRepository{Registry: o.Registry, SecretRef: configv1alpha1.SecretRef{Name: o.SecretRef.Name}}
	}
	return r
}
