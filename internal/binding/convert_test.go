package binding_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/api/v1alpha1"
	"nudge.dev/nudge/internal/binding"
	"nudge.dev/nudge/internal/fingerprint"
)

func TestConvert(t *testing.T) {
	tests := map[string]struct {
		raw     string
		typ     v1alpha1.ValueType
		want    any
		wantErr string
	}{
		"a string is the bytes as they are":       {raw: " AKIA 1 ", typ: v1alpha1.TypeString, want: " AKIA 1 "},
		"no type is a string":                     {raw: "x", want: "x"},
		"an integer is parsed base 10":            {raw: "-42", typ: v1alpha1.TypeInteger, want: int64(-42)},
		"a boolean is parsed as Go does":          {raw: "true", typ: v1alpha1.TypeBoolean, want: true},
		"a word is not an integer":                {raw: "s3cr3t-value", typ: v1alpha1.TypeInteger, wantErr: "not a base-10 64-bit integer"},
		"a number beyond 64 bits is not integer":  {raw: "99999999999999999999", typ: v1alpha1.TypeInteger, wantErr: "not a base-10"},
		"yes is not a boolean":                    {raw: "s3cr3t-yes", typ: v1alpha1.TypeBoolean, wantErr: "not a boolean"},
		"an unknown type is refused, not guessed": {raw: "1", typ: "float", wantErr: "unknown type"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := binding.Convert([]byte(tc.raw), tc.typ)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(binding.ErrValue))
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring(tc.raw), "the message never holds the value")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestMatches(t *testing.T) {
	sum := fingerprint.SumString
	tests := map[string]struct {
		current any
		digest  string
		typ     v1alpha1.ValueType
		want    bool
	}{
		"the same string matches":                           {current: "AK", digest: sum("AK"), typ: v1alpha1.TypeString, want: true},
		"another string does not":                           {current: "AK2", digest: sum("AK"), typ: v1alpha1.TypeString},
		"an integer matches its canonical form":             {current: int64(42), digest: sum("42"), typ: v1alpha1.TypeInteger, want: true},
		"an integer decoded as a float matches too":         {current: float64(42), digest: sum("42"), typ: v1alpha1.TypeInteger, want: true},
		"a non-canonical source is applied once more":       {current: int64(42), digest: sum("042"), typ: v1alpha1.TypeInteger},
		"a boolean matches its canonical form":              {current: false, digest: sum("false"), typ: v1alpha1.TypeBoolean, want: true},
		"a string where an integer is bound does not match": {current: "42", digest: sum("42"), typ: v1alpha1.TypeInteger},
		"an object never matches":                           {current: map[string]any{}, digest: sum("{}"), typ: v1alpha1.TypeString},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(binding.Matches(tc.current, tc.digest, tc.typ)).To(Equal(tc.want))
		})
	}
}
