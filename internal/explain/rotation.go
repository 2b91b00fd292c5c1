package explain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nudge.dev/nudge/internal/refs"
)

// Rotation says which pods of a workload still run content from before a
// source's current version: pods that started before the source's content
// last changed, of the sources the pod spec reads in a way the kubelet never
// refreshes (refs.Use.Frozen: env, envFrom, a subPath mount).
type Rotation struct {
	// Pods is how many pods of the workload run (listed by its selector,
	// without those that finished or are being deleted).
	Pods int `json:"pods"`
	// Sources has one entry per source read frozen, sorted by kind,
	// namespace and name.
	Sources []Stale `json:"sources"`
	// Unread says why the pods were not looked at: the user may not list
	// them, or the kind has no selector; Sources is then empty.
	Unread string `json:"unread,omitempty"`
	// denied: Unread is the user's permissions.
	denied bool
}

// Stale is one source a workload reads frozen, and its pods that started
// before the source's content last changed.
type Stale struct {
	// Source is "Kind namespace/name".
	Source string `json:"source"`
	// ReadAs lists the frozen ways it is read: env, envFrom, subPath.
	ReadAs []string `json:"readAs"`
	// Changed is when the source's content last changed (see ChangedAt),
	// in whole seconds as the API records it; nil when the source does not
	// exist or could not be read (Reason says why).
	Changed *time.Time `json:"changed,omitempty"`
	// Evidence says where Changed comes from: "managedFields:<manager>"
	// or "creation".
	Evidence string `json:"evidence,omitempty"`
	// Before names the pods that started before Changed, sorted; Count is
	// how many.
	Before []string `json:"before"`
	Count  int      `json:"count"`
	// Message says the same in words.
	Message string `json:"message"`
}

// Lagging is a workload whose pods still run content from before a source's
// current version more than --rollout-timeout after it changed
// (kubectl nudge status).
type Lagging struct {
	Workload string `json:"workload"`
	// Source, Changed, Before, Count and Message are the Stale's.
	Source  string    `json:"source"`
	Changed time.Time `json:"changed"`
	Before  []string  `json:"before"`
	Count   int       `json:"count"`
	// Pods is how many pods of the workload run.
	Pods    int    `json:"pods"`
	Message string `json:"message"`
}

// maxNamed is how many pod names a message lists before "and N more".
const maxNamed = 3

// contentFields are the fields of a ConfigMap's or Secret's managedFields
// that hold its content.
var contentFields = []string{`"f:data"`, `"f:stringData"`, `"f:binaryData"`}

// ChangedAt returns when the content of a ConfigMap or Secret last changed,
// and the evidence: the latest time of its managedFields entries that own
// data, stringData or binaryData ("managedFields:<manager>"). The API server
// sets an entry's time when its manager adds, changes or removes a field it
// owns, so the time is that of the last write of the content, or later when
// the same manager changed another of its fields too (which counts a pod as
// older, never as newer). Without such an entry (no content, or managedFields
// stripped) it is the creation time ("creation").
func ChangedAt(meta metav1.Object) (time.Time, string) {
	var at time.Time
	evidence := "creation"
	for _, m := range meta.GetManagedFields() {
		if m.Time == nil || m.FieldsV1 == nil || !ownsContent(m.FieldsV1.GetRawBytes()) {
			continue
		}
		if t := m.Time.Time; t.After(at) {
			at, evidence = t, "managedFields:"+m.Manager
		}
	}
	if at.IsZero() {
		at = meta.GetCreationTimestamp().Time
	}
	return at.UTC(), evidence
}

func ownsContent(fields []byte) bool {
	s := string(fields)
	return slices.ContainsFunc(contentFields, func(f string) bool { return strings.Contains(s, f) })
}

// Started returns when the pod's containers last read their env and subPath
// mounts: the earliest startedAt of its running containers; the pod's
// status.startTime when it reports no container statuses. It returns false
// for a pod that runs nothing: finished (Succeeded or Failed), being
// deleted, not started, or whose containers are all waiting (a container
// that starts again reads the content as it is then).
func Started(pod *corev1.Pod) (time.Time, bool) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return time.Time{}, false
	}
	statuses := slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses)
	if len(statuses) == 0 {
		if pod.Status.StartTime == nil {
			return time.Time{}, false
		}
		return pod.Status.StartTime.Time, true
	}
	var at time.Time
	for _, c := range statuses {
		if r := c.State.Running; r != nil && (at.IsZero() || r.StartedAt.Time.Before(at)) {
			at = r.StartedAt.Time
		}
	}
	return at, !at.IsZero()
}

// Running returns the pods that run something (see Started).
func Running(pods []corev1.Pod) []corev1.Pod {
	return slices.DeleteFunc(slices.Clone(pods), func(p corev1.Pod) bool {
		_, ok := Started(&p)
		return !ok
	})
}

// Before returns the names, sorted, of the pods that started strictly before
// changed (see Started); a pod that runs nothing is not among them.
func Before(pods []corev1.Pod, changed time.Time) []string {
	var out []string
	for i := range pods {
		if t, ok := Started(&pods[i]); ok && t.Before(changed) {
			out = append(out, pods[i].Name)
		}
	}
	slices.Sort(out)
	return out
}

// staleMessage says which of total pods started before src changed at:
// "2 of 3 pods started before ConfigMap shop/app changed at T: web-0,
// web-1", at most maxNamed names then "and N more".
func staleMessage(src string, changed time.Time, before []string, total int) string {
	at := changed.UTC().Format(time.RFC3339)
	if total == 0 {
		return fmt.Sprintf("no pod runs: none started before %s changed at %s", src, at)
	}
	if len(before) == 0 {
		return fmt.Sprintf("none of %d pods started before %s changed at %s: they run its current content", total, src, at)
	}
	names := strings.Join(before[:min(len(before), maxNamed)], ", ")
	if len(before) > maxNamed {
		names += fmt.Sprintf(" and %d more", len(before)-maxNamed)
	}
	noun := "pods"
	if total == 1 {
		noun = "pod"
	}
	return fmt.Sprintf("%d of %d %s started before %s changed at %s: %s", len(before), total, noun, src, at, names)
}

// frozenSources returns the ConfigMaps and Secrets uses reads frozen, sorted,
// with how each is read ("subPath" for a subPath mount).
func frozenSources(uses []refs.Use) ([]refs.Source, map[refs.Source][]string) {
	how := map[refs.Source][]string{}
	var out []refs.Source
	for _, u := range uses {
		if !u.Frozen() || u.Kind == refs.SecretProviderClass {
			continue
		}
		if _, seen := how[u.Source]; !seen {
			out = append(out, u.Source)
		}
		via := string(u.Via)
		if u.SubPath {
			via = "subPath"
		}
		how[u.Source] = append(how[u.Source], via)
	}
	for s := range how {
		slices.Sort(how[s])
		how[s] = slices.Compact(how[s])
	}
	slices.SortFunc(out, refs.Source.Compare)
	return out, how
}
