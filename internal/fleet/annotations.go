package fleet

import (
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/refs"
)

// Annotations of waves and halts (--max-concurrent-rollouts), on the
// workload's metadata.
const (
	// PriorityAnnotation orders the workloads waiting for a rollout slot:
	// an integer from MinPriority to MaxPriority, higher first (e.g. "10"
	// on canaries); 0 when unset.
	PriorityAnnotation = "nudge.dev/rollout-priority"
	// HaltedAnnotation holds a workload because a rollout of the same change
	// failed elsewhere: "<Kind>/<namespace>/<name>=<digest> <Kind>/<namespace>/<name>",
	// the source and its content digest (see RolledForAnnotation), then the
	// workload whose rollout failed. Removing it resumes the workload.
	HaltedAnnotation = "nudge.dev/halted"
	// RolledForAnnotation records, with each rollout while waves are on,
	// the changed sources and the content each rolled to, sealed:
	// "seal=<mark> <Kind>/<namespace>/<name>=<key-id>.<digest> ...", where
	// digest is the keyed digest (fingerprint.Key.Source, see
	// sources.ContentDigest) of the whole source and mark a keyed check of
	// the rest, the workload and its nudge.dev/last-rollout (see
	// rolledForMark). A failure of this rollout halts the workloads of its
	// namespace waiting on that content; a value without a valid mark (as
	// earlier builds of nudge wrote it, or as anyone else writes it) halts
	// nothing and takes no rollout slot.
	RolledForAnnotation = "nudge.dev/rolled-for"
)

// The range of PriorityAnnotation; a value outside it counts as the bound
// it passes.
const (
	MinPriority = -1000
	MaxPriority = 1000
)

// PriorityOf returns obj's PriorityAnnotation, 0 when unset, within
// MinPriority..MaxPriority; an error says why a malformed one counts as 0
// and one out of range as the bound it passes.
func PriorityOf(obj client.Object) (int, error) {
	v, ok := obj.GetAnnotations()[PriorityAnnotation]
	if !ok {
		return 0, nil
	}
	p, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("annotation %s: want an integer from %d to %d such as \"10\", got %q; counting it as 0",
			PriorityAnnotation, MinPriority, MaxPriority, shorten(v))
	}
	if c := min(max(p, MinPriority), MaxPriority); c != p {
		return c, fmt.Errorf("annotation %s: want an integer from %d to %d, got %d; counting it as %d",
			PriorityAnnotation, MinPriority, MaxPriority, p, c)
	}
	return p, nil
}

// shorten returns v, or its first 32 bytes and "..." when it is longer: an
// annotation's value quoted in a note.
func shorten(v string) string {
	if len(v) <= 32 {
		return v
	}
	return strings.ToValidUTF8(v[:32], "") + "..."
}

// sourceDigest is one entry of RolledForAnnotation.
type sourceDigest struct {
	source refs.Source
	digest string
}

// Bounds of what parseDigests reads: a namespace is an RFC 1123 label, a
// name a subdomain, a digest "<key-id>.<digest>" (25 bytes) or "absent".
const (
	maxNamespace = 63
	maxName      = 253
	maxDigest    = 64
)

// parseDigests reads the entries of RolledForAnnotation's value (without
// its mark) or of HaltedAnnotation's first field: ConfigMaps and Secrets
// (the kinds nudge digests whole, see sources.ContentDigest) with a
// namespace, a name and a digest within their bounds. Anything else is left
// out. The strings returned are copies: they keep nothing of v alive.
func parseDigests(v string) []sourceDigest {
	var out []sourceDigest
	for f := range strings.FieldsSeq(v) {
		ident, digest, ok := strings.Cut(f, "=")
		kind, rest, ok1 := strings.Cut(ident, "/")
		namespace, name, ok2 := strings.Cut(rest, "/")
		switch {
		case !ok || !ok1 || !ok2 || strings.Contains(name, "/"),
			refs.Kind(kind) != refs.ConfigMap && refs.Kind(kind) != refs.Secret,
			namespace == "" || len(namespace) > maxNamespace,
			name == "" || len(name) > maxName,
			digest == "" || len(digest) > maxDigest || strings.Contains(digest, "="):
			continue
		}
		src := refs.Source{Kind: refs.Kind(kind), Namespace: strings.Clone(namespace), Name: strings.Clone(name)}
		out = append(out, sourceDigest{src, strings.Clone(digest)})
	}
	return out
}

// Halt is a HaltedAnnotation's value, read.
type Halt struct {
	// Source is the source whose content the workload is held for, and
	// Digest that content (see sources.ContentDigest).
	Source refs.Source
	Digest string
	// After is the workload whose rollout of that content failed, e.g.
	// "Deployment shop/canary".
	After string
}

// formatHalt renders HaltedAnnotation's value.
func formatHalt(src refs.Source, digest, after string) string {
	return src.String() + "=" + digest + " " + strings.Replace(after, " ", "/", 1)
}

// ParseHalt reads a HaltedAnnotation's value, as formatHalt writes it; ok is
// false when it cannot (a malformed hold holds nothing, and nudge removes it).
func ParseHalt(v string) (h Halt, ok bool) {
	first, failed, _ := strings.Cut(strings.TrimSpace(v), " ")
	sds := parseDigests(first)
	if len(sds) != 1 {
		return Halt{}, false
	}
	return Halt{Source: sds[0].source, Digest: sds[0].digest, After: strings.Replace(failed, "/", " ", 1)}, true
}
