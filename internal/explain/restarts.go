package explain

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/eviction"
)

// Restart is a workload whose pods nudge restarts through the Eviction API
// (eviction.ProgressAnnotation): since its change, the last eviction, the
// PodDisruptionBudget that refused the last one, and whether it halted.
type Restart struct {
	Workload string    `json:"workload"`
	Since    time.Time `json:"since"`
	Evicted  time.Time `json:"evicted,omitzero"`
	// Blocked names the PodDisruptionBudget that refused the last
	// eviction; "" when none did.
	Blocked string `json:"blocked,omitempty"`
	// Halted says a replacement was not Ready within --rollout-timeout:
	// nothing more is evicted until the next change.
	Halted bool `json:"halted,omitempty"`
	// Malformed is the annotation's value when it does not read.
	Malformed string `json:"malformed,omitempty"`
}

// restartOf returns the restart of obj, workload name, under way; ok is
// false when none is.
func restartOf(name string, obj client.Object) (r Restart, ok bool) {
	v, found := obj.GetAnnotations()[eviction.ProgressAnnotation]
	if !found {
		return Restart{}, false
	}
	p, err := eviction.ParseProgress(v)
	if err != nil {
		return Restart{Workload: name, Malformed: v}, true
	}
	return Restart{Workload: name, Since: p.Since, Evicted: p.Evicted, Blocked: p.Blocked, Halted: p.Halted}, true
}

// restartRows returns the rows of the status's restarts table.
func restartRows(rs []Restart) [][]string {
	var rows [][]string
	for _, r := range rs {
		state, evicted := "evicting", "-"
		switch {
		case r.Malformed != "":
			rows = append(rows, []string{r.Workload, "-", "-", "malformed: " + r.Malformed})
			continue
		case r.Halted:
			state = "halted: a replacement not Ready in time"
		case r.Blocked != "":
			state = "blocked by PodDisruptionBudget " + r.Blocked
		}
		if !r.Evicted.IsZero() {
			evicted = r.Evicted.Format(time.RFC3339)
		}
		rows = append(rows, []string{r.Workload, r.Since.Format(time.RFC3339), evicted, state})
	}
	return rows
}
