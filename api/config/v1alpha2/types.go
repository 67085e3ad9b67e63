package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PackageVariantSet is config.porch.kpt.dev/v1alpha2 PackageVariantSet:
// one upstream and a set of targets, each unrolled into a PackageVariant
// by its template. Spec and status are kept as the JSON they were given;
// decode them with cad's variant package.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=porch
// +kubebuilder:storageversion
type PackageVariantSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is Porch's PackageVariantSet spec: upstream and targets.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Spec runtime.RawExtension `json:"spec,omitzero"`
	// Status is Porch's PackageVariantSet status: conditions.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Status runtime.RawExtension `json:"status,omitzero"`
}

// PackageVariantSetList is a list of PackageVariantSets.
//
// +kubebuilder:object:root=true
type PackageVariantSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PackageVariantSet `json:"items"`
}
