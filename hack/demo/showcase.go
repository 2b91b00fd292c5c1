package main

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"nudge.dev/nudge/internal/testbed"
)

const (
	// rolloutTimeout bounds the wait for the whole rollout after the
	// ConfigMap change, on a loaded machine.
	rolloutTimeout = 90 * time.Second
	// quietPeriod is how long the demo watches after the label-only change
	// to the Secret before it says that nothing rolled.
	quietPeriod = 3 * time.Second
)

// showcase creates the shop, changes its ConfigMap and narrates the rollout
// nudge makes of it, then changes only a label of its Secret and shows that
// nothing rolls. It returns an error when an expected step does not happen
// in time, or when the label-only change rolls the Deployment.
func showcase(ctx context.Context, p *printer, plane *testbed.Plane, n *nudgeProcess) error {
	cs, err := kubernetes.NewForConfig(plane.Config())
	if err != nil {
		return fmt.Errorf("creating API client: %w", err)
	}
	if _, err := createShop(ctx, p, plane.CreateNamespace, cs); err != nil {
		return err
	}
	t, err := startTimeline(ctx, p, cs, n)
	if err != nil {
		return err
	}
	defer t.stop()
	if err := changeConfigMap(ctx, p, cs, t); err != nil {
		return err
	}
	return relabelSecret(ctx, p, cs, t)
}

// changeConfigMap changes one key of the ConfigMap and narrates the
// rollout until it is over, then prints how long each step took.
func changeConfigMap(ctx context.Context, p *printer, cs kubernetes.Interface, t *timeline) error {
	cm, err := cs.CoreV1().ConfigMaps(shopNamespace).Get(ctx, configMap, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading ConfigMap %s: %w", configMap, err)
	}
	before := cm.Data["LOG_LEVEL"]
	cm.Data["LOG_LEVEL"] = "debug"
	p.step("Changing ConfigMap %s/%s (LOG_LEVEL: %s → debug); what a user watching namespace %s sees, timed from the update:",
		shopNamespace, configMap, before, shopNamespace)
	t.begin(time.Now())
	if _, err := cs.CoreV1().ConfigMaps(shopNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating ConfigMap %s: %w", configMap, err)
	}
	p.event(0, "configmap/"+configMap, fmt.Sprintf("updated (the API answered in %v)", t.since().Round(time.Millisecond)))
	err = t.follow(ctx, rolloutTimeout, "the rollout of Deployment "+deployment, func(ph *phase) bool {
		return ph.trigger != 0 && ph.event != 0 && ph.logged != 0 && ph.complete != 0 &&
			ph.newRunning >= replicas && ph.oldGone >= ph.oldAtStart
	})
	if err != nil {
		return err
	}
	ph := t.phase
	p.step("One ConfigMap change, one rollout. From the ConfigMap update:")
	total := fmt.Sprintf("the last of %d old pods gone", ph.oldAtStart)
	rows := []milestone{
		{"nudge wrote the trigger to the pod template", ph.trigger},
		{"nudge's Rolled Event", ph.event},
		{"the new ReplicaSet", ph.rsNew},
		{fmt.Sprintf("%d new pods Running", ph.newRunning), ph.lastRunning},
		{total, ph.lastGone},
	}
	slices.SortStableFunc(rows, func(a, b milestone) int { return cmp.Compare(a.at, b.at) })
	for _, r := range rows {
		mark := ""
		if r.what == total {
			mark = "   ← change to rollout"
		}
		p.detailf("%-46s %7.3fs%s", r.what, r.at.Seconds(), mark)
	}
	return nil
}

// milestone is a step of the rollout and when it was seen, from the change.
type milestone struct {
	what string
	at   time.Duration
}

// relabelSecret changes only a label of the Secret, watches for
// quietPeriod, and checks that the Deployment did not roll: as many
// ReplicaSets, the same revision, no trigger written.
func relabelSecret(ctx context.Context, p *printer, cs kubernetes.Interface, t *timeline) error {
	p.step("Changing only a label of Secret %s/%s (its data stays the same): nudge must roll nothing", shopNamespace, secret)
	before, err := rolloutState(ctx, cs)
	if err != nil {
		return err
	}
	t.begin(time.Now())
	patch := []byte(`{"metadata":{"labels":{"tier":"backend"}}}`)
	if _, err := cs.CoreV1().Secrets(shopNamespace).Patch(ctx, secret, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("labelling Secret %s: %w", secret, err)
	}
	p.event(0, "secret/"+secret, "labelled tier=backend (data unchanged)")
	if err := t.follow(ctx, quietPeriod, "the end of the quiet period", nil); err != nil {
		return err
	}
	after, err := rolloutState(ctx, cs)
	if err != nil {
		return err
	}
	if after != before || t.phase.trigger != 0 {
		return fmt.Errorf("a label-only change to Secret %s rolled Deployment %s: %v before, %v after",
			secret, deployment, before, after)
	}
	p.detailf("No rollout: %v after the change, still %v.", quietPeriod, after)
	return nil
}

// rollout is what shows whether a Deployment rolled.
type rollout struct {
	replicaSets int
	revision    string // of the newest ReplicaSet
}

// String returns "2 ReplicaSets, revision 2".
func (r rollout) String() string {
	return fmt.Sprintf("%d ReplicaSets, revision %s", r.replicaSets, r.revision)
}

// rolloutState returns the number of ReplicaSets in the shop and the
// Deployment's revision.
func rolloutState(ctx context.Context, cs kubernetes.Interface) (rollout, error) {
	rss, err := cs.AppsV1().ReplicaSets(shopNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return rollout{}, fmt.Errorf("listing ReplicaSets: %w", err)
	}
	d, err := cs.AppsV1().Deployments(shopNamespace).Get(ctx, deployment, metav1.GetOptions{})
	if err != nil {
		return rollout{}, fmt.Errorf("reading Deployment %s: %w", deployment, err)
	}
	return rollout{replicaSets: len(rss.Items), revision: d.Annotations[revisionAnnotation]}, nil
}

// printTryIt prints the kubectl commands that show what the demo showed.
func printTryIt(p *printer, plane *testbed.Plane) {
	kubectl := filepath.Join(plane.BinDir(), "kubectl") + " --kubeconfig " + plane.Kubeconfig() + " -n " + shopNamespace
	p.step("See it with kubectl:")
	p.detailf("%s get rs,pods", kubectl)
	p.detailf("%s events --for deployment/%s", kubectl, deployment)
	p.detailf("%s get deployment %s -o jsonpath='{.metadata.annotations}'", kubectl, deployment)
	p.detailf("%s patch configmap %s -p '{\"data\":{\"LOG_LEVEL\":\"warn\"}}'   # rolls again", kubectl, configMap)
}
