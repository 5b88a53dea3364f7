package counter_test

import (
	"testing"

	"github.com/faultline-k8s/faultline/fakes/nri/counter"
)

func take(t *testing.T, c *counter.Counter, key string, limit int) bool {
	t.Helper()
	ok, err := c.Take(key, limit)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestTakeLimits(t *testing.T) {
	c, err := counter.New("")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, false, false} {
		if got := take(t, c, "k", 2); got != want {
			t.Errorf("take %d: got %v, want %v", i+1, got, want)
		}
	}
	if !take(t, c, "other", 2) {
		t.Error("keys share a count")
	}
	for range 3 {
		if !take(t, c, "unlimited", 0) {
			t.Error("an unlimited fault stopped firing")
		}
	}
	if n := c.Count("unlimited"); n != 0 {
		t.Errorf("unlimited faults are counted: %d", n)
	}
}

// A restarted process must not fire a times=1 fault again.
func TestTakeSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	c, err := counter.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !take(t, c, "pod/CreateContainer/app", 1) {
		t.Fatal("first take refused")
	}
	restarted, err := counter.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if take(t, restarted, "pod/CreateContainer/app", 1) {
		t.Error("times=1 fault fired again after a restart")
	}
	if !take(t, restarted, "pod/StartContainer/app", 1) {
		t.Error("unrelated key refused after a restart")
	}
}
