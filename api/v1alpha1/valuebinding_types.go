package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValueBinding keeps chosen fields of one resource (its target) equal to keys
// of Secrets and ConfigMaps, all in the binding's namespace. nudge writes the
// fields by server-side apply under the field manager "nudge", and only
// those: every other field of the target stays with its owner.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=nudge
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.name`,description="Name of the target"
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.target.kind`,description="Kind of the target",priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValueBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ValueBindingSpec   `json:"spec"`
	Status ValueBindingStatus `json:"status,omitempty"`
}

// ValueBindingSpec says which fields of which target take which values.
type ValueBindingSpec struct {
	// Target is the resource whose fields are kept, in the binding's
	// namespace. nudge never creates it.
	Target TargetReference `json:"target"`

	// Values are the bound fields, each with where its value comes from.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Values []BoundValue `json:"values"`

	// DeletionPolicy says what becomes of the bound fields when the binding
	// is deleted: Orphan (the default) leaves the values in the target;
	// Delete removes the fields nudge alone owns.
	// +kubebuilder:default=Orphan
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// TargetReference names one resource by apiVersion, kind and name, as the
// Kubernetes API conventions write object references.
type TargetReference struct {
	// APIVersion of the target, "group/version" or "v1" for the core group.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// Kind of the target, e.g. Harbor.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name of the target, in the binding's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// BoundValue is one field of the target and the key its value comes from.
type BoundValue struct {
	// FieldPath is the field of the target, as the Kubernetes API conventions
	// write field paths: spec.a.b, spec.list[0].b,
	// metadata.annotations['x.io/y'].
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.trim().size() > 0",message="fieldPath must not be empty"
	FieldPath string `json:"fieldPath"`

	// Type is the JSON type the value is written as: string (the default),
	// integer or boolean.
	// +kubebuilder:default=string
	// +optional
	Type ValueType `json:"type,omitempty"`

	// ValueFrom is the source of the value: exactly one of secretKeyRef and
	// configMapKeyRef.
	ValueFrom ValueSource `json:"valueFrom"`
}

// ValueSource is one key of a Secret or of a ConfigMap, as in a container's
// env var (corev1.EnvVarSource), in the binding's namespace.
//
// +kubebuilder:validation:XValidation:rule="has(self.secretKeyRef) != has(self.configMapKeyRef)",message="exactly one of secretKeyRef and configMapKeyRef must be set"
type ValueSource struct {
	// SecretKeyRef selects a key of a Secret.
	// +optional
	SecretKeyRef *KeySelector `json:"secretKeyRef,omitempty"`
	// ConfigMapKeyRef selects a key of a ConfigMap.
	// +optional
	ConfigMapKeyRef *KeySelector `json:"configMapKeyRef,omitempty"`
}

// KeySelector selects a key of a Secret or ConfigMap by the object's name.
type KeySelector struct {
	// Name of the Secret or ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key within its data (or binaryData).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
	// Optional: when true, a missing object or key is no error, as in a
	// container's env var: the field is left out of nudge's apply, so a value
	// nudge wrote there before is removed unless another manager owns it too.
	// +optional
	Optional *bool `json:"optional,omitempty"`
}

// ValueType is the JSON type a bound value is written as.
// +kubebuilder:validation:Enum=string;integer;boolean
type ValueType string

// The value types: the source's bytes as a string, or parsed as an integer
// (strconv.ParseInt base 10) or a boolean (strconv.ParseBool).
const (
	TypeString  ValueType = "string"
	TypeInteger ValueType = "integer"
	TypeBoolean ValueType = "boolean"
)

// DeletionPolicy says what becomes of the bound fields when the binding goes.
// +kubebuilder:validation:Enum=Orphan;Delete
type DeletionPolicy string

// The deletion policies.
const (
	// DeletionOrphan leaves the values in the target.
	DeletionOrphan DeletionPolicy = "Orphan"
	// DeletionDelete removes the fields nudge alone owns.
	DeletionDelete DeletionPolicy = "Delete"
)

// ValueBindingStatus is what nudge last did with the binding.
type ValueBindingStatus struct {
	// ObservedGeneration is the binding's generation nudge last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// AppliedFingerprint is the keyed digest of the values last applied
	// (v1.<key-id>.<digest>, the format of the workloads' applied
	// fingerprint): never a value, nor an unkeyed digest of one.
	// +optional
	AppliedFingerprint string `json:"appliedFingerprint,omitempty"`
	// Conditions: Ready, with a reason from the Reason constants.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionReady is the type of the binding's one condition.
const ConditionReady = "Ready"

// The reasons of the Ready condition.
const (
	// ReasonApplied: the target holds every bound value.
	ReasonApplied = "Applied"
	// ReasonSourceNotFound: a required Secret or ConfigMap does not exist.
	ReasonSourceNotFound = "SourceNotFound"
	// ReasonKeyNotFound: a required key is not in its Secret or ConfigMap.
	ReasonKeyNotFound = "KeyNotFound"
	// ReasonTargetNotFound: the target does not exist; nothing is written
	// until it does.
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonInvalidFieldPath: a fieldPath does not parse.
	ReasonInvalidFieldPath = "InvalidFieldPath"
	// ReasonInvalidValue: a value does not convert to its type.
	ReasonInvalidValue = "InvalidValue"
	// ReasonRefused: the API server refused the apply, the target is
	// cluster-scoped, or its kind is not in --value-binding-targets.
	ReasonRefused = "Refused"
	// ReasonConflict: another field manager kept overwriting a bound field;
	// nudge stopped until the binding or a source changes.
	ReasonConflict = "Conflict"
)

// ValueBindingList is a list of ValueBindings.
//
// +kubebuilder:object:root=true
type ValueBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValueBinding `json:"items"`
}
