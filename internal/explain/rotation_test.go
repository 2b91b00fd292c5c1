package explain

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nudge.dev/nudge/internal/refs"
)

var (
	t0      = time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	before  = t0.Add(-time.Hour)
	after   = t0.Add(time.Minute)
	running = func(at time.Time) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}
	}
)

func pod(name string, mutate func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	mutate(&p)
	return p
}

func startedAt(at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{running(at)} }
}

func TestBefore(t *testing.T) {
	tests := map[string]struct {
		pods []corev1.Pod
		want []string
	}{
		"pods whose containers started before the change are counted, sorted": {
			pods: []corev1.Pod{pod("web-1", startedAt(before)), pod("web-2", startedAt(after)), pod("web-0", startedAt(before))},
			want: []string{"web-0", "web-1"},
		},
		"a container started again after the change read the content again": {
			pods: []corev1.Pod{pod("web-0", func(p *corev1.Pod) {
				p.Status.StartTime = &metav1.Time{Time: before}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{running(after)}
			})},
		},
		"the earliest running container counts": {
			pods: []corev1.Pod{pod("web-0", func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{running(after), running(before)}
			})},
			want: []string{"web-0"},
		},
		"without container statuses the pod's startTime counts": {
			pods: []corev1.Pod{
				pod("old", func(p *corev1.Pod) { p.Status.StartTime = &metav1.Time{Time: before} }),
				pod("new", func(p *corev1.Pod) { p.Status.StartTime = &metav1.Time{Time: after} }),
				pod("unstarted", func(*corev1.Pod) {}),
			},
			want: []string{"old"},
		},
		"a pod started at the very time of the change is not counted": {
			pods: []corev1.Pod{pod("web-0", startedAt(t0))},
		},
		"finished, deleting and waiting pods run nothing": {
			pods: []corev1.Pod{
				pod("done", func(p *corev1.Pod) { startedAt(before)(p); p.Status.Phase = corev1.PodSucceeded }),
				pod("failed", func(p *corev1.Pod) { startedAt(before)(p); p.Status.Phase = corev1.PodFailed }),
				pod("going", func(p *corev1.Pod) { startedAt(before)(p); p.DeletionTimestamp = &metav1.Time{Time: after} }),
				pod("waiting", func(p *corev1.Pod) {
					p.Status.StartTime = &metav1.Time{Time: before}
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
				}),
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Before(tc.pods, t0)).To(Equal(tc.want))
		})
	}
}

func TestChangedAt(t *testing.T) {
	entry := func(manager string, at time.Time, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Time: &metav1.Time{Time: at}, FieldsV1: metav1.NewFieldsV1(fields)}
	}
	created := t0.Add(-24 * time.Hour)
	tests := map[string]struct {
		fields       []metav1.ManagedFieldsEntry
		want         time.Time
		wantEvidence string
	}{
		"the latest entry owning data is the change": {
			fields: []metav1.ManagedFieldsEntry{
				entry("helm", before, `{"f:data":{"f:a":{}}}`),
				entry("kubectl-edit", t0, `{"f:data":{"f:b":{}}}`),
			},
			want: t0, wantEvidence: "managedFields:kubectl-edit",
		},
		"an entry owning only labels is not a change of content": {
			fields: []metav1.ManagedFieldsEntry{
				entry("helm", before, `{"f:data":{"f:a":{}}}`),
				entry("labeller", after, `{"f:metadata":{"f:labels":{"f:team":{}}}}`),
			},
			want: before, wantEvidence: "managedFields:helm",
		},
		"stringData and binaryData are content too": {
			fields: []metav1.ManagedFieldsEntry{
				entry("a", before, `{"f:stringData":{"f:a":{}}}`),
				entry("b", t0, `{"f:binaryData":{"f:b":{}}}`),
			},
			want: t0, wantEvidence: "managedFields:b",
		},
		"without managedFields the creation is the change": {want: created, wantEvidence: "creation"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created), ManagedFields: tc.fields}}
			at, evidence := ChangedAt(cm)
			g.Expect(at).To(Equal(tc.want))
			g.Expect(evidence).To(Equal(tc.wantEvidence))
		})
	}
}

func TestStaleMessage(t *testing.T) {
	tests := map[string]struct {
		before []string
		total  int
		want   string
	}{
		"some pods": {[]string{"web-0", "web-1"}, 3,
			"2 of 3 pods started before ConfigMap shop/app changed at 2026-11-29T07:00:00Z: web-0, web-1"},
		"more pods than are named": {[]string{"a", "b", "c", "d", "e"}, 5,
			"5 of 5 pods started before ConfigMap shop/app changed at 2026-11-29T07:00:00Z: a, b, c and 2 more"},
		"one pod": {[]string{"web-0"}, 1,
			"1 of 1 pod started before ConfigMap shop/app changed at 2026-11-29T07:00:00Z: web-0"},
		"none": {nil, 3,
			"none of 3 pods started before ConfigMap shop/app changed at 2026-11-29T07:00:00Z: they run its current content"},
		"no pod runs": {nil, 0,
			"no pod runs: none started before ConfigMap shop/app changed at 2026-11-29T07:00:00Z"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(staleMessage("ConfigMap shop/app", t0, tc.before, tc.total)).To(Equal(tc.want))
		})
	}
}

func TestFrozenSources(t *testing.T) {
	cm := refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}
	db := refs.Source{Kind: refs.Secret, Namespace: "shop", Name: "db"}
	spc := refs.Source{Kind: refs.SecretProviderClass, Namespace: "shop", Name: "vault"}
	use := func(s refs.Source, via refs.Via, subPath bool) refs.Use {
		return refs.Use{Reference: refs.Reference{Source: s}, Via: via, SubPath: subPath}
	}
	tests := map[string]struct {
		uses    []refs.Use
		want    []refs.Source
		wantHow map[refs.Source][]string
	}{
		"env, envFrom and subPath uses are frozen, each way said once": {
			uses: []refs.Use{use(db, refs.Volume, true), use(cm, refs.EnvFrom, false), use(cm, refs.Env, false), use(cm, refs.Env, false)},
			want: []refs.Source{cm, db}, wantHow: map[refs.Source][]string{cm: {"env", "envFrom"}, db: {"subPath"}},
		},
		"plain volumes, projections and csi volumes are refreshed": {
			uses:    []refs.Use{use(cm, refs.Volume, false), use(db, refs.Projected, false), use(spc, refs.CSI, false)},
			wantHow: map[refs.Source][]string{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, how := frozenSources(tc.uses)
			g.Expect(got).To(Equal(tc.want))
			g.Expect(how).To(Equal(tc.wantHow))
		})
	}
}
