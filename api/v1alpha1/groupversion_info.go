// Package v1alpha1 holds nudge's own API, group nudge.dev version v1alpha1:
// the ValueBinding, which keeps fields of a resource equal to keys of
// Secrets and ConfigMaps in its namespace.
//
// +kubebuilder:object:generate=true
// +groupName=nudge.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is nudge.dev/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: "nudge.dev", Version: "v1alpha1"}

	// SchemeBuilder registers this package's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds ValueBinding and ValueBindingList to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
