package model_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/test/model"
)

// world performs a sequence's steps on the API server, in one namespace,
// and counts the rollouts of its Deployments as users see them.
type world struct {
	t     *testing.T
	ctx   context.Context
	ns    string
	revs  *revisions
	touch int
	// pending holds the digests the last diff saw for the first time.
	pending map[string]string
	// fences counts the fences.
	fences int
	// clock is nudge's clock (see tick); nil when the sequence has none.
	clock *clocktesting.FakePassiveClock
	ticks int
	// pokes counts the pokes (see poke).
	pokes int
}

// fenceName names the fence's ConfigMap, Secret and Deployment (see fence).
const fenceName = "fence"

// ballastName names the ConfigMap that ballastCount Deployments read (see
// ballast).
const (
	ballastName  = "ballast"
	ballastCount = 30
)

// newWorld returns the world of namespace ns with its fence, once nudge
// (running) has recorded the fence Deployment's baseline.
func newWorld(t *testing.T, ns string) (*world, error) {
	w := &world{t: t, ctx: t.Context(), ns: ns, revs: watchRevisions(t, ns)}
	data := map[string]string{"n": "0"}
	uses := map[model.SourceID]model.Use{{Kind: model.ConfigMap, Name: fenceName}: model.Whole, {Kind: model.Secret, Name: fenceName}: model.Whole}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fenceName, Annotations: map[string]string{"nudge.dev/auto": "true"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fenceName}},
			Template: template(fenceName, uses, 0),
		},
	}
	objs := []client.Object{w.source(model.SourceID{Kind: model.ConfigMap, Name: fenceName}, data),
		w.source(model.SourceID{Kind: model.Secret, Name: fenceName}, data), d,
		w.source(model.SourceID{Kind: model.ConfigMap, Name: ballastName}, data)}
	ballastUses := map[model.SourceID]model.Use{{Kind: model.ConfigMap, Name: ballastName}: model.Whole}
	for i := range ballastCount {
		name := fmt.Sprintf("%s-%d", ballastName, i)
		objs = append(objs, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"nudge.dev/auto": "true"}},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: template(name, ballastUses, 0),
			},
		})
	}
	for _, o := range objs {
		if err := suite.K8s.Create(w.ctx, o); err != nil {
			return nil, err
		}
	}
	// Both sources in the baseline: one nudge's cache had not seen yet would
	// be recorded later, without a rollout, perhaps with the first fence's
	// content.
	return w, w.until(func() bool {
		err := suite.K8s.Get(w.ctx, client.ObjectKeyFromObject(d), d)
		applied := d.Annotations[appliedAnnotation]
		return err == nil && strings.Contains(applied, " ConfigMap/"+fenceName+"=") && strings.Contains(applied, " Secret/"+fenceName+"=")
	}, "nudge to record the fence Deployment's baseline")
}

// fence returns once nudge's ConfigMap and Secret caches hold every change
// made before it was called. For the fence ConfigMap, then the fence
// Secret, it flips the source's nudge.dev/ignore mark and waits for nudge to
// record the fence Deployment's state without the source, or with it again
// (rule 3: a baseline, no rollout, no Event). A watch delivers one kind's
// changes in order, so nudge has then seen every earlier change of that
// kind. Without it, a step nudge shows no sign of having seen (a change held
// by a missing source) could reach nudge after the next step (an opt-in,
// recorded as first sight with the content before it), which the model does
// not describe.
func (w *world) fence() error {
	w.fences++
	ignored := w.fences%2 == 1
	for _, kind := range []model.Kind{model.ConfigMap, model.Secret} {
		id := model.SourceID{Kind: kind, Name: fenceName}
		err := w.update(w.source(id, nil), func(o client.Object) {
			o.SetAnnotations(map[string]string{"nudge.dev/ignore": fmt.Sprint(ignored)})
		})
		if err != nil {
			return err
		}
		d := w.deployment(fenceName)
		entry := " " + string(kind) + "/" + fenceName + "="
		if err := w.until(func() bool {
			err := suite.K8s.Get(w.ctx, client.ObjectKeyFromObject(d), d)
			return err == nil && strings.Contains(d.Annotations[appliedAnnotation], entry) != ignored
		}, fmt.Sprintf("nudge to record the fence Deployment's state with %s ignored=%t", id, ignored)); err != nil {
			return err
		}
	}
	return nil
}

// until polls cond every 20 ms for up to a minute.
func (w *world) until(cond func() bool, what string) error {
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("waited a minute for %s", what)
		}
		if err := w.ctx.Err(); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond) // the polling interval of a wait for a condition
	}
	return nil
}

// do performs step s; m is the model before the step (for what the
// repository's manifests hold).
func (w *world) do(m *model.Model, s model.Step) error {
	switch s.Op {
	case model.CreateSource:
		return suite.K8s.Create(w.ctx, w.source(s.Source, s.Data))
	case model.ChangeData:
		return w.update(w.source(s.Source, nil), func(o client.Object) { setData(o, s.Data) })
	case model.ChangeLabels:
		w.touch++
		return w.update(w.source(s.Source, nil), func(o client.Object) {
			o.SetLabels(map[string]string{"touched": fmt.Sprint(w.touch)})
		})
	case model.DeleteSource:
		return suite.K8s.Delete(w.ctx, w.source(s.Source, nil))
	case model.CreateWorkload:
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: s.Workload, Annotations: withPace(annotations(s.Opt), s.Pace)},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": s.Workload}},
				Template: template(s.Workload, s.Uses, s.Image),
			},
		}
		if s.Then == nil {
			return suite.K8s.Create(w.ctx, d)
		}
		if err := w.ballast(); err != nil {
			return err
		}
		if err := suite.K8s.Create(w.ctx, d); err != nil {
			return err
		}
		return w.do(m, *s.Then)
	case model.SetOpt:
		patch := map[string]any{}
		for _, k := range dialectKeys {
			patch[k] = nil
		}
		for k, v := range annotations(s.Opt) {
			patch[k] = v
		}
		return suite.K8s.Patch(w.ctx, w.deployment(s.Workload), mergePatch(patch))
	case model.Undo:
		prev, ok := w.revs.previous(s.Workload)
		if !ok {
			return fmt.Errorf("no previous revision of %s seen", s.Workload)
		}
		return w.update(w.deployment(s.Workload), func(o client.Object) {
			d := o.(*appsv1.Deployment)
			d.Spec.Template = prev.template
			d.Annotations = maps.Clone(prev.annotations)
		})
	case model.GitOps:
		mw := m.Workloads[s.Workload]
		return w.update(w.deployment(s.Workload), func(o client.Object) {
			d := o.(*appsv1.Deployment)
			d.Annotations, d.Labels = withPace(annotations(mw.Opt), mw.Pace), nil
			d.Spec.Template = template(s.Workload, mw.Uses, mw.GitImage)
		})
	case model.GitOpsKeepingKeys:
		return w.update(w.deployment(s.Workload), func(o client.Object) {
			o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image = image(s.Image)
		})
	case model.SetBudget, model.SetWindow:
		patch := map[string]any{budgetAnnotation: nil, windowAnnotation: nil}
		for k, v := range withPace(nil, s.Pace) {
			patch[k] = v
		}
		return suite.K8s.Patch(w.ctx, w.deployment(s.Workload), mergePatch(patch))
	case model.MarkUrgent:
		err := w.update(w.source(s.Source, nil), func(o client.Object) {
			a := o.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			if delete(a, urgentAnnotation); s.Urgent {
				a[urgentAnnotation] = "true"
			}
			o.SetAnnotations(a)
		})
		// A change of the urgent mark alone reconciles the source's
		// workloads (sources.Changed): no poke.
		return err
	case model.Advance:
		return w.pokeAll(m)
	}
	return nil
}

// ballast changes the ConfigMap the ballast Deployments read, so that
// nudge, with one worker, has their rollouts (a write each) to make before
// its first reconcile of a Deployment created just after: the source's
// step made at once after that creation then mostly reaches nudge's cache
// before its first sight of the Deployment, the order in which rule 3's
// exception matters.
func (w *world) ballast() error {
	w.touch++
	data := map[string]string{"n": fmt.Sprint(w.touch)}
	return w.update(w.source(model.SourceID{Kind: model.ConfigMap, Name: ballastName}, nil), func(o client.Object) { setData(o, data) })
}

// pokeAll pokes every workload of m.
func (w *world) pokeAll(m *model.Model) error {
	for _, name := range slices.Sorted(maps.Keys(m.Workloads)) {
		if err := w.poke(name); err != nil {
			return err
		}
	}
	return nil
}

// The annotations of the rules that pace rollouts (docs/reference.md).
const (
	budgetAnnotation = "nudge.dev/max-rollouts-per-hour"
	windowAnnotation = "nudge.dev/maintenance-window"
	urgentAnnotation = "nudge.dev/urgent"
	heldAnnotation   = "nudge.dev/held"
)

// withPace adds p's annotations to a (a new map when nil) and returns it.
func withPace(a map[string]string, p model.Pace) map[string]string {
	if a == nil {
		a = map[string]string{}
	}
	if p.Budget != "" {
		a[budgetAnnotation] = p.Budget
	}
	if p.Window {
		a[windowAnnotation] = model.MaintenanceWindow
	}
	return a
}

// tick sets nudge's clock, before a step, to the model's time now plus a
// microsecond more than before the step before. The model's time is in
// whole seconds and stands still between Advance steps; nudge's must move
// on between two rollouts of a workload, whose trigger is the time
// (nudge.dev/restarted-at, in nanoseconds): at the same time, a second
// rollout would write the template of the first, which rolls nothing.
// What nudge reckons in seconds (the rollout times it keeps, a hold's
// end) and the window's edges are the model's as long as the microseconds
// stay below a second.
func (w *world) tick(now time.Time) error {
	if w.ticks++; w.ticks >= 1_000_000 {
		return fmt.Errorf("%d steps: the clock's microseconds would reach a second", w.ticks)
	}
	w.clock.SetTime(now.Add(time.Duration(w.ticks) * time.Microsecond))
	return nil
}

// poke makes nudge reconcile a Deployment, as a requeue on nudge's clock
// would: a change of an annotation of its metadata that nudge does not
// read.
func (w *world) poke(name string) error {
	w.pokes++
	return suite.K8s.Patch(w.ctx, w.deployment(name), mergePatch(map[string]any{"test.nudge.dev/poke": fmt.Sprint(w.pokes)}))
}

// update reads o, changes it and writes it back, again on a conflict.
func (w *world) update(o client.Object, change func(client.Object)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := suite.K8s.Get(w.ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		change(o)
		return suite.K8s.Update(w.ctx, o)
	})
}

func (w *world) deployment(name string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}}
}

// source returns the ConfigMap or Secret id with data (none when nil).
func (w *world) source(id model.SourceID, data map[string]string) client.Object {
	meta := metav1.ObjectMeta{Namespace: w.ns, Name: id.Name}
	var o client.Object = &corev1.ConfigMap{ObjectMeta: meta}
	if id.Kind == model.Secret {
		o = &corev1.Secret{ObjectMeta: meta}
	}
	if data != nil {
		setData(o, data)
	}
	return o
}

func setData(o client.Object, data map[string]string) {
	switch o := o.(type) {
	case *corev1.ConfigMap:
		o.Data = maps.Clone(data)
	case *corev1.Secret:
		o.Data = map[string][]byte{}
		for k, v := range data {
			o.Data[k] = []byte(v)
		}
	}
}

func mergePatch(annotations map[string]any) client.Patch {
	b := strings.Builder{}
	b.WriteString(`{"metadata":{"annotations":{`)
	for i, k := range slices.Sorted(maps.Keys(annotations)) {
		if i > 0 {
			b.WriteString(",")
		}
		if v, ok := annotations[k].(string); ok {
			fmt.Fprintf(&b, "%q:%q", k, v)
		} else {
			fmt.Fprintf(&b, "%q:null", k)
		}
	}
	b.WriteString(`}}}`)
	return client.RawPatch(types.MergePatchType, []byte(b.String()))
}

// dialectKeys are every annotation annotations writes.
var dialectKeys = []string{
	"nudge.dev/auto", "reloader.stakater.com/auto", "wave.pusher.com/update-on-config-change",
	"nudge.dev/configmaps", "nudge.dev/secrets",
	"configmap.reloader.stakater.com/reload", "secret.reloader.stakater.com/reload",
	"pod-reloader.cs.sap.com/configmaps", "pod-reloader.cs.sap.com/secrets",
	"wave.pusher.com/extra-configmaps", "wave.pusher.com/extra-secrets",
}

// annotations renders o in its dialects: Reloader's
// (https://github.com/stakater/Reloader#how-to-use-reloader), SAP
// pod-reloader's (https://github.com/SAP/pod-reloader), Wave's
// (https://github.com/wave-k8s/wave) or nudge's.
func annotations(o model.Opt) map[string]string {
	a := map[string]string{}
	switch o.AutoDialect {
	case "nudge":
		a["nudge.dev/auto"] = "true"
	case "reloader":
		a["reloader.stakater.com/auto"] = "true"
	case "wave":
		a["wave.pusher.com/update-on-config-change"] = "true"
	}
	lists := map[string]map[model.Kind]string{
		"nudge":        {model.ConfigMap: "nudge.dev/configmaps", model.Secret: "nudge.dev/secrets"},
		"reloader":     {model.ConfigMap: "configmap.reloader.stakater.com/reload", model.Secret: "secret.reloader.stakater.com/reload"},
		"pod-reloader": {model.ConfigMap: "pod-reloader.cs.sap.com/configmaps", model.Secret: "pod-reloader.cs.sap.com/secrets"},
		"wave":         {model.ConfigMap: "wave.pusher.com/extra-configmaps", model.Secret: "wave.pusher.com/extra-secrets"},
	}[o.NamedDialect]
	for _, s := range o.Named {
		key := lists[s.Kind]
		if a[key] != "" {
			a[key] += ","
		}
		a[key] += s.Name
	}
	return a
}

func image(n int) string { return fmt.Sprintf("registry.example/app:%d", n) }

// template returns the pod template of a workload that reads its sources as
// uses says, with the image numbered img.
func template(name string, uses map[model.SourceID]model.Use, img int) corev1.PodTemplateSpec {
	c := corev1.Container{Name: "app", Image: image(img)}
	for _, id := range slices.SortedFunc(maps.Keys(uses), func(a, b model.SourceID) int { return strings.Compare(a.String(), b.String()) }) {
		u := uses[id]
		ref := corev1.LocalObjectReference{Name: id.Name}
		optional := ptr.To(u == model.WholeOptional || u == model.KeyOptional)
		switch u {
		case model.Whole, model.WholeOptional:
			env := corev1.EnvFromSource{Prefix: strings.ToUpper(strings.ReplaceAll(id.Name, "-", "_")) + "_"}
			if id.Kind == model.Secret {
				env.SecretRef = &corev1.SecretEnvSource{LocalObjectReference: ref, Optional: optional}
			} else {
				env.ConfigMapRef = &corev1.ConfigMapEnvSource{LocalObjectReference: ref, Optional: optional}
			}
			c.EnvFrom = append(c.EnvFrom, env)
		case model.Key, model.KeyOptional:
			var from corev1.EnvVarSource
			if id.Kind == model.Secret {
				from.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: ref, Key: model.ReadKey, Optional: optional}
			} else {
				from.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: ref, Key: model.ReadKey, Optional: optional}
			}
			c.Env = append(c.Env, corev1.EnvVar{Name: strings.ToUpper(strings.ReplaceAll(id.Name, "-", "_")), ValueFrom: &from})
		}
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}, TerminationGracePeriodSeconds: ptr.To[int64](0)},
	}
}

// revision is one pod template a Deployment ran and its annotations while
// it was current, as a ReplicaSet keeps them for `kubectl rollout undo`.
type revision struct {
	template    corev1.PodTemplateSpec
	annotations map[string]string
}

// revisions follows, from a watch that resumes where it broke off, the pod
// templates of every Deployment of a namespace: how many times each changed,
// and its revisions, oldest first.
type revisions struct {
	mu     sync.Mutex
	counts map[string]int
	revs   map[string][]revision
}

func watchRevisions(t *testing.T, ns string) *revisions {
	t.Helper()
	cs, err := kubernetes.NewForConfig(suite.Plane.Config())
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing Deployments: %v", err)
	}
	lw := cache.NewListWatchFromClient(cs.AppsV1().RESTClient(), "deployments", ns, fields.Everything())
	rw, err := watchtools.NewRetryWatcherWithContext(t.Context(), list.ResourceVersion, lw)
	if err != nil {
		t.Fatalf("watching Deployments: %v", err)
	}
	t.Cleanup(rw.Stop)
	r := &revisions{counts: map[string]int{}, revs: map[string][]revision{}}
	go func() {
		for ev := range rw.ResultChan() {
			if d, ok := ev.Object.(*appsv1.Deployment); ok {
				r.saw(d)
			}
		}
	}()
	return r
}

func (r *revisions) saw(d *appsv1.Deployment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	revs := r.revs[d.Name]
	if n := len(revs); n > 0 && equality.Semantic.DeepEqual(revs[n-1].template, d.Spec.Template) {
		revs[n-1].annotations = d.Annotations
		return
	}
	if len(revs) > 0 {
		r.counts[d.Name]++
	}
	revs = slices.DeleteFunc(revs, func(v revision) bool { return equality.Semantic.DeepEqual(v.template, d.Spec.Template) })
	revs = append(revs, revision{template: d.Spec.Template, annotations: d.Annotations})
	r.revs[d.Name] = revs[max(0, len(revs)-model.RevisionHistoryLimit):]
}

// count returns how many times the Deployment's pod template changed.
func (r *revisions) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[name]
}

// previous returns the revision before the current one.
func (r *revisions) previous(name string) (revision, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	revs := r.revs[name]
	if len(revs) < 2 {
		return revision{}, false
	}
	prev := revs[len(revs)-2]
	return revision{template: *prev.template.DeepCopy(), annotations: maps.Clone(prev.annotations)}, true
}
