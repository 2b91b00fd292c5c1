package explain

import (
	"fmt"
	"strings"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

// Target is what nudge explain was asked about: a workload or a source.
type Target struct {
	// Workload is set for a workload, nil for a source.
	Workload workload.Kind
	// Source is the source's kind when Workload is nil.
	Source refs.Kind
	Name   string
}

// ParseTarget reads the arguments of nudge explain, as kubectl names an
// object: "TYPE/NAME" or "TYPE NAME", where TYPE is a kind's name, plural or
// kubectl short name, in any case, optionally with its API group
// ("deployments.apps", "rollouts.argoproj.io"). It returns an error wrapping
// ErrUsage for anything else.
func ParseTarget(args []string) (Target, error) {
	var typ, name string
	switch {
	case len(args) == 1 && strings.Contains(args[0], "/"):
		typ, name, _ = strings.Cut(args[0], "/")
	case len(args) == 2 && !strings.Contains(args[0], "/"):
		typ, name = args[0], args[1]
	default:
		return Target{}, fmt.Errorf("%w: want TYPE/NAME or TYPE NAME, e.g. deployment/web or secret db", ErrUsage)
	}
	if name == "" || strings.Contains(name, "/") {
		return Target{}, fmt.Errorf("%w: no object name in %q", ErrUsage, strings.Join(args, " "))
	}
	typ = strings.ToLower(typ)
	if base, group, ok := strings.Cut(typ, "."); ok {
		if g := apiGroup(base); g == "" || group != g {
			return Target{}, fmt.Errorf("%w: unknown type %q", ErrUsage, typ)
		}
		typ = base
	}
	t := Target{Name: name}
	switch typ {
	case "deployment", "deployments", "deploy":
		t.Workload = workload.Deployment
	case "statefulset", "statefulsets", "sts":
		t.Workload = workload.StatefulSet
	case "daemonset", "daemonsets", "ds":
		t.Workload = workload.DaemonSet
	case "cronjob", "cronjobs", "cj":
		t.Workload = workload.CronJob
	case "job", "jobs":
		t.Workload = workload.Job
	case "rollout", "rollouts", "ro":
		t.Workload = workload.Rollout
	case "configmap", "configmaps", "cm":
		t.Source = refs.ConfigMap
	case "secret", "secrets":
		t.Source = refs.Secret
	case "pod", "pods", "po":
		return Target{}, fmt.Errorf("%w: nudge never rolls nor evicts a pod itself, only through the workload that owns it: "+
			"a bare Pod is never evicted, since nothing would re-create it; explain its owner (e.g. statefulset/NAME)", ErrUsage)
	default:
		return Target{}, fmt.Errorf("%w: nudge explains deployments, statefulsets, daemonsets, cronjobs, jobs, rollouts, configmaps and secrets, not %q", ErrUsage, typ)
	}
	return t, nil
}

// apiGroup returns the API group a TYPE may be qualified with; "" for the
// core group, which takes no suffix, and for unknown types.
func apiGroup(typ string) string {
	switch typ {
	case "deployment", "deployments", "deploy", "statefulset", "statefulsets", "sts", "daemonset", "daemonsets", "ds":
		return "apps"
	case "cronjob", "cronjobs", "cj", "job", "jobs":
		return "batch"
	case "rollout", "rollouts", "ro":
		return "argoproj.io"
	}
	return ""
}
