package watch

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/testbed"
)

// eventLog is a handler that notes each event it receives, in order.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf(format, args...))
}

func (l *eventLog) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

func (l *eventLog) handler() toolscache.ResourceEventHandler {
	name := func(obj any) string { return obj.(client.Object).GetName() }
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if initial {
				l.note("listed %s", name(obj))
			} else {
				l.note("created %s", name(obj))
			}
		},
		UpdateFunc: func(_, obj any) { l.note("updated %s to %s", name(obj), obj.(*corev1.ConfigMap).Data["v"]) },
		DeleteFunc: func(obj any) { l.note("deleted %s", name(obj)) },
	}
}

// TestFanOut: a source informer of a fanned-out cache carries one handler
// for every handler added to it. A handler added before the informer
// started receives its initial list; one added once it synced does not
// (nudge's source handlers drop it), and both then receive every event in
// order; a handler removed receives no more. Other kinds' informers are the
// cache's own.
func TestFanOut(t *testing.T) {
	g := NewWithT(t)
	p := testbed.ForTest(t, testbed.Options{Mode: testbed.APIServer})
	ctx := t.Context()
	ns, err := p.GenerateNamespace(ctx, "fanout-")
	g.Expect(err).NotTo(HaveOccurred())
	direct, err := client.New(p.Config(), client.Options{Scheme: scheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	configMap := func(name, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"v": v}}
	}
	g.Expect(direct.Create(ctx, configMap("listed", "1"))).To(Succeed())

	c, err := FanOut(cache.New)(p.Config(), cache.Options{Scheme: scheme.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	g.Expect(err).NotTo(HaveOccurred())
	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inf).To(BeAssignableToTypeOf(&fannedInformer{}), "a ConfigMap informer is fanned out")
	again, err := c.GetInformerForKind(ctx, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(inf), "one fan-out per kind, by object or by kind")
	deployments, err := c.GetInformer(ctx, &appsv1.Deployment{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deployments).NotTo(BeAssignableToTypeOf(&fannedInformer{}), "a workload kind's informer is the cache's own")

	early, late := &eventLog{}, &eventLog{}
	_, err = inf.AddEventHandler(early.handler())
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()
	synced, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	g.Expect(c.WaitForCacheSync(synced)).To(BeTrue(), "the cache synced")
	reg, err := inf.AddEventHandler(late.handler())
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(reg.HasSynced).WithTimeout(10*time.Second).Should(BeTrue(), "the late handler's registration synced")

	g.Expect(direct.Create(ctx, configMap("created", "1"))).To(Succeed())
	g.Expect(direct.Update(ctx, configMap("listed", "2"))).To(Succeed())
	g.Expect(direct.Delete(ctx, configMap("created", "1"))).To(Succeed())
	both := []string{"created created", "updated listed to 2", "deleted created"}
	g.Eventually(late.seen).WithTimeout(10*time.Second).Should(Equal(both),
		"the handler added once the informer synced receives the later events in order, and no synthetic add of the ConfigMap listed")
	g.Eventually(early.seen).WithTimeout(10*time.Second).Should(Equal(append([]string{"listed listed"}, both...)),
		"the handler added before the informer started receives its initial list, then the same events")

	g.Expect(inf.RemoveEventHandler(reg)).To(Succeed())
	g.Expect(inf.RemoveEventHandler(reg)).To(Succeed(), "removing is idempotent")
	g.Expect(direct.Update(ctx, configMap("listed", "3"))).To(Succeed())
	g.Expect(direct.Delete(ctx, configMap("listed", "3"))).To(Succeed())
	g.Eventually(early.seen).WithTimeout(10*time.Second).Should(HaveLen(len(both)+3), "the remaining handler receives the update and the deletion")
	g.Expect(late.seen()).To(Equal(both), "the removed handler received nothing more")
}
