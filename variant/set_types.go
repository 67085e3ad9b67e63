package variant

import (
	"github.com/configasdata/cad/revision"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PackageVariantSet is Porch's config.porch.kpt.dev/v1alpha2
// PackageVariantSet: one upstream and a set of targets, each unrolled into a
// PackageVariant by its template. Its JSON is Porch's.
type PackageVariantSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageVariantSetSpec   `json:"spec,omitempty"`
	Status PackageVariantSetStatus `json:"status,omitempty"`
}

// PackageVariantSetSpec is the desired state of a PackageVariantSet.
type PackageVariantSetSpec struct {
	Upstream *Upstream `json:"upstream,omitempty"`
	Targets  []Target  `json:"targets,omitempty"`
}

// Target selects downstreams by exactly one of Repositories,
// RepositorySelector and ObjectSelector; Template says how each becomes a
// PackageVariant.
type Target struct {
	// Repositories names repositories and, in each, the package names of
	// the downstreams (default: the upstream's package name).
	Repositories []RepositoryTarget `json:"repositories,omitempty"`
	// RepositorySelector selects repositories by the labels of their
	// repository.Spec (Options.RepositorySpecs); one downstream each,
	// named as the upstream package.
	RepositorySelector *metav1.LabelSelector `json:"repositorySelector,omitempty"`
	// ObjectSelector selects objects from the ObjectSource; one downstream
	// each, in the repository named as the object and named as the
	// upstream package, unless the template says otherwise.
	ObjectSelector *ObjectSelector `json:"objectSelector,omitempty"`

	Template *PackageVariantTemplate `json:"template,omitempty"`
}

// RepositoryTarget is one repository of a target and the package names of
// its downstreams.
type RepositoryTarget struct {
	Name         string   `json:"name"`
	PackageNames []string `json:"packageNames,omitempty"`
}

// ObjectSelector selects objects of one apiVersion and kind by labels and,
// optionally, name.
type ObjectSelector struct {
	metav1.LabelSelector `json:",inline"`

	APIVersion string  `json:"apiVersion,omitempty"`
	Kind       string  `json:"kind,omitempty"`
	Name       *string `json:"name,omitempty"`
}

// PackageVariantTemplate is how a target becomes a PackageVariant spec.
// The *Expr fields are CEL expressions over the variables repoDefault,
// packageDefault, upstream, repository and target (see SyncSet); an Expr
// entry wins over the plain field's entry with the same key.
type PackageVariantTemplate struct {
	Downstream *DownstreamTemplate `json:"downstream,omitempty"`

	AdoptionPolicy *AdoptionPolicy `json:"adoptionPolicy,omitempty"`
	DeletionPolicy *DeletionPolicy `json:"deletionPolicy,omitempty"`

	Labels          map[string]string `json:"labels,omitempty"`
	LabelExprs      []MapExpr         `json:"labelExprs,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
	AnnotationExprs []MapExpr         `json:"annotationExprs,omitempty"`

	PackageContext *PackageContextTemplate     `json:"packageContext,omitempty"`
	Pipeline       *PipelineTemplate           `json:"pipeline,omitempty"`
	Injectors      []InjectionSelectorTemplate `json:"injectors,omitempty"`

	// Bindings are copied to every generated PackageVariant (a cad
	// extension).
	Bindings []Binding `json:"bindings,omitempty"`
	// Dependencies are copied to every generated PackageVariant (a cad
	// extension).
	Dependencies *Dependencies `json:"dependencies,omitempty"`
}

// DownstreamTemplate overrides the downstream repository and package: at
// most one of Repo and RepoExpr, and of Package and PackageExpr.
type DownstreamTemplate struct {
	Repo        *string `json:"repo,omitempty"`
	Package     *string `json:"package,omitempty"`
	RepoExpr    *string `json:"repoExpr,omitempty"`
	PackageExpr *string `json:"packageExpr,omitempty"`
}

// PackageContextTemplate computes a PackageContext: Data and DataExprs are
// merged (DataExprs win), RemoveKeys and RemoveKeyExprs are joined.
type PackageContextTemplate struct {
	Data           map[string]string `json:"data,omitempty"`
	RemoveKeys     []string          `json:"removeKeys,omitempty"`
	DataExprs      []MapExpr         `json:"dataExprs,omitempty"`
	RemoveKeyExprs []string          `json:"removeKeyExprs,omitempty"`
}

// InjectionSelectorTemplate computes an InjectionSelector: exactly one of
// Name and NameExpr.
type InjectionSelectorTemplate struct {
	Group    *string `json:"group,omitempty"`
	Version  *string `json:"version,omitempty"`
	Kind     *string `json:"kind,omitempty"`
	Name     *string `json:"name,omitempty"`
	NameExpr *string `json:"nameExpr,omitempty"`
}

// MapExpr computes one map entry: at most one of Key and KeyExpr, and of
// Value and ValueExpr.
type MapExpr struct {
	Key       *string `json:"key,omitempty"`
	Value     *string `json:"value,omitempty"`
	KeyExpr   *string `json:"keyExpr,omitempty"`
	ValueExpr *string `json:"valueExpr,omitempty"`
}

// PipelineTemplate computes a Pipeline.
type PipelineTemplate struct {
	Validators []FunctionTemplate `json:"validators,omitempty"`
	Mutators   []FunctionTemplate `json:"mutators,omitempty"`
}

// FunctionTemplate is a Kptfile function whose configMap may be computed:
// ConfigMapExprs entries win over ConfigMap entries with the same key.
type FunctionTemplate struct {
	revision.Function `json:",inline"`
	ConfigMapExprs    []MapExpr `json:"configMapExprs,omitempty"`
}

// PackageVariantSetStatus is the observed state of a PackageVariantSet.
type PackageVariantSetStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
