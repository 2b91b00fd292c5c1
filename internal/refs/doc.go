// Package refs holds the references of a workload to its sources: the
// ConfigMaps, Secrets and SecretProviderClasses a pod spec uses
// (FromPodSpec), each use described as a Reference (whole or some keys,
// required or optional), and Merge, which unites several uses of one source.
//
// It is pure: no API calls, no clock.
package refs
