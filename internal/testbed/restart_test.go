package testbed

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Without the watch cache, a watch from before a compaction fails with 410
// Gone; a restarted kube-apiserver keeps the port, the data and the clients.
func TestCompactEtcdAndRestartAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	p := ForTest(t, Options{Mode: APIServer, DisableWatchCache: true})
	cs, err := kubernetes.NewForConfig(p.Config())
	g.Expect(err).NotTo(HaveOccurred())
	ns, err := p.GenerateNamespace(ctx, "restart-")
	g.Expect(err).NotTo(HaveOccurred())

	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "before"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	// Two writes after it: etcd keeps the revision it compacts to, so a
	// watch from "before" needs the revision of "after-1", which is gone.
	for _, name := range []string{"after-1", "after-2"} {
		_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}
	rev, err := p.CompactEtcd(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rev).To(BeNumerically(">", 1), "the revision compacted to")

	// A watch from the first ConfigMap's version needs history that is gone.
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion})
	if err == nil {
		defer w.Stop()
		var ev watch.Event
		g.Eventually(w.ResultChan()).WithTimeout(10*time.Second).Should(Receive(&ev), "the watch's first event")
		g.Expect(ev.Type).To(Equal(watch.Error), "a watch from a compacted revision ends in an error")
		err = apierrors.FromObject(ev.Object)
	}
	g.Expect(apierrors.IsResourceExpired(err) || apierrors.IsGone(err)).To(BeTrue(), "410 Gone, got %v", err)

	oldPID := p.PID("kube-apiserver")
	g.Expect(comm(oldPID)).To(Equal("kube-apiserver"), "PID names kube-apiserver's process")
	g.Expect(comm(p.PID("etcd"))).To(Equal("etcd"), "PID names etcd's process")
	g.Expect(p.PID("kube-scheduler")).To(BeZero(), "no scheduler in apiserver mode")
	begin := time.Now()
	g.Expect(p.RestartAPIServer(ctx)).To(Succeed())
	t.Logf("Measured: kube-apiserver restarted in %v", time.Since(begin).Round(time.Millisecond))
	g.Expect(p.PID("kube-apiserver")).NotTo(Equal(oldPID), "PID names the new kube-apiserver")
	g.Expect(comm(p.PID("kube-apiserver"))).To(Equal("kube-apiserver"))
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "before", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "the client from before the restart reads through the new kube-apiserver")
	g.Expect(got.Data).To(Equal(cm.Data), "the data is etcd's, kept across the restart")
	after, err := p.EtcdRevision(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).To(BeNumerically(">=", rev))

	stopAndExpectNoProcess(t, p)
}

// comm returns the command name of process pid (/proc/PID/comm), "" when
// it cannot be read.
func comm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
