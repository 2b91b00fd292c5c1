package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

// JournalMaxBytes bounds the journal's data, in bytes, below the API
// server's limit on a Secret (1 MiB): a Job that would take it past is not
// deleted (ErrJournalFull) until others are created again.
const JournalMaxBytes = 768 << 10

// ErrJournalFull is returned when a Job's entry would take the journal
// past JournalMaxBytes.
var ErrJournalFull = errors.New("too many Jobs wait to be created again")

// Journal is the record of the Jobs nudge deleted to re-create and has not
// created yet, in one Secret of nudge's own namespace: an entry is written
// before the delete and removed after the create, and the Job controller
// reads the Secret once when it starts (one GET, no LIST). A nudge stopped
// between a delete and its create (kill -9, a lost leadership, a drained
// node) thus leaves the Job to the next one to start, which creates it, once.
//
// An entry holds the Job to create (the deleted Job's own spec, with nudge's
// state and trigger: no content of any source), the deleted Job's UID and the
// sources that changed. It lives in a Secret because a Job's spec may hold
// literal values as sensitive as the ones its sources do. Data key:
// "namespace.name" (a namespace holds no dot); value: JSON.
type Journal struct {
	// Client writes the Secret; Reader reads it from the API server (the
	// cache keeps Secrets' digests only).
	Client client.Client
	Reader client.Reader
	// Namespace and Name of the Secret.
	Namespace, Name string

	mu sync.Mutex // one change of the Secret at a time in this process
}

// journalEntry is one Job waiting to be created again.
type journalEntry struct {
	Job     *batchv1.Job  `json:"job"`
	OldUID  types.UID     `json:"oldUID"`
	Changed []refs.Source `json:"changed"`
}

// journalKey returns the data key of the Job key.
func journalKey(key types.NamespacedName) string { return key.Namespace + "." + key.Name }

// record writes p as the entry of key. It returns ErrJournalFull, or the
// API server's error; nil on a nil journal.
func (j *Journal) record(ctx context.Context, key types.NamespacedName, p pendingJob) error {
	if j == nil {
		return nil
	}
	v, err := json.Marshal(journalEntry{Job: p.job, OldUID: p.oldUID, Changed: p.changed})
	if err != nil {
		return fmt.Errorf("encoding the journal entry of Job %s: %w", key, err)
	}
	k := journalKey(key)
	return j.change(ctx, func(data map[string][]byte) (bool, error) {
		size := len(v)
		for other, old := range data {
			if other != k {
				size += len(other) + len(old)
			}
		}
		if size > JournalMaxBytes {
			return false, ErrJournalFull
		}
		data[k] = v
		return true, nil
	})
}

// clear removes the entry of key; nil on a nil journal or when there is none.
func (j *Journal) clear(ctx context.Context, key types.NamespacedName) error {
	if j == nil {
		return nil
	}
	k := journalKey(key)
	return j.change(ctx, func(data map[string][]byte) (bool, error) {
		_, ok := data[k]
		delete(data, k)
		return ok, nil
	})
}

// change applies edit to the Secret's data and writes it when edit reports a
// change, creating the Secret when there is none, and retrying on conflict.
func (j *Journal) change(ctx context.Context, edit func(map[string][]byte) (bool, error)) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s corev1.Secret
		err := j.Reader.Get(ctx, client.ObjectKey{Namespace: j.Namespace, Name: j.Name}, &s)
		missing := apierrors.IsNotFound(err)
		if err != nil && !missing {
			return err
		}
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		changed, err := edit(s.Data)
		if err != nil || !changed {
			return err
		}
		if missing {
			s.ObjectMeta = metav1.ObjectMeta{Namespace: j.Namespace, Name: j.Name, Labels: map[string]string{
				"app.kubernetes.io/name": "nudge", "app.kubernetes.io/component": "job-journal",
			}}
			s.Type = corev1.SecretTypeOpaque
			err = j.Client.Create(ctx, &s, client.FieldOwner(workload.FieldManager))
			if apierrors.IsAlreadyExists(err) {
				// Another replica created it: a conflict, read it again.
				return apierrors.NewConflict(corev1.Resource("secrets"), j.Name, err)
			}
			return err
		}
		return j.Client.Update(ctx, &s, client.FieldOwner(workload.FieldManager))
	})
	if err != nil {
		return fmt.Errorf("writing the Job journal, Secret %s/%s: %w", j.Namespace, j.Name, err)
	}
	return nil
}

// load returns the journal's entries; none when the Secret does not exist.
// An entry that does not decode is logged and skipped.
func (j *Journal) load(ctx context.Context) (map[types.NamespacedName]pendingJob, error) {
	var s corev1.Secret
	err := j.Reader.Get(ctx, client.ObjectKey{Namespace: j.Namespace, Name: j.Name}, &s)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the Job journal, Secret %s/%s: %w", j.Namespace, j.Name, err)
	}
	out := map[types.NamespacedName]pendingJob{}
	for k, v := range s.Data {
		var e journalEntry
		ns, name, ok := strings.Cut(k, ".")
		if err := json.Unmarshal(v, &e); !ok || err != nil || e.Job == nil ||
			e.Job.Namespace != ns || e.Job.Name != name {
			ctrl.LoggerFrom(ctx).Info("Skipped a malformed entry of the Job journal", "entry", k,
				"secret", j.Namespace+"/"+j.Name)
			continue
		}
		out[types.NamespacedName{Namespace: ns, Name: name}] = pendingJob{
			job: e.Job, oldUID: e.OldUID, changed: e.Changed, journaled: true,
		}
	}
	return out, nil
}

// Resume returns the start of a source (source.Func) that reads the
// journal into r's memory and queues each of its Jobs in a namespace nudge watches (watched) (two
// releases with the same system namespace and key Secret share a journal). The Job controller starts its
// workers once its sources have started, so it waits for the read (up to
// journalReadWait, trying every 2 s): no reconcile of a journaled Job runs
// before its entry is known. When the API server does not answer by then,
// it goes on trying in the background.
func (r *Recreator) Resume(watched func(ctx context.Context, namespace string) bool) func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	return func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		return r.resume(ctx, q, watched)
	}
}

func (r *Recreator) resume(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], watched func(ctx context.Context, namespace string) bool) error {
	read := func(ctx context.Context) (bool, error) {
		pending, err := r.Journal.load(ctx)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Could not read the Job journal (retrying)")
			return false, nil
		}
		for key, p := range pending {
			if !watched(ctx, key.Namespace) {
				continue // another release's, sharing the journal (see docs/scaling.md)
			}
			ctrl.LoggerFrom(ctx).Info("Resuming the re-creation of Job", "job", key, "sources", refs.Names(p.changed))
			r.jobs.put(key, p)
			q.Add(reconcile.Request{NamespacedName: key})
		}
		return true, nil
	}
	first, cancel := context.WithTimeout(ctx, journalReadWait)
	defer cancel()
	if wait.PollUntilContextCancel(first, 2*time.Second, true, read) != nil && ctx.Err() == nil {
		go func() { _ = wait.PollUntilContextCancel(ctx, 2*time.Second, true, read) }()
	}
	return nil
}

// journalReadWait is how long the Job controller's start waits for the
// journal, below controller-runtime's limit on a source's start (its
// CacheSyncTimeout, 2 minutes by default).
const journalReadWait = 30 * time.Second
