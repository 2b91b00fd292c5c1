package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"nudge.dev/nudge/hack/bench/watch"
)

// changer changes sources with one merge patch each, through the admin
// client.
type changer struct {
	cs   kubernetes.Interface
	data content
	seq  atomic.Int64 // version of the next content change, run-wide
}

// Change rewrites dataKey of s with content never used before, and returns
// when the patch was sent (the start of a latency) and how long the API
// server took to answer it.
func (c *changer) Change(ctx context.Context, s Source) (sent time.Time, rtt time.Duration, err error) {
	sent, _, err = c.ChangeRV(ctx, s)
	return sent, time.Since(sent), err
}

// ChangeRV rewrites dataKey of s as Change does, and returns when the patch
// was sent and the resourceVersion the API server gave the write: an etcd
// revision, global to the cluster, so that it orders the write against
// every other (see watch.ParseRV).
func (c *changer) ChangeRV(ctx context.Context, s Source) (sent time.Time, rv uint64, err error) {
	v := int(c.seq.Add(1))
	value := c.data.value(s.Namespace+"/"+s.Name, 0, v)
	var body []byte
	if s.Kind == secretKind {
		body, err = json.Marshal(map[string]any{"data": map[string][]byte{dataKey: []byte(value)}})
	} else {
		body, err = json.Marshal(map[string]any{"data": map[string]string{dataKey: value}})
	}
	if err != nil {
		return sent, 0, err
	}
	sent = time.Now()
	written, err := c.patch(ctx, s, body)
	if err != nil {
		return sent, 0, err
	}
	rv, err = watch.ParseRV(written)
	return sent, rv, err
}

// Relabel sets a label of s to value and changes nothing else.
func (c *changer) Relabel(ctx context.Context, s Source, value string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"bench.nudge.dev/touched": value}}})
	if err != nil {
		return err
	}
	_, err = c.patch(ctx, s, body)
	return err
}

// patch merge-patches s with body and returns the resourceVersion of the
// write.
func (c *changer) patch(ctx context.Context, s Source, body []byte) (string, error) {
	var obj metav1.Object
	var err error
	if s.Kind == secretKind {
		obj, err = c.cs.CoreV1().Secrets(s.Namespace).Patch(ctx, s.Name, types.MergePatchType, body, metav1.PatchOptions{})
	} else {
		obj, err = c.cs.CoreV1().ConfigMaps(s.Namespace).Patch(ctx, s.Name, types.MergePatchType, body, metav1.PatchOptions{})
	}
	if err != nil {
		return "", fmt.Errorf("patching %s: %w", s, err)
	}
	return obj.GetResourceVersion(), nil
}
