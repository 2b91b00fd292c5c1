// Package v1alpha1 holds nudge's own API, group nudge.dev version v1alpha1:
// the ValueBinding, which keeps fields of a resource equal to keys of
// Secrets and ConfigMaps in its namespace.
//
// +kubebuilder:object:generate=true
// +groupName=nudge.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is nudge.dev/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: "nudge.dev", Version: "v1alpha1"}

// AddToScheme adds ValueBinding and ValueBindingList to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ValueBinding{}, &ValueBindingList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
