package fingerprint

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"unsafe"

	"nudge.dev/nudge/internal/refs"
)

// KeySize is the size of an installation key in bytes.
const KeySize = 32

// digestLen is the number of base64url characters kept of a source's HMAC:
// 16 characters are 96 bits, far beyond any chance collision between two
// versions of one source.
const digestLen = 16

// Absent is the digest of an optional source that does not exist.
const Absent = "-"

// ErrKeySize is returned by NewKey for a key that is not KeySize bytes long.
var ErrKeySize = errors.New("fingerprint key must be 32 bytes")

// Key is an installation's HMAC key with its public identifier.
type Key struct {
	secret []byte
	id     string
}

// NewKey returns the Key for secret, which must be KeySize bytes; it returns
// ErrKeySize otherwise. The secret is copied.
func NewKey(secret []byte) (Key, error) {
	if len(secret) != KeySize {
		return Key{}, fmt.Errorf("%w, got %d", ErrKeySize, len(secret))
	}
	sum := sha256.Sum256(secret)
	return Key{secret: slices.Clone(secret), id: hex.EncodeToString(sum[:4])}, nil
}

// ID returns the key's identifier: the first 8 hex digits of SHA-256(key).
// It reveals nothing of the key and tells applied states of different keys
// apart.
func (k Key) ID() string { return k.id }

// Digests maps each key of a source to the SHA-256 of its value (32 raw
// bytes held in a string). It is the only form of a source's content nudge
// keeps in memory.
type Digests map[string]string

// Sum returns the SHA-256 of value as a 32-byte string, the value type of
// Digests.
func Sum(value []byte) string {
	s := sha256.Sum256(value)
	return string(s[:])
}

// SumString is Sum of a string's bytes, hashed in place: a ConfigMap's values
// are strings, often large, and a copy of each would only be garbage.
func SumString(value string) string {
	// Safe: SHA-256 only reads its input, and keeps nothing of it.
	return Sum(unsafe.Slice(unsafe.StringData(value), len(value)))
}

// Entry returns the applied-state entry of what ref reads from a source
// whose per-key digests are d: ref's shape and Source's digest.
func (k Key) Entry(ref refs.Reference, d Digests) Entry {
	return Entry{Shape: Shape(ref), Digest: k.Source(ref, d)}
}

// Source returns the digest of what ref reads from a source whose per-key
// digests are d: every key of d when ref is whole, else the keys ref names,
// a missing key counting as absent. The result is digestLen base64url
// characters and depends on the key, the source's identity and the digests.
func (k Key) Source(ref refs.Reference, d Digests) string {
	mac := hmac.New(sha256.New, k.secret)
	field(mac, string(ref.Kind))
	field(mac, ref.Namespace)
	field(mac, ref.Name)
	keys := ref.Keys
	if ref.Whole() {
		keys = make([]string, 0, len(d))
		for key := range d {
			keys = append(keys, key)
		}
		slices.Sort(keys)
	}
	for _, key := range keys {
		field(mac, key)
		if v, ok := d[key]; ok {
			mac.Write([]byte{1})
			field(mac, v)
		} else {
			mac.Write([]byte{0})
		}
	}
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))[:digestLen]
}

// field writes s to h as an 8-byte big-endian length and its bytes, so that no
// two sequences of fields encode alike.
func field(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// Seal returns a keyed check of value, an applied-state annotation nudge
// writes: 32 lowercase hex digits of HMAC-SHA256(key, "seal\x00"+value), a
// valid label value. nudge writes it as a label beside the annotation; a
// Deployment's annotations travel to its ReplicaSets and come back with
// `kubectl rollout undo`, its labels do not, so an annotation whose seal does
// not match is one nudge did not write last.
func (k Key) Seal(value string) string {
	mac := hmac.New(sha256.New, k.secret)
	mac.Write([]byte("seal\x00" + value))
	return hex.EncodeToString(mac.Sum(nil))[:32]
}

// Shape returns a short tag of the set of keys ref reads: "" for the whole
// object, else 6 base64url characters of SHA-256 of the sorted keys. Key names
// are not secret (they stand in the pod spec); the tag only tells a change of
// what is read apart from a change of content.
func Shape(ref refs.Reference) string {
	if ref.Whole() {
		return ""
	}
	h := sha256.New()
	for _, key := range ref.Keys {
		field(h, key)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:6]
}

// ObjectVersion is one object a Secrets Store CSI SecretProviderClass mounts
// into a pod, as the driver records it in a SecretProviderClassPodStatus
// (status.objects[]: id and version; see
// https://github.com/kubernetes-sigs/secrets-store-csi-driver/blob/main/apis/v1/secretproviderclasspodstatus_types.go).
// A version identifies a secret's revision in the external store; it is not
// its content.
type ObjectVersion struct{ ID, Version string }

// Versions returns the Digests of a SecretProviderClass from the objects its
// pods have mounted, one list per pod: each object id maps to the SHA-256 of
// its distinct versions, sorted and length-prefixed. How many pods mount the
// class, and in which order they are given, does not change the result; a
// rotation (a new version of any object) does.
func Versions(pods ...[]ObjectVersion) Digests {
	byID := map[string][]string{}
	for _, objects := range pods {
		for _, o := range objects {
			byID[o.ID] = append(byID[o.ID], o.Version)
		}
	}
	d := make(Digests, len(byID))
	for id, versions := range byID {
		slices.Sort(versions)
		h := sha256.New()
		for _, v := range slices.Compact(versions) {
			field(h, v)
		}
		d[id] = string(h.Sum(nil))
	}
	return d
}
