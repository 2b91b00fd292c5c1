package settings

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

// Labels of the settings ConfigMap, by which an install is found.
const (
	NameLabel      = "app.kubernetes.io/name"
	ComponentLabel = "app.kubernetes.io/component"
	// Component is ComponentLabel's value.
	Component = "settings"
)

// Data keys of the settings ConfigMap.
const (
	// ArgsKey holds the flags whose values differ from the defaults, one
	// "--name=value" a line, sorted (see Args).
	ArgsKey = "args"
	// VersionKey holds nudge's version (version.Get).
	VersionKey = "version"
	// NotifyOnlyKey is "true" when nudge sends changes to --webhook-url
	// instead of rolling; the URL itself, which may hold a token, is not
	// published.
	NotifyOnlyKey = "notifyOnly"
)

// published are the flags Args may publish: the settings that decide a
// workload (dialects, selectors, limits, strategies) and the harmless ones
// of nudge's own running (workers, leader election, logging). It is an
// allow-list: a flag not named here, such as a new one, is never published.
// Left out on purpose, and so checked by TestEveryFlagIsClassified: what may
// hold a credential (--webhook-url, --alert-webhook-url, --alert-proxy, whose
// URLs may carry a token or a password, and --alert-additional-info, free
// text), what means something only inside nudge's pod (--kubeconfig, files,
// directories, bind addresses), and what differs between the pods of one
// install (--shard: every shard publishes to the same ConfigMap).
var published = map[string]bool{
	"admission-webhook": true, "allow-workload-overrides": true, "alert-on-reload": true, "alert-sink": true, "alert-structured": true,
	"auto-annotation": true, "auto-reload-all": true, "auto-search-annotation": true,
	"configmap-annotation": true, "configmap-auto-annotation": true, "configmap-exclude-annotation": true,
	"cronjob-start-job": true, "cross-namespace-references": true, "discovery-interval": true,
	"enable-csi-integration": true, "enable-eviction": true, "enable-ha": true, "evict-pods-of": true, "enable-http2": true, "enable-pprof": true,
	"event-reasons": true, "ignore-annotation": true, "ignored-workload-types": true,
	"is-Argo-Rollouts": true, "is-openshift": true, "key-secret": true, "kube-api-burst": true, "kube-api-qps": true,
	"leader-elect": true, "leader-election-id": true, "leader-election-lease-duration": true,
	"leader-election-namespace": true, "leader-election-release-on-cancel": true,
	"leader-election-renew-deadline": true, "leader-election-retry-period": true,
	"log-format": true, "log-level": true, "maintenance-window": true, "max-concurrent-rollouts": true,
	"max-rollouts-per-hour": true, "namespace-selector": true, "namespaces": true, "namespaces-to-ignore": true,
	"pause-deployment-annotation": true, "pause-deployment-time-annotation": true,
	"producer-ready-timeout": true, "recreate-jobs": true, "reload-on-create": true, "reload-on-delete": true,
	"reload-strategy": true, "resource-label-selector": true, "resources-to-ignore": true,
	"rollout-timeout": true, "rollout-window": true, "search-match-annotation": true,
	"secret-annotation": true, "secret-auto-annotation": true, "secret-exclude-annotation": true,
	"secretproviderclass-annotation": true, "secretproviderclass-auto-annotation": true,
	"secretproviderclass-exclude-annotation": true, "settings-configmap": true, "sync-after-restart": true,
	"system-namespace": true, "value-binding-targets": true, "value-binding-workers": true,
	"value-bindings": true, "workers": true,
}

// Args returns opts as the flags that give it, "--name=value" for every
// flag whose value differs from its default, sorted, among the published
// ones only. options.Options parsed from them (see Parse) decide every workload
// as opts does.
func Args(opts options.Options) []string {
	defaults := options.Default()
	def := pflag.NewFlagSet("defaults", pflag.ContinueOnError)
	defaults.BindFlags(def)
	eff := pflag.NewFlagSet("effective", pflag.ContinueOnError)
	opts.BindFlags(eff)
	var args []string
	eff.VisitAll(func(f *pflag.Flag) {
		if !published[f.Name] {
			return
		}
		if d := def.Lookup(f.Name); d != nil && d.Value.String() == f.Value.String() {
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	slices.Sort(args)
	return args
}

// Parse returns the options args give (as Args writes them), on top of the
// defaults. It returns an error for a flag this nudge does not know (a
// newer install's), naming it.
func Parse(args []string) (options.Options, error) {
	o := options.Default()
	fs := pflag.NewFlagSet("settings", pflag.ContinueOnError)
	o.BindFlags(fs)
	for _, a := range args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		f := fs.Lookup(name)
		if f == nil {
			return o, fmt.Errorf("unknown flag --%s", name)
		}
		// A list flag's String is "[a,b]"; Set wants "a,b".
		if _, ok := f.Value.(pflag.SliceValue); ok {
			value = strings.TrimSuffix(strings.TrimPrefix(value, "["), "]")
		}
		if err := fs.Set(name, value); err != nil {
			return o, fmt.Errorf("--%s: %w", name, err)
		}
	}
	return o, nil
}

// ConfigMap returns the settings ConfigMap of a nudge with opts, running
// version, named name in namespace.
func ConfigMap(namespace, name, version string, opts options.Options) *corev1.ConfigMap {
	data := map[string]string{VersionKey: version, ArgsKey: strings.Join(Args(opts), "\n")}
	if opts.WebhookURL != "" {
		data[NotifyOnlyKey] = "true"
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
			NameLabel: "nudge", ComponentLabel: Component,
		}},
		Data: data,
	}
}

// Publish writes cm, creating it or replacing the data and labels of the
// one there. It reads through r (not a cache: nudge's cache holds
// ConfigMaps digested) and writes through c; it returns the API server's
// error.
func Publish(ctx context.Context, c client.Client, r client.Reader, cm *corev1.ConfigMap) error {
	var live corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKeyFromObject(cm), &live)
	switch {
	case apierrors.IsNotFound(err):
		err = c.Create(ctx, cm.DeepCopy(), client.FieldOwner(workload.FieldManager))
	case err == nil:
		live.Labels, live.Data = cm.Labels, cm.Data
		err = c.Update(ctx, &live, client.FieldOwner(workload.FieldManager))
	}
	if err != nil {
		return fmt.Errorf("publishing nudge's settings in ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return nil
}

// Settings are the settings of one install, as found.
type Settings struct {
	// Namespace and Name are the settings ConfigMap's.
	Namespace, Name string
	// Version is the version of the nudge that published them.
	Version string
	// Args are the flags published (see Args), and Options what they give.
	Args    []string
	Options options.Options
	// NotifyOnly: the install sends changes to a webhook instead of rolling.
	NotifyOnly bool
}

// ErrNotFound is returned by Find when no settings could be read.
var ErrNotFound = errors.New("no nudge install found")

// List returns the settings of every install found: those published in
// systemNamespace or, when it holds none the client may read, in every
// namespace, sorted by namespace and name. Settings this version of nudge
// cannot read are left out. It returns ErrNotFound, wrapped with why
// (nothing labelled, or no permission to list), when none is found.
func List(ctx context.Context, c client.Reader, systemNamespace string) ([]*Settings, error) {
	sel := client.MatchingLabels{NameLabel: "nudge", ComponentLabel: Component}
	var found []corev1.ConfigMap
	var why []string
	for _, ns := range []string{systemNamespace, ""} {
		var list corev1.ConfigMapList
		opts := []client.ListOption{sel}
		where := "any namespace"
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
			where = "namespace " + ns
		}
		err := c.List(ctx, &list, opts...)
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			why = append(why, "you may not list ConfigMaps in "+where)
		case err != nil:
			return nil, fmt.Errorf("listing nudge's settings ConfigMaps in %s: %w", where, err)
		case len(list.Items) == 0:
			why = append(why, "none in "+where)
		}
		if found = list.Items; len(found) > 0 {
			break
		}
	}
	slices.SortFunc(found, func(a, b corev1.ConfigMap) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	var out []*Settings
	for i := range found {
		if s, err := read(&found[i]); err == nil {
			out = append(out, s)
		} else {
			why = append(why, fmt.Sprintf("ConfigMap %s/%s: %v", found[i].Namespace, found[i].Name, err))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: looked for ConfigMaps labelled %s=nudge,%s=%s: %s", ErrNotFound,
			NameLabel, ComponentLabel, Component, strings.Join(why, "; "))
	}
	return out, nil
}

// Find returns the settings of the install that handles namespace, among
// those List finds (see Pick). It returns List's errors.
func Find(ctx context.Context, c client.Reader, systemNamespace, namespace string) (*Settings, error) {
	all, err := List(ctx, c, systemNamespace)
	if err != nil {
		return nil, err
	}
	return Pick(ctx, c, all, namespace), nil
}

// Pick returns the install of all (not empty) that handles namespace: the
// one that watches it, reading the Namespace's labels for a
// --namespace-selector when it may; else one that may; else the first. With
// one install it reads nothing.
func Pick(ctx context.Context, c client.Reader, all []*Settings, namespace string) *Settings {
	if len(all) == 1 {
		return all[0]
	}
	var nsLabels labels.Set
	var nsObj corev1.Namespace
	if c.Get(ctx, client.ObjectKey{Name: namespace}, &nsObj) == nil {
		nsLabels = nsObj.Labels
	}
	var unsure *Settings
	for _, s := range all {
		switch watches(s.Options, namespace, nsLabels) {
		case yes:
			return s
		case maybe:
			if unsure == nil {
				unsure = s
			}
		}
	}
	if unsure != nil {
		return unsure
	}
	return all[0]
}

// read reads a settings ConfigMap.
func read(cm *corev1.ConfigMap) (*Settings, error) {
	args := strings.Fields(cm.Data[ArgsKey])
	o, err := Parse(args)
	if err != nil {
		return nil, err
	}
	return &Settings{Namespace: cm.Namespace, Name: cm.Name, Version: cm.Data[VersionKey], Args: args, Options: o,
		NotifyOnly: cm.Data[NotifyOnlyKey] == "true"}, nil
}

type answer int

const (
	no answer = iota
	maybe
	yes
)

// watches tells whether a nudge with o watches namespace, whose labels are
// nsLabels (nil when unknown).
func watches(o options.Options, namespace string, nsLabels labels.Set) answer {
	if slices.Contains(o.NamespacesToIgnore, namespace) {
		return no
	}
	if len(o.Namespaces) > 0 && !slices.Contains(o.Namespaces, namespace) {
		return no
	}
	if o.NamespaceSelector == "" {
		return yes
	}
	sel, err := labels.Parse(o.NamespaceSelector)
	switch {
	case err != nil, nsLabels == nil:
		return maybe
	case sel.Matches(nsLabels):
		return yes
	}
	return no
}
