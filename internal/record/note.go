package record

import "unicode/utf8"

// noteLimit is the API server's limit on an Event's note, in bytes: it
// refuses the whole Event when the note is longer (events.k8s.io/v1, "Maximal
// length of the note is 1kB";
// https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/event-v1/).
const noteLimit = 1024

// noteCut ends a note Note had to cut.
const noteCut = " …"

// Note returns note unchanged when the API server accepts it in an
// Event, else cut at a rune boundary to noteLimit bytes, noteCut included. A
// Warning about a 200 KiB annotation, or a rollout for 500 sources, is then
// recorded instead of refused.
func Note(note string) string {
	if len(note) <= noteLimit {
		return note
	}
	cut := noteLimit - len(noteCut)
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + noteCut
}
