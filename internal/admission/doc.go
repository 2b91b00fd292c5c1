// Package admission is the mutating admission webhook that keeps nudge's
// trigger on a workload's pod template (--admission-webhook).
//
// An owner that writes a workload's whole object back (kubectl replace, an
// operator's update, a GitOps sync without nudge's keys) drops the trigger
// nudge wrote on the pod template at its last rollout, and with it changes
// the template: a second rollout, for nothing (SAP pod-reloader's reason
// for its webhook). On such an UPDATE, when the write changes the pod
// template only by dropping the trigger, the webhook puts the template the
// write replaces back, and nudge's state on the workload's metadata with it,
// so that the owner's write changes no template and nudge's state keeps
// describing what the pods run. Any other write is admitted as it is. The
// rule is Keep, a pure function; Handler serves it.
package admission
