package fleet

import (
	"crypto/hmac"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/workload"
)

// The mark of RolledForAnnotation: a halt, or a rollout slot, is taken only
// from state nudge wrote. The annotation is editable by whoever edits the
// workload, and a workload's own applied state shows the digest to forge, so
// nudge checks a keyed mark it writes with the value. managedFields would
// not do: a field manager is a name any client may claim (kubectl
// annotate --field-manager nudge).

// markPrefix begins RolledForAnnotation's first field, the mark.
const markPrefix = "seal="

// maxRolledFor is the longest RolledForAnnotation value read, in bytes: 64
// entries at their longest; a longer value is not nudge's, and its mark is
// not even computed.
const maxRolledFor = 64 * (len("Secret//=") + maxNamespace + maxName + maxDigest)

// rolledForMark returns the mark of RolledForAnnotation's entries as nudge
// writes them on workload key with rolledAt, the rollout's
// nudge.dev/last-rollout: fingerprint.Key.Seal of the four, so that a value
// copied to another workload, kept with another rollout time or edited does
// not match. Its input begins "rolled-for\x00", which no applied state (the
// seal label's input, "v1.…") does.
func rolledForMark(k fingerprint.Key, key Key, rolledAt, entries string) string {
	return k.Seal("rolled-for\x00" + key.Kind + "\x00" + key.Namespace + "\x00" + key.Name + "\x00" + rolledAt + "\x00" + entries)
}

// formatRolledFor returns RolledForAnnotation's value for entries (the
// changed sources and their digests, as "<Kind>/<namespace>/<name>=<digest>
// ..."), on workload key rolled at rolledAt: the mark, then the entries.
func formatRolledFor(k fingerprint.Key, key Key, rolledAt, entries string) string {
	mark := markPrefix + rolledForMark(k, key, rolledAt, entries)
	if entries == "" {
		return mark
	}
	return mark + " " + entries
}

// rolledFor returns the entries of obj's RolledForAnnotation, workload key,
// when nudge wrote it with obj's nudge.dev/last-rollout (its mark matches);
// ok is false, and nothing is returned, for a value missing, longer than
// maxRolledFor, unmarked (as earlier builds of nudge wrote it) or whose
// mark does not match.
func rolledFor(k fingerprint.Key, key Key, obj client.Object) (sds []sourceDigest, ok bool) {
	a := obj.GetAnnotations()
	v, found := a[RolledForAnnotation]
	if !found || len(v) > maxRolledFor {
		return nil, false
	}
	first, entries, _ := strings.Cut(v, " ")
	mark, marked := strings.CutPrefix(first, markPrefix)
	if !marked || !hmac.Equal([]byte(mark), []byte(rolledForMark(k, key, a[workload.LastRolloutAnnotation], entries))) {
		return nil, false
	}
	return parseDigests(entries), true
}
