package sources

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"nudge.dev/nudge/internal/dialect"
)

func TestChangedPasses(t *testing.T) {
	cm := func(annotations, labels map[string]string, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop", Annotations: annotations, Labels: labels},
			Data: map[string]string{"k": v}}
	}
	tests := map[string]struct {
		old, new *corev1.ConfigMap
		want     bool
	}{
		"a change of content":                {old: cm(nil, nil, "1"), new: cm(nil, nil, "2"), want: true},
		"a change of a label alone":          {old: cm(nil, nil, "1"), new: cm(nil, map[string]string{"team": "a"}, "1")},
		"a change of another annotation":     {old: cm(nil, nil, "1"), new: cm(map[string]string{"note": "x"}, nil, "1")},
		"the ignore mark set":                {old: cm(nil, nil, "1"), new: cm(map[string]string{dialect.NudgeIgnore: "true"}, nil, "1"), want: true},
		"the match mark set":                 {old: cm(nil, nil, "1"), new: cm(map[string]string{dialect.ReloaderMatch: "true"}, nil, "1"), want: true},
		"the urgent mark set":                {old: cm(nil, nil, "1"), new: cm(map[string]string{dialect.NudgeUrgent: "true"}, nil, "1"), want: true},
		"the urgent mark removed":            {old: cm(map[string]string{dialect.NudgeUrgent: "true"}, nil, "1"), new: cm(nil, nil, "1"), want: true},
		"the urgent mark rewritten the same": {old: cm(map[string]string{dialect.NudgeUrgent: "true"}, nil, "1"), new: cm(map[string]string{dialect.NudgeUrgent: "TRUE"}, nil, "1")},
		"a pause set":                        {old: cm(nil, nil, "1"), new: cm(map[string]string{dialect.NudgePaused: "true"}, nil, "1"), want: true},
		"a pause lifted":                     {old: cm(map[string]string{dialect.NudgePaused: "true"}, nil, "1"), new: cm(map[string]string{dialect.NudgePaused: "false"}, nil, "1"), want: true},
		"a pause removed":                    {old: cm(map[string]string{dialect.NudgePaused: "true"}, nil, "1"), new: cm(nil, nil, "1"), want: true},
		"a pause made malformed":             {old: cm(nil, nil, "1"), new: cm(map[string]string{dialect.NudgePaused: "yes"}, nil, "1"), want: true},
		"a pause rewritten the same":         {old: cm(map[string]string{dialect.NudgePaused: "true"}, nil, "1"), new: cm(map[string]string{dialect.NudgePaused: " True"}, nil, "1")},
		"a pause false set":                  {old: cm(nil, nil, "1"), new: cm(map[string]string{dialect.NudgePaused: "false"}, nil, "1")},
		"a label edit on a paused source":    {old: cm(map[string]string{dialect.NudgePaused: "true"}, nil, "1"), new: cm(map[string]string{dialect.NudgePaused: "true"}, map[string]string{"team": "a"}, "1")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(Changed(dialect.Parser{}).Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new})).To(Equal(tc.want))
		})
	}
}

// TestChangedReadsPauseForFree: reading a source's pause in the predicate
// costs no allocation for a source that has none, or a well-formed one, so
// the pause adds nothing to the events of sources that are not paused.
func TestChangedReadsPauseForFree(t *testing.T) {
	for name, annotations := range map[string]map[string]string{
		"none":   nil,
		"others": {"note": "x"},
		"paused": {dialect.NudgePaused: "true"},
		"lifted": {dialect.NudgePaused: "false"},
	} {
		if n := testing.AllocsPerRun(100, func() { _ = pauseOf(annotations) }); n != 0 {
			t.Errorf("%s: reading the pause allocated %.0f times, want none", name, n)
		}
	}
}
