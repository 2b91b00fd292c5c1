package options_test

import (
	"io"
	"slices"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"

	"nudge.dev/nudge/internal/options"
)

// FuzzFlagValues gives one value to every flag BindFlags registers, one flag
// at a time (flags added later are fuzzed too): the flag refuses it or takes
// it, Validate never panics and gives the same verdict twice, what Validate
// accepts is usable, and a value the flag took reads back the same when
// written out and parsed again.
func FuzzFlagValues(f *testing.F) {
	for _, v := range []string{
		"", "0", "-1", "1", "500", "1e3", "NaN", "+Inf", "-0", "0x10", "true", "FALSE",
		"5s", "-1s", "1h2m3.5s", "9223372036854775807", "99999999999h",
		"a,b", `"a,b",c`, `"`, " , ", "kube-system",
		"team=a,tier!=b", "a in (b", "!x", "env notin (a,b)",
		"configMaps,secrets", "jobs,CronJobs,pods",
		"https://hooks.example/x", "ftp://x", "http://", "https://[::1]:99/%zz",
		"json", "text", "warning", "annotations", "env-vars",
		"0 2 * * 1-5 2h Europe/Berlin", "@daily 1h", "0 25 * * * 1h",
		"\x00", "\xff\xfe", "ünïcödé",
	} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, value string) {
		for _, name := range flagNames() {
			o, fs := bound()
			if err := fs.Parse([]string{"--" + name + "=" + value}); err != nil {
				continue
			}
			err := o.Validate()
			if again := o.Validate(); (err == nil) != (again == nil) || err != nil && err.Error() != again.Error() {
				t.Fatalf("--%s=%q: Validate gave %v, then %v", name, value, err, again)
			}
			if err == nil {
				checkUsable(t, name, value, o)
			}
			checkRoundTrip(t, name, value, fs.Lookup(name).Value)
		}
	})
}

// bound returns the default options and the flag set bound to them.
func bound() (*options.Options, *pflag.FlagSet) {
	o := options.Default()
	fs := pflag.NewFlagSet("nudge", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	return &o, fs
}

func flagNames() []string {
	_, fs := bound()
	var names []string
	fs.VisitAll(func(fl *pflag.Flag) { names = append(names, fl.Name) })
	return names
}

// checkUsable checks that options Validate accepted can be used as they are.
func checkUsable(t *testing.T, name, value string, o *options.Options) {
	t.Helper()
	switch {
	case !(o.QPS > 0) || o.Burst <= 0:
		t.Fatalf("--%s=%q: Validate accepted QPS %v, burst %d", name, value, o.QPS, o.Burst)
	case o.RolloutWindow < 0 || o.DiscoveryInterval <= 0 || o.Workers < 1:
		t.Fatalf("--%s=%q: Validate accepted window %v, discovery interval %v, %d workers", name, value, o.RolloutWindow, o.DiscoveryInterval, o.Workers)
	case o.MaxRolloutsPerHour < 0 || o.ProducerReadyTimeout < 0:
		t.Fatalf("--%s=%q: Validate accepted %d rollouts an hour, a producer timeout of %v", name, value, o.MaxRolloutsPerHour, o.ProducerReadyTimeout)
	case !slices.Contains(options.LogLevels, o.LogLevel):
		t.Fatalf("--%s=%q: Validate accepted log level %q", name, value, o.LogLevel)
	}
	if _, err := o.Maintenance(); err != nil {
		t.Fatalf("--%s=%q: Validate accepted the maintenance window %q: %v", name, value, o.MaintenanceWindow, err)
	}
	for _, sel := range []string{o.NamespaceSelector, o.ResourceLabelSelector} {
		if _, err := labels.Parse(sel); err != nil {
			t.Fatalf("--%s=%q: Validate accepted selector %q: %v", name, value, sel, err)
		}
	}
}

// checkRoundTrip checks that the value a flag holds, written out, sets a
// fresh flag to the same value: a slice through its items, any other value
// through its String.
func checkRoundTrip(t *testing.T, name, value string, v pflag.Value) {
	t.Helper()
	_, fresh := bound()
	w := fresh.Lookup(name).Value
	if s, ok := v.(pflag.SliceValue); ok {
		if err := w.(pflag.SliceValue).Replace(s.GetSlice()); err != nil || !slices.Equal(w.(pflag.SliceValue).GetSlice(), s.GetSlice()) {
			t.Fatalf("--%s=%q holds %q, read back as %q, %v", name, value, s.GetSlice(), w.(pflag.SliceValue).GetSlice(), err)
		}
		return
	}
	if err := w.Set(v.String()); err != nil || w.String() != v.String() {
		t.Fatalf("--%s=%q holds %q, read back as %q, %v", name, value, v.String(), w.String(), err)
	}
}
