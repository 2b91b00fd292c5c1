package shard

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
)

// Key is the field a shard hashes: an object's namespace, so that a
// workload and the sources in its namespace always share a shard.
const Key = "object.metadata.namespace"

// end is the exclusive end of the hash space, 2^64, as the API writes it.
const end = "0x10000000000000000"

// ErrInvalid: a --shard value is neither i/N nor a hash range.
var ErrInvalid = errors.New(`--shard must be "i/N" (0 <= i < N) or a hash range "0xSTART-0xEND" (hexadecimal, START < END <= 0x10000000000000000)`)

// Shard is the part of the hash space one nudge owns: [Start, End) over
// the FNV-1a 64 hash of a namespace's name, both 0x-prefixed lowercase
// hexadecimal of 16 digits (End may be 0x10000000000000000, 2^64). The zero
// Shard owns everything.
type Shard struct {
	// Name is the flag's value as given ("1/3", or the range): the
	// `shard` label of nudge_shard_info.
	Name       string
	Start, End string
}

// Parse reads a --shard value: "i/N", the i-th of N equal ranges (i from
// 0), or an explicit range "0xSTART-0xEND". An empty value is the zero
// Shard, which owns every namespace. It returns an error wrapping ErrInvalid
// for anything else.
func Parse(s string) (Shard, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Shard{}, nil
	}
	if i, n, ok := strings.Cut(s, "/"); ok {
		return ofN(s, i, n)
	}
	start, stop, ok := strings.Cut(s, "-")
	if !ok {
		return Shard{}, fmt.Errorf("%q: %w", s, ErrInvalid)
	}
	a, err := hex(start)
	if err != nil {
		return Shard{}, fmt.Errorf("%q: %w", s, err)
	}
	b, err := hex(stop)
	if err != nil {
		return Shard{}, fmt.Errorf("%q: %w", s, err)
	}
	if !sharding.HexLess(a, b) {
		return Shard{}, fmt.Errorf("%q: the start is not below the end: %w", s, ErrInvalid)
	}
	return Shard{Name: s, Start: a, End: b}, nil
}

// ofN returns the i-th of n equal ranges: [i·2^64/n, (i+1)·2^64/n).
func ofN(s, i, n string) (Shard, error) {
	idx, err1 := strconv.ParseUint(i, 10, 64)
	count, err2 := strconv.ParseUint(n, 10, 64)
	if err1 != nil || err2 != nil || count == 0 || idx >= count {
		return Shard{}, fmt.Errorf("%q: %w", s, ErrInvalid)
	}
	start, _ := bits.Div64(idx, 0, count) // idx < count: no overflow
	stop := end
	if idx+1 < count {
		q, _ := bits.Div64(idx+1, 0, count)
		stop = fmt.Sprintf("0x%016x", q)
	}
	return Shard{Name: strconv.FormatUint(idx, 10) + "/" + strconv.FormatUint(count, 10), Start: fmt.Sprintf("0x%016x", start), End: stop}, nil
}

// hex normalizes a 0x-prefixed hexadecimal bound to the API's form: 16
// lowercase digits, or 0x10000000000000000.
func hex(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	digits, ok := strings.CutPrefix(s, "0x")
	if !ok || digits == "" {
		return "", ErrInvalid
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "1"+strings.Repeat("0", 16) {
		return end, nil
	}
	v, err := strconv.ParseUint("0"+digits, 16, 64)
	if err != nil {
		return "", ErrInvalid
	}
	return fmt.Sprintf("0x%016x", v), nil
}

// Whole reports whether s owns every namespace (no --shard).
func (s Shard) Whole() bool { return s.Start == "" }

// Selector returns s as apimachinery's shard selector on Key; Everything
// for the whole.
func (s Shard) Selector() sharding.Selector {
	if s.Whole() {
		return sharding.Everything()
	}
	return sharding.NewSelector(sharding.ShardRangeRequirement{Key: Key, Start: s.Start, End: s.End})
}

// Owns reports whether namespace is s's: its FNV-1a 64 hash in [Start, End).
// The empty namespace (a cluster-scoped object) is everyone's.
func (s Shard) Owns(namespace string) bool {
	if s.Whole() || namespace == "" {
		return true
	}
	h := "0x" + sharding.HashField(namespace)
	return !sharding.HexLess(h, s.Start) && sharding.HexLess(h, s.End)
}

// Apply sets s's selector on a list or watch request, the
// metav1.ListOptions.ShardSelector the API server reads with the
// ShardedListAndWatch feature gate ("shardRange(object.metadata.namespace,
// '0x…', '0x…')") and ignores without it.
func (s Shard) Apply(opts *metav1.ListOptions) {
	if !s.Whole() {
		opts.ShardSelector = s.Selector().String()
	}
}

// LeaseName returns the leader-election Lease of s: base for the whole,
// base-shard-i-of-N for "i/N", base-shard-START-END (the range's digits) for
// an explicit range. Each shard elects its own leader, and a reshard (new
// ranges) starts new Leases. The chart grants the Leases of i-of-N by name.
func (s Shard) LeaseName(base string) string {
	if s.Whole() {
		return base
	}
	if i, n, ok := strings.Cut(s.Name, "/"); ok {
		return base + "-shard-" + i + "-of-" + n
	}
	return base + "-shard-" + strings.TrimPrefix(s.Start, "0x") + "-" + strings.TrimPrefix(s.End, "0x")
}

// Balanced returns n contiguous shards covering the whole hash space that
// split namespaces as evenly as their hashes allow, cut at the hashes'
// quantiles: i/N's equal ranges split names with random suffixes
// (generateName's) evenly, but FNV-1a barely moves the top bits of names
// that differ in their last characters alone (team-1, team-2, ...), so
// equal ranges can leave a shard empty. Each Shard's Name is its explicit
// range, a --shard value. It returns an error when n < 1 or the names have
// fewer than n distinct hashes.
func Balanced(namespaces []string, n int) ([]Shard, error) {
	hashes := make([]uint64, 0, len(namespaces))
	for _, ns := range namespaces {
		v, _ := strconv.ParseUint(sharding.HashField(ns), 16, 64)
		hashes = append(hashes, v)
	}
	slices.Sort(hashes)
	hashes = slices.Compact(hashes)
	if n < 1 || len(hashes) < n {
		return nil, fmt.Errorf("cannot split %d distinct namespace hashes into %d shards", len(hashes), n)
	}
	out := make([]Shard, n)
	start := "0x0000000000000000"
	for i := range n {
		stop := end
		if i+1 < n {
			stop = fmt.Sprintf("0x%016x", hashes[(i+1)*len(hashes)/n])
		}
		out[i] = Shard{Name: start + "-" + stop, Start: start, End: stop}
		start = stop
	}
	return out, nil
}
