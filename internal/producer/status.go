package producer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Status is what nudge knows of one Secret's producer.
type Status struct {
	// Known says the Secret has a producer nudge reads: its kind is served
	// and watched, the producer is in the cache, and the Secret is the one
	// it writes. A Status not Known holds no rollout.
	Known bool
	// Producer names it, as "ExternalSecret shop/db" (Ref.String), for
	// Events and nudge explain; set when Known.
	Producer string
	// Ready says the producer is done: its Ready condition is True and its
	// status has observed its current generation (see StatusOf).
	Ready bool
	// Reason says, when Known and not Ready, why, in a few words: the Ready
	// condition's status, reason and message (the message cut to
	// maxMessage bytes), or the generation the status lags at. It never
	// holds a value of the Secret: the producers' conditions hold none.
	Reason string
}

// maxMessage is the most bytes of a condition's message the cache keeps and
// a Reason quotes: a few words are enough to say why, and a message (an
// issuer's error, say) may run to kilobytes.
const maxMessage = 120

// state is what nudge reads of a producer, and all that Trim keeps of it.
type state struct {
	target     string // the name of the Secret it writes
	generation int64  // metadata.generation
	// observed is status.observedGeneration, 0 when the producer does not
	// report it (neither ExternalSecret nor Certificate does today).
	observed int64
	// synced is an ExternalSecret's status.syncedResourceVersion (see
	// syncedGeneration), "" for a Certificate.
	synced string
	ready  *condition // the Ready condition, nil when there is none
}

// condition is what nudge reads of a Ready condition.
type condition struct {
	status, reason, message string
	// observedGeneration is the generation it was set for, 0 when the
	// producer does not report it (an ExternalSecret's conditions have no
	// such field; a Certificate's have).
	observedGeneration int64
}

// read returns what nudge reads of u, a producer of kind k, whole or as
// Trim packs it.
func read(u *unstructured.Unstructured, k kind) state {
	s, ok := unpack(u)
	if !ok {
		s = readWhole(u, k)
	}
	if s.target == "" && k.GroupKind == ExternalSecret {
		s.target = u.GetName()
	}
	return s
}

// readWhole returns what nudge reads of u, a producer of kind k as the API
// serves it, its target as its spec has it ("" for a default).
func readWhole(u *unstructured.Unstructured, k kind) state {
	s := state{generation: u.GetGeneration()}
	s.target, _, _ = unstructured.NestedString(u.Object, k.target...)
	s.observed, _, _ = unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	s.synced, _, _ = unstructured.NestedString(u.Object, "status", "syncedResourceVersion")
	conditions, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "conditions")
	list, _ := conditions.([]any)
	for _, c := range list {
		m, _ := c.(map[string]any)
		if t, _ := m["type"].(string); t != "Ready" {
			continue
		}
		r := &condition{}
		r.status, _ = m["status"].(string)
		r.reason, _ = m["reason"].(string)
		message, _ := m["message"].(string)
		r.message = cut(message, maxMessage)
		r.observedGeneration, _ = m["observedGeneration"].(int64)
		s.ready = r
		break
	}
	return s
}

// cut returns s when it is at most n bytes long, else its first runes
// followed by "…", n bytes at most in all. It is idempotent.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const more = "…"
	end := n - len(more)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + more
}

// syncedGeneration returns the generation an ExternalSecret's
// status.syncedResourceVersion was synced at. The External Secrets Operator
// sets it, with the Ready condition True, once it has written the Secret
// (markAsDone in pkg/controllers/externalsecret/externalsecret_controller.go),
// to "<metadata.generation>-<hash of the labels and annotations>"
// (GetResourceVersion in pkg/controllers/util/util.go; the field's godoc in
// apis/externalsecrets/v1/externalsecret_types.go: "keeps track of the last
// synced version"; external-secrets v0.16.2). Only the generation is
// compared: the hash is the operator's own (SHA3 of a Go rendering of two
// maps), no API, and would need the ExternalSecret's labels and annotations,
// kubectl's last-applied copy among them, in the cache; a change of those
// alone (a force-sync annotation) makes the operator write the Secret again,
// whole, in one write. ok is false when v has no generation.
func syncedGeneration(v string) (generation int64, ok bool) {
	prefix, _, _ := strings.Cut(v, "-")
	g, err := strconv.ParseInt(prefix, 10, 64)
	return g, err == nil
}

// readiness returns whether s is done, and when not, why.
func (s state) readiness() (ready bool, reason string) {
	r := s.ready
	switch {
	case r == nil:
		return false, "no Ready condition yet"
	case r.status != "True":
		status := r.status
		if status == "" {
			status = "Unknown"
		}
		reason = "Ready is " + status
		for _, part := range []string{r.reason, r.message} {
			if part != "" {
				reason += ": " + part
			}
		}
		return false, reason
	case s.generation == 0:
		return true, ""
	case r.observedGeneration != 0 && r.observedGeneration != s.generation:
		return false, fmt.Sprintf("Ready condition of generation %d, not %d yet", r.observedGeneration, s.generation)
	case s.observed != 0 && s.observed != s.generation:
		return false, fmt.Sprintf("status observed generation %d, not %d yet", s.observed, s.generation)
	}
	if g, ok := syncedGeneration(s.synced); ok && g != s.generation {
		return false, fmt.Sprintf("last synced generation %d, not %d yet", g, s.generation)
	}
	return true, ""
}

// StatusOf returns the Status of ref, read from u (whole or as Trim keeps
// it; nil when the producer is not there), for the Secret named secret:
// Known when u is there and writes that Secret; Ready when its Ready
// condition is True and, where it reports them, its Ready condition's
// observedGeneration, its status.observedGeneration and (an ExternalSecret)
// the generation of its status.syncedResourceVersion are
// metadata.generation (see syncedGeneration).
func StatusOf(ref Ref, secret string, u *unstructured.Unstructured) Status {
	k, ok := kindOf(ref.GroupKind)
	if !ok || u == nil {
		return Status{}
	}
	s := read(u, k)
	if s.target != secret {
		return Status{}
	}
	ready, reason := s.readiness()
	return Status{Known: true, Producer: ref.String(), Ready: ready, Reason: reason}
}

// equal says whether s and o read the same.
func (s state) equal(o state) bool {
	if (s.ready == nil) != (o.ready == nil) || (s.ready != nil && *s.ready != *o.ready) {
		return false
	}
	s.ready, o.ready = nil, nil
	return s == o
}
