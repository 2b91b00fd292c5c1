package eviction

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodsOf returns the pods of namespace that selector selects and owner
// (a UID) controls, as the plan reads them, by one LIST of the API server,
// never a cache: nudge keeps no pods, and reads those of an owner only
// while it restarts them. A nil selector lists the namespace's pods, for an
// owner (a custom resource) that has none. It returns the API server's
// error.
func PodsOf(ctx context.Context, c client.Reader, namespace string, selector labels.Selector, owner types.UID) ([]Pod, error) {
	var list corev1.PodList
	opts := []client.ListOption{client.InNamespace(namespace)}
	if selector != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: selector})
	}
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", namespace, err)
	}
	var out []Pod
	for i := range list.Items {
		p := &list.Items[i]
		if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != owner {
			continue
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue // done: its owner replaces it, or not, whatever nudge does
		}
		out = append(out, Pod{Name: p.Name, UID: p.UID, Created: p.CreationTimestamp.Time, Ready: ready(p), Deleting: p.DeletionTimestamp != nil})
	}
	return out, nil
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Blocked is EvictPod's error when a PodDisruptionBudget refused the
// eviction (the API server's 429): the pod stays, and the eviction is
// tried again later, with backoff.
type Blocked struct {
	// Pod is the pod not evicted.
	Pod string
	// Budget names the PodDisruptionBudget, "" when the API server did
	// not say which.
	Budget string
	// Err is the API server's answer.
	Err error
}

// Error says which budget refused which pod.
func (b *Blocked) Error() string {
	if b.Budget == "" {
		return fmt.Sprintf("evicting pod %s: refused by a PodDisruptionBudget: %v", b.Pod, b.Err)
	}
	return fmt.Sprintf("evicting pod %s: refused by the PodDisruptionBudget %s: %v", b.Pod, b.Budget, b.Err)
}

// Unwrap returns the API server's answer.
func (b *Blocked) Unwrap() error { return b.Err }

// budgetNamed finds the budget's name in the cause the API server gives a
// refused eviction ("The disruption budget web needs 2 healthy pods and
// has 2 currently", or "… does not allow evicting pods currently", from
// kubernetes/pkg/registry/core/pod/storage/eviction.go).
var budgetNamed = regexp.MustCompile(`^The disruption budget ([a-z0-9.-]+) `)

// EvictPod asks the API server to evict the pod namespace/name through the
// pods/eviction subresource (policy/v1 Eviction), uid-guarded so that a pod
// re-created with the same name (a StatefulSet's) is not evicted in its
// place. A pod already gone counts as evicted (nil). A refusal by a
// PodDisruptionBudget returns a *Blocked; any other failure the API
// server's error.
func EvictPod(ctx context.Context, c client.Client, namespace, name string, uid types.UID) error {
	// Both as unstructured objects, sent and answered in JSON: a client that
	// speaks protobuf to the API server cannot read the Status it answers
	// an eviction with into an Eviction ("unexpected EOF").
	pod := &unstructured.Unstructured{}
	pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	pod.SetNamespace(namespace)
	pod.SetName(name)
	ev := &unstructured.Unstructured{Object: map[string]any{
		"metadata":      map[string]any{"namespace": namespace, "name": name},
		"deleteOptions": map[string]any{"preconditions": map[string]any{"uid": string(uid)}},
	}}
	if uid == "" {
		delete(ev.Object, "deleteOptions")
	}
	ev.SetGroupVersionKind(policyv1.SchemeGroupVersion.WithKind("Eviction"))
	err := c.SubResource("eviction").Create(ctx, pod, ev)
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err) && uid != "":
		return nil // another pod by that name: the one asked for is gone
	case apierrors.IsTooManyRequests(err):
		b := &Blocked{Pod: name, Err: err}
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Details != nil {
			for _, cause := range status.Status().Details.Causes {
				if m := budgetNamed.FindStringSubmatch(cause.Message); cause.Type == policyv1.DisruptionBudgetCause && m != nil {
					b.Budget = m[1]
					break
				}
			}
		}
		return b
	}
	return fmt.Errorf("evicting pod %s/%s: %w", namespace, name, err)
}
