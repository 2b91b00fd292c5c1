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
	// an integer, higher first (e.g. "10" on canaries); 0 when unset.
	PriorityAnnotation = "nudge.dev/rollout-priority"
	// HaltedAnnotation holds a workload because a rollout of the same change
	// failed elsewhere: "<Kind>/<namespace>/<name>=<digest> <Kind>/<namespace>/<name>",
	// the source and its content digest (see RolledForAnnotation), then the
	// workload whose rollout failed. Removing it resumes the workload.
	HaltedAnnotation = "nudge.dev/halted"
	// RolledForAnnotation records, with each rollout while waves are on,
	// the changed sources and the content each rolled to:
	// "<Kind>/<namespace>/<name>=<key-id>.<digest> ...", where digest is the
	// keyed digest (fingerprint.Key.Source, see sources.ContentDigest) of the whole source. A failure
	// of this rollout halts the workloads waiting on that content.
	RolledForAnnotation = "nudge.dev/rolled-for"
)

// PriorityOf returns obj's PriorityAnnotation, 0 when unset; an error says
// why a malformed one counts as 0.
func PriorityOf(obj client.Object) (int, error) {
	v, ok := obj.GetAnnotations()[PriorityAnnotation]
	if !ok {
		return 0, nil
	}
	p, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("annotation %s: want an integer such as \"10\", got %q; counting it as 0", PriorityAnnotation, v)
	}
	return p, nil
}

// sourceDigest is one entry of RolledForAnnotation.
type sourceDigest struct {
	source refs.Source
	digest string
}

// parseDigests reads RolledForAnnotation's value; malformed entries are
// left out.
func parseDigests(v string) []sourceDigest {
	var out []sourceDigest
	for _, f := range strings.Fields(v) {
		ident, digest, ok := strings.Cut(f, "=")
		parts := strings.Split(ident, "/")
		if !ok || digest == "" || len(parts) != 3 {
			continue
		}
		out = append(out, sourceDigest{refs.Source{Kind: refs.Kind(parts[0]), Namespace: parts[1], Name: parts[2]}, digest})
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
