package dialect

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"nudge.dev/nudge/internal/refs"
)

// The fuzz targets of this file take annotations as text, one per line,
// "annotation=value" (a line without "=" is an annotation with an empty
// value), so that the corpus under testdata/fuzz reads like the annotations
// it stands for. A value cannot hold a newline; FuzzParse's raw argument
// covers that by giving every list annotation one more entry.

// workloadAnnotations are every annotation Parse reads.
var workloadAnnotations = []string{
	NudgeAuto, NudgeConfigMaps, NudgeSecrets, NudgeExcludeConfigMaps, NudgeExcludeSecrets, NudgeRolloutWindow,
	ReloaderAuto, ReloaderConfigMapAuto, ReloaderSecretAuto, ReloaderConfigMapReload, ReloaderSecretReload,
	ReloaderSearch, ReloaderExcludeConfigMaps, ReloaderExcludeSecrets,
	PodReloaderConfigMaps, PodReloaderSecrets,
	WaveUpdateOnConfigChange, WaveExtraConfigMaps, WaveExtraSecrets,
	NudgeConfigMapSelector, NudgeSecretSelector,
}

// listAnnotations are the annotations Parse reads as comma-separated lists.
var listAnnotations = []string{
	NudgeConfigMaps, NudgeSecrets, NudgeExcludeConfigMaps, NudgeExcludeSecrets,
	ReloaderConfigMapReload, ReloaderSecretReload, ReloaderExcludeConfigMaps, ReloaderExcludeSecrets,
	PodReloaderConfigMaps, PodReloaderSecrets, WaveExtraConfigMaps, WaveExtraSecrets,
}

// annotationsFrom decodes "annotation=value" lines; nil for no lines.
func annotationsFrom(text string) map[string]string {
	var out map[string]string
	for line := range strings.SplitSeq(text, "\n") {
		if line == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		k, v, _ := strings.Cut(line, "=")
		out[k] = v
	}
	return out
}

// seeds are annotation sets for f.Add, beside the corpus in testdata/fuzz.
var seeds = []string{
	"",
	NudgeAuto + "=true\n" + NudgeRolloutWindow + "=1m30s",
	NudgeConfigMaps + "=app, shared/ca-bundle\n" + NudgeSecrets + "=db\n" + NudgeExcludeSecrets + "=other/token",
	ReloaderAuto + "=TRUE\n" + ReloaderExcludeConfigMaps + "=debug, tmp-.*",
	ReloaderConfigMapReload + "= app , app-.*,, my.cfg \n" + ReloaderSecretReload + "=db,tls-(a|b)",
	ReloaderSearch + "=true\n" + ReloaderSecretAuto + "=false",
	ReloaderConfigMapReload + "=a)|(b,[,(?P<x>,Bad_Name",
	PodReloaderConfigMaps + "= my-configmap \n" + PodReloaderSecrets + "=my-secret,my-other-secret",
	WaveUpdateOnConfigChange + "=false\n" + WaveExtraSecrets + "=vault/token,a/b/c,/x,y/",
	NudgeRolloutWindow + "=-1s\n" + NudgeAuto + "=yes",
	NudgeConfigMapSelector + "=app=dash,tier in (a, b)\n" + NudgeSecretSelector + "=a in (",
}

func FuzzParse(f *testing.F) {
	for i, s := range seeds {
		f.Add("shop", s, seeds[(i+3)%len(seeds)], "extra-"+fmt.Sprint(i))
	}
	f.Fuzz(func(t *testing.T, namespace, metaText, templateText, raw string) {
		meta, template := annotationsFrom(metaText), annotationsFrom(templateText)
		for _, m := range []map[string]string{meta, template} {
			for _, k := range listAnnotations {
				if v, ok := m[k]; ok {
					m[k] = v + "," + raw
				}
			}
		}
		spec, errs := Parse(namespace, meta, template)

		again, againErrs := Parse(namespace, meta, template)
		if !equalSpecs(spec, again) || !slices.Equal(messages(errs), messages(againErrs)) {
			t.Fatalf("Parse is not deterministic:\n%+v %q\n%+v %q", view(spec), messages(errs), view(again), messages(againErrs))
		}
		checkErrors(t, errs)
		checkSpec(t, namespace, spec)

		// A dialect read from the template alone means what it means in the
		// metadata.
		if meta == nil {
			moved, movedErrs := Parse(namespace, template, nil)
			if !equalSpecs(spec, moved) || len(movedErrs) != len(errs) {
				t.Fatalf("the template's annotations differ from the same in the metadata:\n%+v\n%+v", view(spec), view(moved))
			}
		}

		// The order of a list's entries does not matter.
		reversed, _ := Parse(namespace, reverseLists(meta), reverseLists(template))
		if !equalSpecs(spec, reversed) {
			t.Fatalf("reversing the lists changed the spec:\n%+v\n%+v", view(spec), view(reversed))
		}
	})
}

// checkErrors checks that every error is an *AnnotationError wrapping
// ErrMalformed, at most one per annotation and place.
func checkErrors(t *testing.T, errs []error) {
	t.Helper()
	seen := map[place]bool{}
	for _, err := range errs {
		var ae *AnnotationError
		if !errors.As(err, &ae) || !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not an *AnnotationError wrapping ErrMalformed", err)
		}
		if !slices.Contains(workloadAnnotations, ae.Annotation) {
			t.Fatalf("error names %q, not an annotation Parse reads", ae.Annotation)
		}
		at := place{annotation: ae.Annotation, template: ae.Template}
		if seen[at] {
			t.Fatalf("annotation %q reported twice", ae.Annotation)
		}
		seen[at] = true
	}
}

// checkSpec checks what Parse promises of a Spec's fields.
func checkSpec(t *testing.T, namespace string, s Spec) {
	t.Helper()
	for _, list := range [][]Named{s.Named, s.Exclude} {
		for i, n := range list {
			if i > 0 && compareNamed(list[i-1], n) >= 0 {
				t.Fatalf("entries not sorted and unique: %+v then %+v", list[i-1], n)
			}
			if n.Kind != refs.ConfigMap && n.Kind != refs.Secret {
				t.Fatalf("entry %+v has kind %q", n, n.Kind)
			}
			if n.Pattern != nil {
				if n.Dialect != Reloader || n.Namespace != namespace || n.Pattern.String() != "^(?:"+n.Name+")$" {
					t.Fatalf("pattern entry %+v is not an anchored Reloader entry in %q", n, namespace)
				}
				continue
			}
			if msgs := validation.IsDNS1123Subdomain(n.Name); len(msgs) > 0 {
				t.Fatalf("entry %+v has an invalid name: %v", n, msgs)
			}
			if n.Namespace != namespace && len(validation.IsDNS1123Label(n.Namespace)) > 0 {
				t.Fatalf("entry %+v has an invalid namespace", n)
			}
			if src := (refs.Source{Kind: n.Kind, Namespace: n.Namespace, Name: n.Name}); !n.Matches(src) {
				t.Fatalf("entry %+v does not match the source it names", n)
			}
		}
	}
	if s.Window != nil && *s.Window < 0 {
		t.Fatalf("negative window %v", *s.Window)
	}
	if !slices.IsSorted(s.Dialects) || len(slices.Compact(slices.Clone(s.Dialects))) != len(s.Dialects) {
		t.Fatalf("dialects not sorted and unique: %v", s.Dialects)
	}
}

func equalSpecs(a, b Spec) bool {
	return fmt.Sprintf("%+v", view(a)) == fmt.Sprintf("%+v", view(b))
}

func messages(errs []error) []string {
	out := make([]string, len(errs))
	for i, err := range errs {
		out[i] = err.Error()
	}
	return out
}

// reverseLists returns m with the entries of every list annotation reversed.
func reverseLists(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if slices.Contains(listAnnotations, k) {
			parts := strings.Split(v, ",")
			slices.Reverse(parts)
			v = strings.Join(parts, ",")
		}
		out[k] = v
	}
	return out
}

func FuzzCounts(f *testing.F) {
	for i, s := range seeds {
		f.Add(s, i%2 == 0, "app", ReloaderMatch+"=true", i%3 == 0, i%4 == 0)
	}
	f.Add(NudgeConfigMaps+"=app\n"+NudgeExcludeConfigMaps+"=app", true, "app", "", true, false)
	f.Add(ReloaderSearch+"=true", false, "app", ReloaderMatch+"= True ", true, false)
	f.Add(ReloaderAuto+"=true", true, "db", NudgeIgnore+"=TRUE", true, true)
	f.Fuzz(func(t *testing.T, annotations string, secret bool, name, sourceAnnotations string, inPodSpec, autoReloadAll bool) {
		spec, _ := Parse("shop", annotationsFrom(annotations), nil)
		src := refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: name}
		if secret {
			src.Kind = refs.Secret
		}
		own := annotationsFrom(sourceAnnotations)
		counts := spec.Counts(src, own, inPodSpec, autoReloadAll)

		if counts && !spec.Enabled(autoReloadAll) {
			t.Fatalf("%v counts for a spec that depends on nothing: %+v", src, view(spec))
		}
		if counts && (Ignored(own) || spec.Excluded(src)) {
			t.Fatalf("%v counts though ignored or excluded", src)
		}
		named := slices.ContainsFunc(spec.Named, func(n Named) bool { return n.Matches(src) })
		if named && !Ignored(own) && !spec.Excluded(src) && !counts {
			t.Fatalf("%v is named, neither ignored nor excluded, and does not count", src)
		}
		if !named && !inPodSpec && counts {
			t.Fatalf("%v counts though neither named nor in the pod spec", src)
		}
		// More uses or --auto-reload-all never make a source stop counting.
		if counts && !spec.Counts(src, own, true, autoReloadAll) {
			t.Fatalf("%v stops counting once the pod spec uses it", src)
		}
		if counts && !spec.Counts(src, own, inPodSpec, true) {
			t.Fatalf("%v stops counting with --auto-reload-all", src)
		}
	})
}

func FuzzSourceAnnotations(f *testing.F) {
	for _, v := range []string{"", "true", "TRUE", " True\t", "false", "yes", "1", "t", "tru", "true\x00", "ｔｒｕｅ"} {
		f.Add(v, "false")
	}
	f.Fuzz(func(t *testing.T, ignore, match string) {
		isTrue := func(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }
		isFalse := func(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "false") }

		b, err := parseBool(ignore)
		switch {
		case isTrue(ignore) && (err != nil || !b), isFalse(ignore) && (err != nil || b):
			t.Fatalf("parseBool(%q) = %v, %v", ignore, b, err)
		case !isTrue(ignore) && !isFalse(ignore) && (err == nil || !errors.Is(err, ErrNotBool)):
			t.Fatalf("parseBool(%q) = %v, %v; want ErrNotBool", ignore, b, err)
		}

		for _, key := range []string{NudgeIgnore, ReloaderIgnore} {
			if got := Ignored(map[string]string{key: ignore, ReloaderMatch: match}); got != isTrue(ignore) {
				t.Fatalf("Ignored(%s=%q) = %v", key, ignore, got)
			}
		}
		if got := Matched(map[string]string{ReloaderMatch: match, NudgeIgnore: ignore}); got != isTrue(match) {
			t.Fatalf("Matched(%q) = %v", match, got)
		}
		// Parse reads a workload's booleans as Ignored and Matched read a
		// source's.
		spec, errs := Parse("shop", map[string]string{NudgeAuto: ignore}, nil)
		if spec.ConfigMaps.Auto != isTrue(ignore) || spec.ConfigMaps.AutoOptOut != isFalse(ignore) || (len(errs) == 0) != (isTrue(ignore) || isFalse(ignore)) {
			t.Fatalf("Parse(%s=%q) = %+v, %v", NudgeAuto, ignore, view(spec), errs)
		}
	})
}
