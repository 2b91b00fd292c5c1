package binding

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
)

func TestReadsShareOneGetWhileHeld(t *testing.T) {
	g := NewWithT(t)
	var rs reads
	var gets atomic.Int32
	started, finish := make(chan struct{}), make(chan struct{})
	fetch := func(context.Context) (map[string][]byte, error) {
		if gets.Add(1) == 1 {
			close(started)
			<-finish
		}
		return map[string][]byte{"k": []byte("v")}, nil
	}
	ctx := context.Background()
	const users = 8
	releases := make(chan func(), users)
	var wg sync.WaitGroup
	wg.Go(func() {
		data, release, err := rs.get(ctx, "Secret/ns/s@1", fetch)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(data).To(HaveKeyWithValue("k", []byte("v")))
		releases <- release
	})
	<-started
	for range users - 1 {
		wg.Go(func() {
			data, release, err := rs.get(ctx, "Secret/ns/s@1", fetch)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(data).To(HaveKeyWithValue("k", []byte("v")))
			releases <- release
		})
	}
	g.Eventually(func() int {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		return rs.byKey["Secret/ns/s@1"].users
	}).Should(Equal(users), "every reader waits on the GET in flight")
	close(finish)
	wg.Wait()
	g.Expect(gets.Load()).To(BeEquivalentTo(1), "readers that overlap share one GET")

	// A reader that starts while the data is still held shares it too.
	data, release, err := rs.get(ctx, "Secret/ns/s@1", fetch)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data).To(HaveKey("k"))
	release()
	g.Expect(gets.Load()).To(BeEquivalentTo(1), "the data held by the first readers is shared")

	// Another version is another GET.
	_, other, err := rs.get(ctx, "Secret/ns/s@2", fetch)
	g.Expect(err).NotTo(HaveOccurred())
	other()
	g.Expect(gets.Load()).To(BeEquivalentTo(2), "a new version is read again")

	for range users {
		(<-releases)()
	}
	g.Expect(rs.held()).To(BeZero(), "the data is dropped when the last reader releases it")
	_, again, err := rs.get(ctx, "Secret/ns/s@1", fetch)
	g.Expect(err).NotTo(HaveOccurred())
	again()
	g.Expect(gets.Load()).To(BeEquivalentTo(3), "nothing is cached after the last release")
}

func TestReadsDoNotShareAFailure(t *testing.T) {
	g := NewWithT(t)
	var rs reads
	boom := errors.New("boom")
	var gets int
	fetch := func(context.Context) (map[string][]byte, error) {
		gets++
		if gets == 1 {
			return nil, boom
		}
		return map[string][]byte{"k": []byte("v")}, nil
	}
	_, release, err := rs.get(context.Background(), "Secret/ns/s@1", fetch)
	g.Expect(err).To(MatchError(boom))
	// Held by a reader that keeps it: the failed read is not shared.
	data, again, err := rs.get(context.Background(), "Secret/ns/s@1", fetch)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data).To(HaveKey("k"))
	g.Expect(gets).To(Equal(2), "a failed GET is tried again by the next reader")
	release()
	again()
	g.Expect(rs.held()).To(BeZero())
}
