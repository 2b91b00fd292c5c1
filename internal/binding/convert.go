package binding

import (
	"errors"
	"fmt"
	"strconv"

	"nudge.dev/nudge/api/v1alpha1"
	"nudge.dev/nudge/internal/fingerprint"
)

// ErrValue is wrapped by Convert's errors. Its messages never hold the value.
var ErrValue = errors.New("invalid value")

// Convert returns raw, a Secret's or ConfigMap's value, as the JSON value of
// type t: a string (the default), an int64 (strconv.ParseInt, base 10) or a
// bool (strconv.ParseBool). The error wraps ErrValue and names the type,
// never the value.
func Convert(raw []byte, t v1alpha1.ValueType) (any, error) {
	switch t {
	case v1alpha1.TypeString, "":
		return string(raw), nil
	case v1alpha1.TypeInteger:
		i, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: not a base-10 64-bit integer", ErrValue)
		}
		return i, nil
	case v1alpha1.TypeBoolean:
		b, err := strconv.ParseBool(string(raw))
		if err != nil {
			return nil, fmt.Errorf("%w: not a boolean", ErrValue)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%w: unknown type %q", ErrValue, t)
}

// Matches reports whether current, a field of the target as decoded from JSON,
// is the value whose SHA-256 is digest (a fingerprint.Digests value) once
// converted to type t. An integer or boolean compares in its canonical form
// ("42", "true"): a source written otherwise ("042", "True") never matches and
// is applied once more.
func Matches(current any, digest string, t v1alpha1.ValueType) bool {
	var s string
	switch v := current.(type) {
	case string:
		if t != v1alpha1.TypeString && t != "" {
			return false
		}
		s = v
	case int64:
		if t != v1alpha1.TypeInteger {
			return false
		}
		s = strconv.FormatInt(v, 10)
	case float64:
		if t != v1alpha1.TypeInteger || v != float64(int64(v)) {
			return false
		}
		s = strconv.FormatInt(int64(v), 10)
	case bool:
		if t != v1alpha1.TypeBoolean {
			return false
		}
		s = strconv.FormatBool(v)
	default:
		return false
	}
	return fingerprint.SumString(s) == digest
}
