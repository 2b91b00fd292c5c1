package results

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// A random scenario's target is the controller's doubled, without-update
// and missed of every run, all 0; the floor's are said beside them, and
// each run's figures are in the report.
func TestRandomTargets(t *testing.T) {
	g := NewWithT(t)
	res := &Run{Controller: "nudge", Random: &Random{Rate: 20, Sources: 100, Seconds: 60, Seed: 1, Runs: []RandomRun{
		{Seed: 1, Controller: RandomSide{Updates: 1200, Close: 218, Rollouts: 1101}, Floor: RandomSide{Updates: 1200, Close: 218, Rollouts: 1200}},
		{Seed: 2, Controller: RandomSide{Updates: 1200, Close: 220, Rollouts: 1103, Doubled: 2, WithoutUpdate: 2}, Floor: RandomSide{Updates: 1200, Missed: 1}},
	}}, RandomRestart: &Random{Rate: 5, Sources: 100, Seconds: 60, RestartAtSeconds: 10, Runs: []RandomRun{
		{Seed: 1, Floor: RandomSide{Missed: 4}},
	}}}
	met := map[string]string{}
	for _, tg := range Targets(res) {
		if tg.Met == nil {
			continue
		}
		met[tg.Name] = tg.Value + map[bool]string{true: " met", false: " not met"}[*tg.Met]
	}
	g.Expect(met).To(HaveKeyWithValue("random stream, 20 updates/s over 100 ConfigMaps for 60 s, 2 runs: doubled / without update / missed",
		"2 / 2 / 0 (floor 0 / 0 / 1) not met"))
	g.Expect(met).To(HaveKeyWithValue("random stream, 5 updates/s over 100 ConfigMaps for 60 s, kill -9 and restart at 10 s, 1 run: doubled / without update / missed",
		"0 / 0 / 0 (floor 0 / 0 / 4) met"))
	md := Markdown(res)
	for _, want := range []string{
		"| random | 20 updates/s over 100 ConfigMaps for 60 s: run 1 (seed 1): updates (< 1 s after the previous of their ConfigMap) / rollouts | 1200 (218) / 1101 |",
		"| random | run 2: doubled / without update / missed | 2 / 2 / 0 |",
		"| random | run 2, floor: doubled / without update / missed | 0 / 0 / 1 |",
	} {
		g.Expect(strings.Contains(md, want)).To(BeTrue(), "the report lacks\n%s\nin\n%s", want, md)
	}
}
