package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PackageVariant is config.porch.kpt.dev/v1alpha1 PackageVariant: one
// upstream package revision and the downstream package kept a specialised
// copy of it. Spec and status are kept as the JSON they were given (see the
// package doc); decode them with cad's variant package.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=porch
type PackageVariant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is Porch's PackageVariant spec: upstream, downstream,
	// adoptionPolicy, deletionPolicy, labels, annotations, packageContext,
	// pipeline, injectors (and cad's bindings).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Spec runtime.RawExtension `json:"spec,omitzero"`
	// Status is Porch's PackageVariant status: conditions and
	// downstreamTargets.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Status runtime.RawExtension `json:"status,omitzero"`
}

// PackageVariantList is a list of PackageVariants.
//
// +kubebuilder:object:root=true
type PackageVariantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PackageVariant `json:"items"`
}
