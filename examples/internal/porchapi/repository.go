package porchapi

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
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

// The Repository conditions cad adds to Porch's Ready, set alike by the
// reference server and the operator. Neither makes the Repository not
// Ready: its other revisions are served, only less packed.
const (
	// ConditionDamaged names what the repository holds and cannot be
	// read (damaged refs or tags a list left out, revisions whose
	// Kptfile does not parse): True, with reason ReasonDamagedRevisions,
	// while there are any; absent otherwise.
	ConditionDamaged       = "Damaged"
	ReasonDamagedRevisions = "DamagedRevisions"
	// ConditionMaintenanceFailed says the last scheduled maintenance run
	// of the repository failed: True, with reason ReasonMaintenanceError
	// and the error as its message, until a run succeeds; absent
	// otherwise.
	ConditionMaintenanceFailed = "MaintenanceFailed"
	ReasonMaintenanceError     = "MaintenanceError"
)

// maxDamageShown bounds how many damaged things ConditionDamaged's message
// names; the count is always given.
const maxDamageShown = 20

// SetDamaged sets ConditionDamaged in conds for the damaged things named,
// at generation gen, or removes it when there are none.
func SetDamaged(conds *[]metav1.Condition, gen int64, damaged []string) {
	if len(damaged) == 0 {
		meta.RemoveStatusCondition(conds, ConditionDamaged)
		return
	}
	shown := damaged[:min(len(damaged), maxDamageShown)]
	msg := fmt.Sprintf("%d damaged revisions left out: %s", len(damaged), strings.Join(shown, "; "))
	if len(shown) < len(damaged) {
		msg += fmt.Sprintf("; and %d more", len(damaged)-len(shown))
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: ConditionDamaged, Status: metav1.ConditionTrue,
		Reason: ReasonDamagedRevisions, Message: msg, ObservedGeneration: gen})
}

// SetMaintenanceFailed sets ConditionMaintenanceFailed in conds for msg,
// the error of the last maintenance run, at generation gen, or removes it
// when msg is "".
func SetMaintenanceFailed(conds *[]metav1.Condition, gen int64, msg string) {
	if msg == "" {
		meta.RemoveStatusCondition(conds, ConditionMaintenanceFailed)
		return
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: ConditionMaintenanceFailed, Status: metav1.ConditionTrue,
		Reason: ReasonMaintenanceError, Message: msg, ObservedGeneration: gen})
}

// DamageOf returns the messages of what the *repository.DamageError in err
// names, or nil when err holds none.
func DamageOf(err error) []string {
	d := repository.Damage(err)
	if d == nil {
		return nil
	}
	out := make([]string, 0, len(d.Damaged))
	for _, e := range d.Damaged {
		out = append(out, e.Error())
	}
	return out
}

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
