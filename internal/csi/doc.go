// Package csi holds nudge's side of the Secrets Store CSI driver
// (--enable-csi-integration): what nudge reads of a
// SecretProviderClassPodStatus (its cache keeps that alone, see
// trim.PodStatus), the
// SecretProviderClasses a namespace's pods have mounted and the digest of
// what they hold, and the watch that turns the integration on once the API
// serves the pod statuses. A SecretProviderClass itself is never read.
package csi
