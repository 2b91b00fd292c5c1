package explain

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/api/v1alpha1"
	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/resolve"
	"nudge.dev/nudge/internal/settings"
	"nudge.dev/nudge/internal/workload"
)

// Fleet is nudge's fleet at a glance (kubectl nudge status): the installs
// and their leaders, the rollouts in flight or failed, the workloads halted
// or held by a missing required source, and the ValueBindings not Ready.
type Fleet struct {
	// Namespace is the namespace looked at; "" for every namespace.
	Namespace string `json:"namespace,omitempty"`
	// Installs are the installs found, one per shard; Install says why
	// none was, when none was.
	Installs []InstallStatus `json:"installs"`
	Install  Install         `json:"install"`
	// InFlight are the workloads nudge rolled whose rollout is not
	// complete; Failed those whose rollout failed (a Deployment's progress
	// deadline, or --rollout-timeout).
	InFlight []Rollout `json:"inFlight"`
	Failed   []Rollout `json:"failed"`
	// Halted are the workloads halted by nudge.dev/halted.
	Halted []Halted `json:"halted"`
	// Restarts are the workloads whose pods nudge restarts through the
	// Eviction API: under way, blocked by a budget, or halted.
	Restarts []Restart `json:"restarts"`
	// Paced are the workloads whose change waits for their maintenance
	// window or for the storm brake's budget (nudge.dev/held).
	Paced []Paced `json:"paced"`
	// Paused are the workloads a nudge.dev/paused holds, wholly or for
	// some of their sources.
	Paused []Paused `json:"paused"`
	// Missing are the workloads waiting for a required source that does
	// not exist.
	Missing []Waiting `json:"missing"`
	// Lagging are the workloads nudge manages whose pods still run content
	// from before a source's current version more than --rollout-timeout
	// after it changed (see Rotation).
	Lagging []Lagging `json:"lagging"`
	// Bindings are the ValueBindings whose Ready condition is not True.
	Bindings []Binding `json:"bindings"`
	// Unread says what could not be read with the user's permissions.
	Unread []string `json:"unread,omitempty"`
}

// InstallStatus is one install (a shard, when several) and its leader.
type InstallStatus struct {
	// ConfigMap is its settings ConfigMap, "namespace/name".
	ConfigMap string `json:"configMap"`
	Version   string `json:"version"`
	// Leader is the holder of its leader-election Lease; "" when none
	// holds it now, or without leader election (one replica).
	Leader string `json:"leader,omitempty"`
	// LeaderState is "Held", "NoLeader" (the Lease expired or is not
	// held), "NotElected" (--leader-elect off) or "Unknown" (the Lease could
	// not be read).
	LeaderState string `json:"leaderState"`
	// Shard is the shard the Lease is for, as its name says ("1-of-3" for
	// --shard=1/3), "" for an install that is not sharded.
	Shard string `json:"shard,omitempty"`
}

// Rollout is a workload whose rollout by nudge is in flight or failed.
type Rollout struct {
	Workload string `json:"workload"`
	// Since is when nudge rolled it (nudge.dev/last-rollout).
	Since time.Time `json:"since"`
	// Reason says why a rollout failed.
	Reason string `json:"reason,omitempty"`
}

// Halted is a workload halted because the rollout of the same content failed
// on another workload.
type Halted struct {
	Workload string `json:"workload"`
	// Source and Content are the source and the content digest it is
	// halted for; After the workload whose rollout of that content failed.
	Source  string `json:"source"`
	Content string `json:"content"`
	After   string `json:"after"`
}

// Paced is a workload whose change waits (nudge.dev/held, see
// workload.Held): Reason is RolloutStorm (the storm brake) or
// RolloutDeferred (a maintenance window); it rolls at Until.
type Paced struct {
	Workload string    `json:"workload"`
	Reason   string    `json:"reason"`
	Since    time.Time `json:"since"`
	Until    time.Time `json:"until"`
	Sources  string    `json:"sources"`
}

// Paused is a workload whose rollouts nudge.dev/paused holds.
type Paused struct {
	Workload string `json:"workload"`
	// By lists where the pause is set: the workload, "Namespace ns", or
	// its sources (see Status.Paused).
	By []string `json:"by"`
	// Waiting lists the changed sources whose rollout the pause holds,
	// as the workload's Status.Changed; empty when nothing waits, or when
	// content could not be compared (Compared false).
	Waiting  []string `json:"waiting,omitempty"`
	Compared bool     `json:"compared"`
}

// Waiting is a workload waiting for required sources that do not exist.
type Waiting struct {
	Workload string   `json:"workload"`
	Sources  []string `json:"sources"`
}

// Binding is a ValueBinding whose Ready condition is not True.
type Binding struct {
	Binding string `json:"binding"`
	// Reason and Message are its Ready condition's; Reason is "NotObserved"
	// when it has none yet.
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// Status returns the fleet of namespace ("" for every namespace) as the
// user may read it, with installs the settings found (settings.List). What
// the user may not read is skipped and said in Fleet.Unread; other API
// errors are returned.
func (e Explainer) Status(ctx context.Context, namespace string, installs []*settings.Settings) (*Fleet, error) {
	f := &Fleet{Namespace: namespace, Install: e.Install, Installs: []InstallStatus{}, InFlight: []Rollout{}, Failed: []Rollout{},
		Halted: []Halted{}, Restarts: []Restart{}, Paced: []Paced{}, Paused: []Paused{}, Missing: []Waiting{}, Lagging: []Lagging{}, Bindings: []Binding{}}
	for _, s := range installs {
		f.Installs = append(f.Installs, e.leaders(ctx, s)...)
	}
	in := []client.ListOption{client.InNamespace(namespace)}
	now := e.now()
	// The key, when the user may read it, tells what a pause holds.
	key, cmp := e.key(ctx)
	res := e.resolver(key)
	for _, k := range Kinds() {
		list := k.NewList()
		if err := e.Client.List(ctx, list, in...); err != nil {
			if apimeta.IsNoMatchError(err) {
				continue
			}
			if unreadable(err) {
				f.Unread = append(f.Unread, fmt.Sprintf("%s: %v", k.Plural(), err))
				continue
			}
			return nil, fmt.Errorf("listing %s: %w", k.Plural(), err)
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			obj, ok := item.(client.Object)
			if !ok {
				continue
			}
			if err := e.statusOf(ctx, f, res, cmp.Compared, k, obj, now); err != nil {
				return nil, err
			}
		}
	}
	if err := e.bindings(ctx, f, in); err != nil {
		return nil, err
	}
	return f, nil
}

// statusOf adds workload obj, of kind k, to the fleet's lists it belongs
// in; res compares content when compared.
func (e Explainer) statusOf(ctx context.Context, f *Fleet, res resolve.Resolver, compared bool, k workload.Kind, obj client.Object, now time.Time) error {
	name := k.Name() + " " + obj.GetNamespace() + "/" + obj.GetName()
	switch p, reason, _ := fleet.ProgressOf(obj, now, e.RolloutTimeout); p {
	case fleet.Rolling:
		f.InFlight = append(f.InFlight, Rollout{Workload: name, Since: lastRollout(obj)})
	case fleet.Failed:
		f.Failed = append(f.Failed, Rollout{Workload: name, Since: lastRollout(obj), Reason: reason})
	}
	if v, ok := obj.GetAnnotations()[fleet.HaltedAnnotation]; ok {
		h := Halted{Workload: name, Content: v}
		if parsed, ok := fleet.ParseHalt(v); ok {
			h = Halted{Workload: name, Source: sourceName(parsed.Source), Content: parsed.Digest, After: parsed.After}
		}
		f.Halted = append(f.Halted, h)
	}
	if r, ok := restartOf(name, obj); ok {
		f.Restarts = append(f.Restarts, r)
	}
	if h, ok := workload.ParseHeld(obj.GetAnnotations()[workload.HeldAnnotation]); ok {
		f.Paced = append(f.Paced, Paced{Workload: name, Reason: h.Reason, Since: h.Since, Until: h.Until, Sources: h.Sources})
	}
	t, err := workload.TemplateOf(ctx, e.Client, k, obj)
	if unreadable(err) {
		f.Unread = append(f.Unread, fmt.Sprintf("the pod template of %s: %v", name, err))
		return nil
	}
	if t == nil {
		return nil // none, or a workloadRef to a Deployment that does not exist (a WorkloadRefMissing Warning)
	}
	spec, _ := e.Dialect.Parse(obj.GetNamespace(), obj.GetAnnotations(), t.Annotations)
	if !spec.Enabled(e.AutoReloadAll) {
		return nil
	}
	in, resolved, err := res.Inputs(ctx, obj, spec, t, now)
	if unreadable(err) {
		f.Unread = append(f.Unread, fmt.Sprintf("the sources of %s: %v", name, err))
		return nil
	}
	if err != nil {
		return fmt.Errorf("resolving the references of %s: %w", name, err)
	}
	if err := e.paused(ctx, f, res, compared, name, spec, in); err != nil {
		return err
	}
	var missing []string
	for _, r := range resolved {
		if r.Outcome == resolve.Missing {
			missing = append(missing, sourceName(r.Source))
		}
	}
	if len(missing) > 0 {
		f.Missing = append(f.Missing, Waiting{Workload: name, Sources: missing})
	}
	return e.lagging(ctx, f, k, obj, name, &t.Spec, now)
}

// bindings adds the ValueBindings not Ready; none when the API does not
// serve them.
func (e Explainer) bindings(ctx context.Context, f *Fleet, in []client.ListOption) error {
	var list v1alpha1.ValueBindingList
	err := e.Client.List(ctx, &list, in...)
	switch {
	case apimeta.IsNoMatchError(err) || runtime.IsNotRegisteredError(err):
		return nil
	case unreadable(err):
		f.Unread = append(f.Unread, fmt.Sprintf("valuebindings: %v", err))
		return nil
	case err != nil:
		return fmt.Errorf("listing ValueBindings: %w", err)
	}
	for _, b := range list.Items {
		c := apimeta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady)
		switch {
		case c == nil:
			f.Bindings = append(f.Bindings, Binding{Binding: b.Namespace + "/" + b.Name, Reason: "NotObserved"})
		case c.Status != "True":
			f.Bindings = append(f.Bindings, Binding{Binding: b.Namespace + "/" + b.Name, Reason: c.Reason, Message: c.Message})
		}
	}
	return nil
}

// leaders reads the leader-election Lease of install s, or, when it has
// none, the Leases of its shards (named "<id>-shard-<shard>", see
// shard.Shard.LeaseName): one status per shard of the sets held now.
func (e Explainer) leaders(ctx context.Context, s *settings.Settings) []InstallStatus {
	st := InstallStatus{ConfigMap: s.Namespace + "/" + s.Name, Version: s.Version, LeaderState: "NotElected"}
	o := s.Options
	if !o.LeaderElect {
		return []InstallStatus{st}
	}
	ns := o.LeaseNamespace()
	if ns == "" {
		ns = s.Namespace
	}
	var lease coordinationv1.Lease
	err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.LeaderElectionID}, &lease)
	switch {
	case err == nil:
		return []InstallStatus{e.held(st, &lease)}
	case !apierrors.IsNotFound(err):
		st.LeaderState = "Unknown"
		return []InstallStatus{st}
	}
	st.LeaderState = "NoLeader"
	var leases coordinationv1.LeaseList
	if err := e.Client.List(ctx, &leases, client.InNamespace(ns)); err != nil {
		return []InstallStatus{st}
	}
	// A reshard leaves the Leases of the shard set before it, expired:
	// show the sets of which some shard is held now ("-of-N" alike).
	var all []InstallStatus
	sets := map[string]bool{}
	prefix := o.LeaderElectionID + "-shard-"
	for i := range leases.Items {
		if shard, ok := strings.CutPrefix(leases.Items[i].Name, prefix); ok {
			sh := st
			sh.Shard = shard
			sh = e.held(sh, &leases.Items[i])
			all = append(all, sh)
			if sh.LeaderState == "Held" {
				sets[shardSet(shard)] = true
			}
		}
	}
	out := slices.DeleteFunc(all, func(sh InstallStatus) bool { return !sets[shardSet(sh.Shard)] })
	if len(out) == 0 {
		return []InstallStatus{st}
	}
	return out
}

// shardSet returns the shard set a shard's Lease name suffix belongs to:
// "of-3" for "1-of-3", the suffix itself for an explicit range.
func shardSet(shard string) string {
	if _, n, ok := strings.Cut(shard, "-of-"); ok {
		return "of-" + n
	}
	return shard
}

// held fills st's leader from lease: its holder while the Lease is
// renewed, NoLeader once it expired or when nobody holds it.
func (e Explainer) held(st InstallStatus, lease *coordinationv1.Lease) InstallStatus {
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	expired := true
	if lease.Spec.RenewTime != nil && lease.Spec.LeaseDurationSeconds != nil {
		expired = e.now().After(lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second))
	}
	if holder == "" || expired {
		st.LeaderState = "NoLeader"
		return st
	}
	st.Leader, st.LeaderState = holder, "Held"
	return st
}

// unreadable reports whether err is the API refusing the user a read.
func unreadable(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

func lastRollout(obj client.Object) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, obj.GetAnnotations()[workload.LastRolloutAnnotation])
	return t.UTC()
}

// PrintFleet writes f as text to out, each line cut to width characters (no
// limit when width <= 0).
func PrintFleet(out io.Writer, width int, f *Fleet) error {
	var b bytes.Buffer
	if len(f.Installs) == 0 {
		linef(&b, "Installs: %s\n", f.Install)
	} else {
		fmt.Fprintf(&b, "Installs (%d):\n", len(f.Installs))
		rows := [][]string{{"SETTINGS", "VERSION", "SHARD", "LEADER"}}
		for _, i := range f.Installs {
			leader := i.LeaderState
			if i.Leader != "" {
				leader = i.Leader
			}
			rows = append(rows, []string{i.ConfigMap, i.Version, cmp.Or(i.Shard, "-"), leader})
		}
		table(&b, rows)
	}
	section := func(title string, n int, header []string, rows [][]string) {
		fmt.Fprintf(&b, "\n%s (%d):\n", title, n)
		if n == 0 {
			b.WriteString("  none\n")
			return
		}
		table(&b, append([][]string{header}, rows...))
	}
	var rows [][]string
	for _, r := range f.InFlight {
		rows = append(rows, []string{r.Workload, r.Since.Format(time.RFC3339)})
	}
	section("Rollouts in flight", len(f.InFlight), []string{"WORKLOAD", "ROLLED"}, rows)
	rows = nil
	for _, r := range f.Failed {
		rows = append(rows, []string{r.Workload, r.Since.Format(time.RFC3339), r.Reason})
	}
	section("Rollouts failed", len(f.Failed), []string{"WORKLOAD", "ROLLED", "WHY"}, rows)
	rows = nil
	for _, h := range f.Halted {
		rows = append(rows, []string{h.Workload, h.Source, h.Content, h.After})
	}
	section("Halted", len(f.Halted), []string{"WORKLOAD", "HELD FOR", "CONTENT", "AFTER"}, rows)
	section("Pods restarted through the Eviction API", len(f.Restarts), []string{"WORKLOAD", "CHANGED", "LAST EVICTION", "STATE"}, restartRows(f.Restarts))
	rows = nil
	for _, p := range f.Paced {
		rows = append(rows, []string{p.Workload, p.Reason, p.Since.Format(time.RFC3339), p.Until.Format(time.RFC3339), p.Sources})
	}
	section("Waiting for a maintenance window or the storm brake", len(f.Paced), []string{"WORKLOAD", "WHY", "SINCE", "ROLLS AT", "CHANGED"}, rows)
	section("Paused (nudge.dev/paused)", len(f.Paused), []string{"WORKLOAD", "PAUSED BY", "WAITING"}, pausedRows(f.Paused))
	rows = nil
	for _, m := range f.Missing {
		rows = append(rows, []string{m.Workload, strings.Join(m.Sources, ", ")})
	}
	section("Waiting for a missing required source", len(f.Missing), []string{"WORKLOAD", "MISSING"}, rows)
	rows = nil
	for _, l := range f.Lagging {
		rows = append(rows, []string{l.Workload, l.Source, l.Changed.Format(time.RFC3339), fmt.Sprintf("%d of %d", l.Count, l.Pods), l.Message})
	}
	section("Pods still on content from before a change, past --rollout-timeout", len(f.Lagging), []string{"WORKLOAD", "SOURCE", "CHANGED", "PODS", "MESSAGE"}, rows)
	rows = nil
	for _, v := range f.Bindings {
		rows = append(rows, []string{v.Binding, v.Reason, v.Message})
	}
	section("ValueBindings not Ready", len(f.Bindings), []string{"BINDING", "REASON", "MESSAGE"}, rows)
	if len(f.Unread) > 0 {
		fmt.Fprintf(&b, "\nNot read (your permissions):\n")
		for _, u := range slices.Compact(slices.Sorted(slices.Values(f.Unread))) {
			linef(&b, "  %s\n", u)
		}
	}
	return write(out, width, b.Bytes())
}
