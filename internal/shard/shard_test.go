package shard

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
)

func TestParse(t *testing.T) {
	for name, c := range map[string]struct {
		in         string
		start, end string
		err        bool
	}{
		"no value is the whole":              {in: ""},
		"the first of two":                   {in: "0/2", start: "0x0000000000000000", end: "0x8000000000000000"},
		"the last of two ends at 2^64":       {in: "1/2", start: "0x8000000000000000", end: "0x10000000000000000"},
		"the second of three":                {in: "1/3", start: "0x5555555555555555", end: "0xaaaaaaaaaaaaaaaa"},
		"one of one is the whole hash":       {in: "0/1", start: "0x0000000000000000", end: "0x10000000000000000"},
		"an explicit range, normalized":      {in: "0x0-0X8000000000000000", start: "0x0000000000000000", end: "0x8000000000000000"},
		"an explicit range up to 2^64":       {in: "0xc000000000000000-0x10000000000000000", start: "0xc000000000000000", end: "0x10000000000000000"},
		"an index past the count":            {in: "3/3", err: true},
		"a count of zero":                    {in: "0/0", err: true},
		"a negative index":                   {in: "-1/3", err: true},
		"not a number":                       {in: "a/3", err: true},
		"a range without 0x":                 {in: "0-8000000000000000", err: true},
		"a range backwards":                  {in: "0x8000000000000000-0x0", err: true},
		"an empty range":                     {in: "0x10-0x10", err: true},
		"a range past 2^64":                  {in: "0x0-0x10000000000000001", err: true},
		"neither form":                       {in: "shard-a", err: true},
		"a range whose end is not hex":       {in: "0x0-0xzz", err: true},
		"a range of 17 digits below 2^64 ok": {in: "0x00000000000000001-0x2", start: "0x0000000000000001", end: "0x0000000000000002"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s, err := Parse(c.in)
			if c.err {
				g.Expect(errors.Is(err, ErrInvalid)).To(BeTrue(), "got %v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Start).To(Equal(c.start))
			g.Expect(s.End).To(Equal(c.end))
		})
	}
}

// TestSharesPartition: the N shards of i/N own every namespace exactly once,
// Owns agrees with apimachinery's matcher (the API server's), and names
// with random suffixes (generateName's) spread about evenly.
func TestSharesPartition(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			g := NewWithT(t)
			var shards []Shard
			for i := range n {
				s, err := Parse(fmt.Sprintf("%d/%d", i, n))
				g.Expect(err).NotTo(HaveOccurred())
				shards = append(shards, s)
			}
			owned := make([]int, n)
			for range 2000 {
				ns := "team-" + utilrand.String(5)
				owners := 0
				for i, s := range shards {
					matched, err := s.Selector().Matches(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}})
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(s.Owns(ns)).To(Equal(matched), "Owns and the API server's matcher agree on %s for %s", ns, s.Name)
					if matched {
						owners++
						owned[i]++
					}
				}
				g.Expect(owners).To(Equal(1), "%s owned by exactly one of %d shards", ns, n)
			}
			for i := range owned {
				g.Expect(owned[i]).To(BeNumerically(">", 2000/n/2), "shard %d/%d owns about its share", i, n)
			}
		})
	}
}

func TestApply(t *testing.T) {
	g := NewWithT(t)
	s, _ := Parse("1/2")
	var opts metav1.ListOptions
	s.Apply(&opts)
	g.Expect(opts.ShardSelector).To(Equal("shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"))
	opts = metav1.ListOptions{}
	Shard{}.Apply(&opts)
	g.Expect(opts.ShardSelector).To(BeEmpty(), "the whole sends no selector")
	g.Expect(s.LeaseName("nudge.dev")).To(Equal("nudge.dev-shard-1-of-2"))
	r, _ := Parse("0x8000000000000000-0x10000000000000000")
	g.Expect(r.LeaseName("nudge.dev")).To(Equal("nudge.dev-shard-8000000000000000-10000000000000000"))
	g.Expect(Shard{}.LeaseName("nudge.dev")).To(Equal("nudge.dev"))
}

func TestPasses(t *testing.T) {
	s, _ := Parse("0/2")
	mine, theirs := namespaceIn(t, s, true), namespaceIn(t, s, false)
	cm := func(ns string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	}
	for name, c := range map[string]struct {
		event watch.Event
		want  bool
	}{
		"an object of the shard's namespace":      {watch.Event{Type: watch.Modified, Object: cm(mine)}, true},
		"an object of another shard's namespace":  {watch.Event{Type: watch.Added, Object: cm(theirs)}, false},
		"a deletion in another shard's namespace": {watch.Event{Type: watch.Deleted, Object: cm(theirs)}, false},
		"a bookmark, whatever its object":         {watch.Event{Type: watch.Bookmark, Object: cm(theirs)}, true},
		"an error":                                {watch.Event{Type: watch.Error, Object: &metav1.Status{}}, true},
		"a cluster-scoped object":                 {watch.Event{Type: watch.Added, Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: theirs}}}, true},
	} {
		t.Run(name, func(t *testing.T) {
			_, ok := s.Passes(c.event)
			NewWithT(t).Expect(ok).To(Equal(c.want))
		})
	}
}

func TestFilterList(t *testing.T) {
	g := NewWithT(t)
	s, _ := Parse("0/2")
	mine, theirs := namespaceIn(t, s, true), namespaceIn(t, s, false)
	list := &corev1.SecretList{Items: []corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: theirs, Name: "a"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: mine, Name: "b"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: theirs, Name: "c"}},
	}}
	g.Expect(s.FilterList(list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	g.Expect(list.Items[0].Name).To(Equal("b"))
	g.Expect(s.FilterList(&corev1.Secret{})).NotTo(Succeed(), "not a list")
}

// namespaceIn returns a namespace name s owns (or, with !owned, does not).
func namespaceIn(t *testing.T, s Shard, owned bool) string {
	t.Helper()
	for i := range 1000 {
		ns := fmt.Sprintf("ns-%d", i)
		if s.Owns(ns) == owned {
			return ns
		}
	}
	t.Fatalf("no namespace found")
	return ""
}

// TestBalanced: FNV-1a spreads names that differ in their last characters
// alone (team-1, team-2, ...) poorly over equal ranges; Balanced cuts the
// hash space at the names' quantiles instead.
func TestBalanced(t *testing.T) {
	g := NewWithT(t)
	var names []string
	for k := range 250 {
		names = append(names, fmt.Sprintf("bench-%d", k))
	}
	for _, n := range []int{2, 3, 4} {
		shards, err := Balanced(names, n)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(shards).To(HaveLen(n))
		g.Expect(shards[0].Start).To(Equal("0x0000000000000000"))
		g.Expect(shards[n-1].End).To(Equal(end))
		for i, s := range shards {
			parsed, err := Parse(s.Name)
			g.Expect(err).NotTo(HaveOccurred(), "the name is a --shard value")
			g.Expect(parsed).To(Equal(s))
			if i > 0 {
				g.Expect(s.Start).To(Equal(shards[i-1].End), "contiguous")
			}
			owned := 0
			for _, ns := range names {
				if s.Owns(ns) {
					owned++
				}
			}
			g.Expect(owned).To(BeNumerically("~", 250/n, 1), "shard %d of %d owns its share", i, n)
		}
	}
	_, err := Balanced([]string{"a"}, 2)
	g.Expect(err).To(HaveOccurred(), "fewer namespaces than shards")
}
