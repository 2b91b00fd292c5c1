package record

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"

	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/testbed"
)

// BenchmarkEventWrite: the CPU of this process (the recorder's side, the
// API server apart) per Event written, in protobuf as the recorder writes
// them and in JSON, client-go's default, which it wrote before:
//
//	go test ./internal/record -run - -bench EventWrite -benchmem
//
// cpu-µs/event is user and system time over b.N Events, written one after
// another by one writer, as each of the recorder's writers does.
func BenchmarkEventWrite(b *testing.B) {
	p := testbed.ForTest(b, testbed.Options{Mode: testbed.APIServer})
	scheme := k8sruntime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	for _, format := range []string{"protobuf", "json"} {
		b.Run(format, func(b *testing.B) {
			ctx := b.Context()
			ns, err := p.GenerateNamespace(ctx, "events-")
			if err != nil {
				b.Fatal(err)
			}
			r, err := NewRecorder(ctx, p.Config(), scheme, options.Default().QPS, options.Default().Burst, &Lull{}, prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			if format == "json" {
				cfg := p.Config()
				cfg.QPS, cfg.Burst = eventsQPS, eventsBurst
				cs, err := eventsv1client.NewForConfig(cfg)
				if err != nil {
					b.Fatal(err)
				}
				r.client = cs.RESTClient()
			}
			r.quiet, r.maxDelay = 0, 0
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", UID: "uid", ResourceVersion: "1"}}
			events := make([]*eventsv1.Event, b.N+1) // the first one to make the connection before the clock runs
			for i := range events {
				cm.UID = types.UID(fmt.Sprint("uid-", i))
				e, err := r.event(time.Now(), cm, nil, corev1.EventTypeNormal, ReasonRolled, "Roll", "Rolled for ConfigMap/app")
				if err != nil {
					b.Fatal(err)
				}
				events[i] = e
			}
			r.write(ctx, events[b.N])
			b.ReportAllocs()
			before := cpu()
			b.ResetTimer()
			for i := range b.N {
				r.write(ctx, events[i])
			}
			b.StopTimer()
			b.ReportMetric(float64((cpu()-before).Microseconds())/float64(b.N), "cpu-µs/event")
		})
	}
}

// cpu returns the process's user and system time so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
