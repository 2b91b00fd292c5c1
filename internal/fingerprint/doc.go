// Package fingerprint holds nudge's keyed digests of what a workload reads
// from its sources, the seal, the format of the applied state stored on the
// workload, and the key Secret an installation of nudge keeps (LoadKey
// writes its key at the first start, ReadKey reads it for nudge explain).
//
// Nothing here sees a source's value: the source cache keeps, for every key,
// the SHA-256 of its value (see Digests), and the digests written to workloads
// are HMAC-SHA256 over those under the installation's key, so no reader of a
// workload can confirm a guess of a Secret's content.
//
// A source digest is
//
//	base64url(HMAC-SHA256(key, canonical))[:16]
//
// where canonical is the length-prefixed encoding of kind, namespace, name and,
// for each key the workload reads in sorted order, the key and the SHA-256 of
// its value, or an absence marker when the key is missing. A ConfigMap's
// binaryData counts like its data.
package fingerprint
