package record

import (
	"context"
	"testing"
	"time"
)

// waitDone runs l.Wait and fails t if it has not returned within 10 s.
func waitDone(t *testing.T, ctx context.Context, l *Lull, quiet time.Duration, deadline time.Time) {
	t.Helper()
	waitDoneSince(t, ctx, l, time.Time{}, quiet, deadline)
}

// waitDoneSince runs l.WaitSince and fails t if it has not returned within
// 10 s.
func waitDoneSince(t *testing.T, ctx context.Context, l *Lull, since time.Time, quiet time.Duration, deadline time.Time) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		l.WaitSince(ctx, since, quiet, deadline)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Lull.Wait did not return within 10 s")
	}
}

func TestLull(t *testing.T) {
	t.Run("without writes it does not wait", func(t *testing.T) {
		start := time.Now()
		waitDone(t, t.Context(), &Lull{}, time.Hour, start.Add(time.Hour))
	})
	t.Run("it waits for quiet after the last write", func(t *testing.T) {
		var l Lull
		wrote := time.Now()
		l.Wrote(wrote)
		waitDone(t, t.Context(), &l, 50*time.Millisecond, wrote.Add(time.Hour))
		if since := time.Since(wrote); since < 50*time.Millisecond {
			t.Errorf("returned %v after the write, before 50ms of quiet", since)
		}
	})
	t.Run("it stops waiting at the deadline while writes go on", func(t *testing.T) {
		var l Lull
		ctx, stop := context.WithCancel(t.Context())
		defer stop()
		l.Wrote(time.Now())
		go func() {
			for ctx.Err() == nil {
				l.Wrote(time.Now())
				time.Sleep(time.Millisecond)
			}
		}()
		deadline := time.Now().Add(50 * time.Millisecond)
		waitDone(t, t.Context(), &l, time.Hour, deadline)
		if time.Now().Before(deadline) {
			t.Error("returned before the deadline, with writes going on")
		}
	})
	t.Run("since counts as a write", func(t *testing.T) {
		var l Lull
		l.Wrote(time.Now().Add(-time.Hour))
		since := time.Now()
		waitDoneSince(t, t.Context(), &l, since, 50*time.Millisecond, since.Add(time.Hour))
		if waited := time.Since(since); waited < 50*time.Millisecond {
			t.Errorf("returned %v after since, before 50ms of quiet", waited)
		}
	})
	t.Run("a write after since counts from the write", func(t *testing.T) {
		var l Lull
		since := time.Now()
		wrote := since.Add(100 * time.Millisecond)
		l.Wrote(wrote)
		waitDoneSince(t, t.Context(), &l, since, 50*time.Millisecond, since.Add(time.Hour))
		if time.Now().Before(wrote.Add(50 * time.Millisecond)) {
			t.Error("returned before 50ms of quiet after the write")
		}
	})
	t.Run("it stops waiting when ctx is done", func(t *testing.T) {
		var l Lull
		l.Wrote(time.Now())
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		waitDone(t, ctx, &l, time.Hour, time.Now().Add(time.Hour))
	})
}

func TestLullRemaining(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name  string
		wrote time.Time // zero: no write
		want  time.Duration
	}{
		{"no write", time.Time{}, 0},
		{"a write long ago", now.Add(-time.Hour), 0},
		{"a write just quiet", now.Add(-100 * time.Millisecond), 0},
		{"a write 30 ms ago", now.Add(-30 * time.Millisecond), 70 * time.Millisecond},
		{"a write now", now, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l Lull
			if !tc.wrote.IsZero() {
				l.Wrote(tc.wrote)
			}
			if got := l.Remaining(now, 100*time.Millisecond); got != tc.want {
				t.Errorf("Remaining = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLullWrites: writes before Writes signal nothing; after it, a write
// signals once, however many follow before the signal is received; every
// call returns the same channel.
func TestLullWrites(t *testing.T) {
	var l Lull
	l.Wrote(time.Now())
	writes := l.Writes()
	if l.Writes() != writes {
		t.Fatal("a second Writes returned another channel")
	}
	select {
	case <-writes:
		t.Fatal("a write made before Writes signalled")
	default:
	}
	for range 3 {
		l.Wrote(time.Now())
	}
	select {
	case <-writes:
	default:
		t.Fatal("no signal after three writes")
	}
	select {
	case <-writes:
		t.Fatal("a second signal for writes made before the first was received")
	default:
	}
	l.Wrote(time.Now())
	select {
	case <-writes:
	default:
		t.Fatal("no signal for a write after the signal was received")
	}
}
