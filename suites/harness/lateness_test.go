package harness

import (
	"testing"
	"time"
)

// A renewal later than the interval and its jitter counts as lateness;
// the same renewal seen twice (a watch and a get) does not, nor does one
// on time.
func TestLatenessFromLeaseRenewals(t *testing.T) {
	w := &LatenessWatch{}
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	const interval = 10 * time.Second
	for _, at := range []time.Duration{0, 10 * time.Second, 10 * time.Second, 20300 * time.Millisecond, 33 * time.Second, 43 * time.Second} {
		w.record(t0.Add(at), interval)
	}
	l := w.lateness
	if l.Renewals != 5 {
		t.Errorf("renewals %d, want 5 (one seen twice)", l.Renewals)
	}
	if want := 12*time.Second + 700*time.Millisecond - 10400*time.Millisecond; l.Worst != want {
		t.Errorf("worst %s, want %s", l.Worst, want)
	}
	if l.Interval != interval {
		t.Errorf("interval %s", l.Interval)
	}
	// A Lease whose duration changed starts over.
	w.record(t0.Add(time.Minute), 20*time.Second)
	if w.lateness.Renewals != 1 || w.lateness.Worst != 0 {
		t.Errorf("after a new interval: %+v", w.lateness)
	}
}
