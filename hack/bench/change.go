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
	err = c.patch(ctx, s, body)
	return sent, time.Since(sent), err
}

// Relabel sets a label of s to value and changes nothing else.
func (c *changer) Relabel(ctx context.Context, s Source, value string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"bench.nudge.dev/touched": value}}})
	if err != nil {
		return err
	}
	return c.patch(ctx, s, body)
}

func (c *changer) patch(ctx context.Context, s Source, body []byte) error {
	var err error
	if s.Kind == secretKind {
		_, err = c.cs.CoreV1().Secrets(s.Namespace).Patch(ctx, s.Name, types.MergePatchType, body, metav1.PatchOptions{})
	} else {
		_, err = c.cs.CoreV1().ConfigMaps(s.Namespace).Patch(ctx, s.Name, types.MergePatchType, body, metav1.PatchOptions{})
	}
	if err != nil {
		return fmt.Errorf("patching %s: %w", s, err)
	}
	return nil
}
