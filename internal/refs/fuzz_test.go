package refs

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// fuzzSpecs are pod specs, as JSON, for f.Add beside the corpus in
// testdata/fuzz/FuzzFromPodSpec.
var fuzzSpecs = []string{
	`{}`,
	`{"containers":[{"name":"app","envFrom":[{"configMapRef":{"name":"cfg"}},{"secretRef":{"name":"db","optional":true}}]}]}`,
	`{"containers":[{"name":"app","env":[` +
		`{"name":"A","valueFrom":{"configMapKeyRef":{"name":"cfg","key":"b"}}},` +
		`{"name":"B","valueFrom":{"configMapKeyRef":{"name":"cfg","key":"a","optional":true}}},` +
		`{"name":"C","valueFrom":{"secretKeyRef":{"name":"db","key":"password","optional":false}}},` +
		`{"name":"D","valueFrom":{"secretKeyRef":{"name":"","key":"x"}}}]}]}`,
	`{"initContainers":[{"name":"init","envFrom":[{"configMapRef":{"name":"cfg","optional":true}}]}],` +
		`"ephemeralContainers":[{"name":"debug","env":[{"name":"T","valueFrom":{"secretKeyRef":{"name":"token","key":"t"}}}]}],` +
		`"containers":[{"name":"app","env":[{"name":"A","valueFrom":{"configMapKeyRef":{"name":"cfg","key":"a"}}}]}]}`,
	`{"volumes":[` +
		`{"name":"c","configMap":{"name":"cfg","items":[{"key":"b","path":"b"},{"key":"a","path":"a"},{"key":"a","path":"a2"}]}},` +
		`{"name":"s","secret":{"secretName":"tls","optional":true}},` +
		`{"name":"p","projected":{"sources":[{"configMap":{"name":"cfg"}},{"secret":{"name":"tls","items":[{"key":"ca.crt","path":"ca"}]}},` +
		`{"serviceAccountToken":{"path":"token"}},{"downwardAPI":{}}]}},` +
		`{"name":"csi","csi":{"driver":"x","nodePublishSecretRef":{"name":"not-read"}}}],` +
		`"imagePullSecrets":[{"name":"regcred"}]}`,
}

func FuzzFromPodSpec(f *testing.F) {
	for _, s := range fuzzSpecs {
		f.Add([]byte(s), "shop")
	}
	f.Fuzz(func(t *testing.T, data []byte, namespace string) {
		var spec corev1.PodSpec
		if err := json.Unmarshal(data, &spec); err != nil {
			return
		}
		got := FromPodSpec(namespace, &spec)

		if again := FromPodSpec(namespace, &spec); !reflect.DeepEqual(got, again) {
			t.Fatalf("FromPodSpec is not deterministic:\n%+v\n%+v", got, again)
		}
		for i, r := range got {
			if i > 0 && got[i-1].Compare(r.Source) >= 0 {
				t.Fatalf("references not sorted by source, one per source: %v then %v", got[i-1].Source, r.Source)
			}
			if r.Namespace != namespace || r.Name == "" || (r.Kind != ConfigMap && r.Kind != Secret) {
				t.Fatalf("reference %+v: want a named ConfigMap or Secret in %q", r, namespace)
			}
			if r.Keys != nil && (len(r.Keys) == 0 || !slices.IsSorted(r.Keys) || len(slices.Compact(slices.Clone(r.Keys))) != len(r.Keys)) {
				t.Fatalf("reference %+v: keys must be nil or sorted, unique and not empty", r)
			}
		}

		// Every use the pod spec makes is covered, and nothing else.
		uses := usesOf(namespace, &spec)
		sources := map[Source]bool{}
		for _, u := range uses {
			sources[u.Source] = true
			i := slices.IndexFunc(got, func(r Reference) bool { return r.Source == u.Source })
			if i < 0 {
				t.Fatalf("use %+v has no reference in %+v", u, got)
			}
			r := got[i]
			if !r.Whole() && (u.Whole() || !slices.Contains(r.Keys, u.Keys[0])) {
				t.Fatalf("use %+v is not covered by %+v", u, r)
			}
			if r.Optional && !u.Optional {
				t.Fatalf("required use %+v made %+v optional", u, r)
			}
		}
		if len(sources) != len(got) {
			t.Fatalf("%d sources used, %d references: %+v", len(sources), len(got), got)
		}

		// Merge is idempotent and does not depend on the order of the uses.
		if len(got) > 0 {
			if m := Merge(got); !reflect.DeepEqual(m, got) {
				t.Fatalf("Merge of merged references changed them:\n%+v\n%+v", got, m)
			}
			if m := Merge(append(slices.Clone(got), got...)); !reflect.DeepEqual(m, got) {
				t.Fatalf("Merge of the references twice over differs:\n%+v\n%+v", got, m)
			}
			slices.Reverse(uses)
			if m := Merge(uses); !reflect.DeepEqual(m, got) {
				t.Fatalf("Merge of the uses in another order differs:\n%+v\n%+v", got, m)
			}
		}
	})
}

// usesOf lists every use the pod spec makes, one Reference each (Keys nil or
// one key), walking the spec in another order than FromPodSpec does:
// volumes first, then containers from the last.
func usesOf(namespace string, spec *corev1.PodSpec) []Reference {
	var out []Reference
	use := func(kind Kind, name string, key *string, optional *bool) {
		if name == "" {
			return
		}
		r := Reference{Source: Source{Kind: kind, Namespace: namespace, Name: name}, Optional: optional != nil && *optional}
		if key != nil {
			r.Keys = []string{*key}
		}
		out = append(out, r)
	}
	whole := func(kind Kind, name string, items []corev1.KeyToPath, optional *bool) {
		if len(items) == 0 {
			use(kind, name, nil, optional)
		}
		for _, it := range items {
			use(kind, name, &it.Key, optional)
		}
	}
	for _, v := range spec.Volumes {
		if c := v.ConfigMap; c != nil {
			whole(ConfigMap, c.Name, c.Items, c.Optional)
		}
		if s := v.Secret; s != nil {
			whole(Secret, s.SecretName, s.Items, s.Optional)
		}
		if v.Projected != nil {
			for _, p := range v.Projected.Sources {
				if c := p.ConfigMap; c != nil {
					whole(ConfigMap, c.Name, c.Items, c.Optional)
				}
				if s := p.Secret; s != nil {
					whole(Secret, s.Name, s.Items, s.Optional)
				}
			}
		}
	}
	var containers []corev1.Container
	containers = append(containers, spec.Containers...)
	containers = append(containers, spec.InitContainers...)
	for _, e := range spec.EphemeralContainers {
		containers = append(containers, corev1.Container(e.EphemeralContainerCommon))
	}
	for _, c := range slices.Backward(containers) {
		for _, e := range c.EnvFrom {
			if r := e.ConfigMapRef; r != nil {
				use(ConfigMap, r.Name, nil, r.Optional)
			}
			if r := e.SecretRef; r != nil {
				use(Secret, r.Name, nil, r.Optional)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				use(ConfigMap, r.Name, &r.Key, r.Optional)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				use(Secret, r.Name, &r.Key, r.Optional)
			}
		}
	}
	return out
}
