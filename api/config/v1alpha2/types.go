package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/api/config/v1alpha1"
)

// PackageVariantSet is config.porch.kpt.dev/v1alpha2 PackageVariantSet:
// one upstream and a set of targets, each unrolled into a PackageVariant
// by its template (CEL expressions over the target). cad's variant
// package unrolls and syncs it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pvs,categories=porch
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Upstream",type=string,JSONPath=`.spec.upstream.package`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
type PackageVariantSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageVariantSetSpec   `json:"spec,omitempty"`
	Status PackageVariantSetStatus `json:"status,omitempty"`
}

// PackageVariantSetSpec is the desired state of a PackageVariantSet.
type PackageVariantSetSpec struct {
	// +optional
	Upstream *v1alpha1.Upstream `json:"upstream,omitempty"`
	// +optional
	Targets []Target `json:"targets,omitempty"`
}

// Target selects downstreams in exactly one way: listed repositories (with
// package names), repositories by label, or objects by selector.
type Target struct {
	// +optional
	Repositories []RepositoryTarget `json:"repositories,omitempty"`
	// +optional
	RepositorySelector *metav1.LabelSelector `json:"repositorySelector,omitempty"`
	// +optional
	ObjectSelector *ObjectSelector `json:"objectSelector,omitempty"`
	// +optional
	Template *PackageVariantTemplate `json:"template,omitempty"`
}

// RepositoryTarget is a repository and the downstream package names in it
// (default: the upstream's name).
type RepositoryTarget struct {
	Name string `json:"name"`
	// +optional
	PackageNames []string `json:"packageNames,omitempty"`
}

// ObjectSelector selects objects of one kind (by labels, and by name).
type ObjectSelector struct {
	metav1.LabelSelector `json:",inline"`
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Name *string `json:"name,omitempty"`
}

// PackageVariantTemplate is the template of each generated PackageVariant;
// the *Expr fields are CEL expressions.
type PackageVariantTemplate struct {
	// +optional
	Downstream *DownstreamTemplate `json:"downstream,omitempty"`
	// +optional
	AdoptionPolicy *v1alpha1.AdoptionPolicy `json:"adoptionPolicy,omitempty"`
	// +optional
	DeletionPolicy *v1alpha1.DeletionPolicy `json:"deletionPolicy,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	LabelExprs []MapExpr `json:"labelExprs,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	AnnotationExprs []MapExpr `json:"annotationExprs,omitempty"`
	// +optional
	PackageContext *PackageContextTemplate `json:"packageContext,omitempty"`
	// +optional
	Pipeline *PipelineTemplate `json:"pipeline,omitempty"`
	// +optional
	Injectors []InjectionSelectorTemplate `json:"injectors,omitempty"`
	// +optional
	Bindings []v1alpha1.Binding `json:"bindings,omitempty"`
	// +optional
	Dependencies *v1alpha1.Dependencies `json:"dependencies,omitempty"`
}

// DownstreamTemplate names the downstream, literally or by expression.
type DownstreamTemplate struct {
	// +optional
	Repo *string `json:"repo,omitempty"`
	// +optional
	Package *string `json:"package,omitempty"`
	// +optional
	RepoExpr *string `json:"repoExpr,omitempty"`
	// +optional
	PackageExpr *string `json:"packageExpr,omitempty"`
}

// PackageContextTemplate is a PackageContext with expressions.
type PackageContextTemplate struct {
	// +optional
	Data map[string]string `json:"data,omitempty"`
	// +optional
	RemoveKeys []string `json:"removeKeys,omitempty"`
	// +optional
	DataExprs []MapExpr `json:"dataExprs,omitempty"`
	// +optional
	RemoveKeyExprs []string `json:"removeKeyExprs,omitempty"`
}

// InjectionSelectorTemplate is an InjectionSelector whose name may be an
// expression.
type InjectionSelectorTemplate struct {
	// +optional
	Group *string `json:"group,omitempty"`
	// +optional
	Version *string `json:"version,omitempty"`
	// +optional
	Kind *string `json:"kind,omitempty"`
	// +optional
	Name *string `json:"name,omitempty"`
	// +optional
	NameExpr *string `json:"nameExpr,omitempty"`
}

// MapExpr is one map entry: key and value each literal or an expression.
type MapExpr struct {
	// +optional
	Key *string `json:"key,omitempty"`
	// +optional
	Value *string `json:"value,omitempty"`
	// +optional
	KeyExpr *string `json:"keyExpr,omitempty"`
	// +optional
	ValueExpr *string `json:"valueExpr,omitempty"`
}

// PipelineTemplate is a pipeline whose functions' configMaps may hold
// expressions.
type PipelineTemplate struct {
	// +optional
	Validators []FunctionTemplate `json:"validators,omitempty"`
	// +optional
	Mutators []FunctionTemplate `json:"mutators,omitempty"`
}

// FunctionTemplate is a Function with configMap entries by expression.
type FunctionTemplate struct {
	v1alpha1.Function `json:",inline"`
	// +optional
	ConfigMapExprs []MapExpr `json:"configMapExprs,omitempty"`
}

// PackageVariantSetStatus is the observed state of a PackageVariantSet.
type PackageVariantSetStatus struct {
	// Conditions are Stalled and Ready.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PackageVariantSetList is a list of PackageVariantSets.
//
// +kubebuilder:object:root=true
type PackageVariantSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PackageVariantSet `json:"items"`
}
