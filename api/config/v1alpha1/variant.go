package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PackageVariant is config.porch.kpt.dev/v1alpha1 PackageVariant: one
// upstream package revision and the downstream package kept a specialised
// copy of it. Its JSON is Porch's (plus cad's bindings); cad's variant
// package syncs it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=porch
// +kubebuilder:printcolumn:name="Upstream",type=string,JSONPath=`.spec.upstream.package`
// +kubebuilder:printcolumn:name="Downstream",type=string,JSONPath=`.spec.downstream.package`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
type PackageVariant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageVariantSpec   `json:"spec,omitempty"`
	Status PackageVariantStatus `json:"status,omitempty"`
}

// AdoptionPolicy says whether a PackageVariant takes over downstream
// revisions it did not create: adoptNone (the default) or adoptExisting.
//
// +kubebuilder:validation:Enum=adoptExisting;adoptNone
type AdoptionPolicy string

// DeletionPolicy says what happens to a PackageVariant's downstream
// revisions when it goes: delete (the default) or orphan.
//
// +kubebuilder:validation:Enum=delete;orphan
type DeletionPolicy string

// The policies, with Porch's values.
const (
	AdoptExisting        AdoptionPolicy = "adoptExisting"
	AdoptNone            AdoptionPolicy = "adoptNone"
	DeletionPolicyDelete DeletionPolicy = "delete"
	DeletionPolicyOrphan DeletionPolicy = "orphan"
)

// PackageVariantSpec is the desired state of a PackageVariant.
type PackageVariantSpec struct {
	// Upstream selects the upstream package revision.
	// +optional
	Upstream *Upstream `json:"upstream,omitempty"`
	// Downstream names the downstream package.
	// +optional
	Downstream *Downstream `json:"downstream,omitempty"`
	// +optional
	AdoptionPolicy AdoptionPolicy `json:"adoptionPolicy,omitempty"`
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
	// Labels and Annotations go to the downstream revision.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// PackageContext sets and removes keys of the package context.
	// +optional
	PackageContext *PackageContext `json:"packageContext,omitempty"`
	// Pipeline's functions are prepended to the downstream Kptfile's.
	// +optional
	Pipeline *Pipeline `json:"pipeline,omitempty"`
	// Injectors select the objects injected into injection points.
	// +optional
	Injectors []InjectionSelector `json:"injectors,omitempty"`
	// Bindings fill the package's named binding points (a cad extension).
	// +optional
	Bindings []Binding `json:"bindings,omitempty"`
	// Dependencies make the sync resolve what the downstream draft
	// requires (a cad extension).
	// +optional
	Dependencies *Dependencies `json:"dependencies,omitempty"`
}

// Dependencies say what a sync does about the requirements the downstream
// package declares: clone the providers of what the downstream
// repository lacks from ProviderRepos, as drafts, and record the outcome
// as the readiness condition deps.cad.configasdata.dev/satisfied on the
// downstream draft, with Gate also adding that readiness gate.
type Dependencies struct {
	// ProviderRepos are the repositories searched, in order, for
	// providers.
	// +optional
	ProviderRepos []string `json:"providerRepos,omitempty"`
	// Gate adds the readiness gate to the downstream draft.
	// +optional
	Gate bool `json:"gate,omitempty"`
}

// Upstream selects an upstream revision: Revision > 0 pins published
// revision N, WorkspaceName the revision published from that workspace,
// neither the latest published revision.
type Upstream struct {
	// +optional
	Repo string `json:"repo,omitempty"`
	// +optional
	Package string `json:"package,omitempty"`
	// +optional
	Revision int `json:"revision,omitempty"`
	// +optional
	WorkspaceName string `json:"workspaceName,omitempty"`
}

// UnmarshalJSON decodes an Upstream, accepting the revision as a number
// (Porch today) or as the string "vN" or "N" (Porch before integer
// revisions). It returns an error for any other revision.
func (u *Upstream) UnmarshalJSON(data []byte) error {
	var raw struct {
		Repo          string          `json:"repo,omitempty"`
		Package       string          `json:"package,omitempty"`
		Revision      json.RawMessage `json:"revision,omitempty"`
		WorkspaceName string          `json:"workspaceName,omitempty"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*u = Upstream{Repo: raw.Repo, Package: raw.Package, WorkspaceName: raw.WorkspaceName}
	rev, err := parseRevision(raw.Revision)
	u.Revision = rev
	return err
}

// parseRevision reads a revision given as a number, "vN" or "N".
func parseRevision(b json.RawMessage) (int, error) {
	if len(b) == 0 || string(b) == "null" {
		return 0, nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		return n, nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return 0, fmt.Errorf("upstream.revision: want a number or \"vN\": %w", err)
	}
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(s, "v"))
	if err != nil {
		return 0, fmt.Errorf("upstream.revision %q: want a number or \"vN\"", s)
	}
	return n, nil
}

// Downstream names a package in a repository.
type Downstream struct {
	// +optional
	Repo string `json:"repo,omitempty"`
	// +optional
	Package string `json:"package,omitempty"`
}

// PackageContext lists keys to set in and remove from the package context
// ConfigMap's data.
type PackageContext struct {
	// +optional
	Data map[string]string `json:"data,omitempty"`
	// +optional
	RemoveKeys []string `json:"removeKeys,omitempty"`
}

// Pipeline is a Kptfile pipeline.
type Pipeline struct {
	// +optional
	Mutators []Function `json:"mutators,omitempty"`
	// +optional
	Validators []Function `json:"validators,omitempty"`
}

// Function is one step of a Kptfile pipeline.
type Function struct {
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	Exec string `json:"exec,omitempty"`
	// +optional
	ConfigPath string `json:"configPath,omitempty"`
	// +optional
	ConfigMap map[string]string `json:"configMap,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Tag string `json:"tag,omitempty"`
	// +optional
	Selectors []Selector `json:"selectors,omitempty"`
	// +optional
	Exclude []Selector `json:"exclude,omitempty"`
	// Condition is a CEL expression; the step runs when it is true (a
	// cad extension).
	// +optional
	Condition string `json:"condition,omitempty"`
}

// Selector selects resources of a package for a pipeline step.
type Selector struct {
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// InjectionSelector selects the object injected into the injection points
// whose group, version and kind match the fields that are set.
type InjectionSelector struct {
	// +optional
	Group *string `json:"group,omitempty"`
	// +optional
	Version *string `json:"version,omitempty"`
	// +optional
	Kind *string `json:"kind,omitempty"`
	Name string  `json:"name"`
}

// Binding fills the binding point Name from exactly one source: objects in
// the cluster, inline resources, or resources of another package revision
// (a cad extension).
type Binding struct {
	Name string `json:"name"`
	// +optional
	Object *ObjectBinding `json:"object,omitempty"`
	// Resources are inline KRM resources.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Resources []runtime.RawExtension `json:"resources,omitempty"`
	// +optional
	PackageRevision *PackageRevisionBinding `json:"packageRevision,omitempty"`
}

// ObjectBinding selects objects by name or by label selector.
type ObjectBinding struct {
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// PackageRevisionBinding selects resources of a published package
// revision, chosen as Upstream chooses.
type PackageRevisionBinding struct {
	Upstream `json:",inline"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// UnmarshalJSON decodes a PackageRevisionBinding; without it the embedded
// Upstream's decoder would swallow the other fields. It returns the
// decoder's error.
func (b *PackageRevisionBinding) UnmarshalJSON(data []byte) error {
	var up Upstream
	if err := json.Unmarshal(data, &up); err != nil {
		return err
	}
	var rest struct {
		Name     string                `json:"name,omitempty"`
		Selector *metav1.LabelSelector `json:"selector,omitempty"`
	}
	if err := json.Unmarshal(data, &rest); err != nil {
		return err
	}
	*b = PackageRevisionBinding{Upstream: up, Name: rest.Name, Selector: rest.Selector}
	return nil
}

// PackageVariantStatus is the observed state of a PackageVariant.
type PackageVariantStatus struct {
	// Conditions are Stalled and Ready.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// DownstreamTargets are the downstream revisions the variant created
	// or adopted.
	// +optional
	DownstreamTargets []DownstreamTarget `json:"downstreamTargets,omitempty"`
}

// DownstreamTarget is one downstream revision: Porch's name, and (a cad
// extension) its key.
type DownstreamTarget struct {
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Repository string `json:"repository,omitempty"`
	// +optional
	Package string `json:"package,omitempty"`
	// +optional
	WorkspaceName string `json:"workspaceName,omitempty"`
}

// PackageVariantList is a list of PackageVariants.
//
// +kubebuilder:object:root=true
type PackageVariantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PackageVariant `json:"items"`
}
