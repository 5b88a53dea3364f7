package capacity

import (
	"context"
	"testing"
	"time"
)

func TestParseCPULine(t *testing.T) {
	got, ok, err := parseCPULine("cpu  100 5 50 800 20 3 2 0 40 0")
	if err != nil || !ok {
		t.Fatalf("ok %v err %v", ok, err)
	}
	if want := (cpuTimes{idle: 820, total: 980}); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, ok, _ := parseCPULine("cpu0 1 2 3 4"); ok {
		t.Error("a per-core line is not the aggregate")
	}
	for _, bad := range []string{"cpu 1 2", "cpu 1 x 3 4 5"} {
		if _, ok, err := parseCPULine(bad); !ok || err == nil {
			t.Errorf("%q: ok %v err %v, want an error", bad, ok, err)
		}
	}
}

func TestIdleShare(t *testing.T) {
	share, err := idleShare(cpuTimes{idle: 100, total: 200}, cpuTimes{idle: 130, total: 300})
	if err != nil || share != 0.3 {
		t.Fatalf("share %v err %v, want 0.3", share, err)
	}
	if _, err := idleShare(cpuTimes{total: 5}, cpuTimes{total: 5}); err == nil {
		t.Error("counters that did not move must be an error")
	}
}

// The defaults a run takes from the machine: an idle 2-core machine gets 3
// processes on one cluster per stack; a busy one fewer, never below 2; a
// large one at most 6, and a second cluster per stack where two spare
// cores wait for each.
func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		m        Machine
		procs    int
		carries2 bool
	}{
		{Idle(2), 3, false},
		{Machine{Cores: 2, Idle: 0.3, Window: time.Second}, 2, false},
		{Idle(1), 2, false},
		{Idle(4), 6, true},
		{Machine{Cores: 4, Idle: 0.5, Window: time.Second}, 3, false},
		{Idle(16), 6, true},
	} {
		if got := tc.m.Procs(); got != tc.procs {
			t.Errorf("%s: procs %d, want %d", tc.m, got, tc.procs)
		}
		if got := tc.m.CarriesClusters(2); got != tc.carries2 {
			t.Errorf("%s: carries two clusters %v, want %v", tc.m, got, tc.carries2)
		}
	}
}

func TestMeasure(t *testing.T) {
	m, err := Measure(context.Background(), 200*time.Millisecond)
	if err != nil {
		t.Skipf("no /proc/stat here: %v", err)
	}
	if m.Cores < 1 || m.Idle < 0 || m.Idle > 1 || m.Window != 200*time.Millisecond {
		t.Fatalf("implausible %+v", m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Measure(ctx, time.Minute); err == nil {
		t.Error("a cancelled measurement must say so")
	}
}

func TestSampleLoad(t *testing.T) {
	stop := SampleLoad(context.Background(), 10*time.Millisecond)
	time.Sleep(60 * time.Millisecond)
	l := stop()
	if _, err := readLoad("/proc/loadavg"); err != nil {
		t.Skipf("no /proc/loadavg: %v", err)
	}
	if l.Samples == 0 || l.Max < l.Mean || l.Cores < 1 {
		t.Fatalf("implausible %+v", l)
	}
	if (Load{}).String() != "not read" {
		t.Error("no readings must say so")
	}
}
