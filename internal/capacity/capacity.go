// Package capacity measures what a machine can carry before a run puts its
// clusters on it: how many cores it has and how much of them is idle. A
// shared CI runner or a developer's busy laptop has fewer cores to spare
// than it has cores, and faultline's own clusters and Ginkgo processes
// compete with the kubelet and the runtime whose timers the specs judge:
// the run's defaults (its parallelism, a second cluster per stack) follow
// the spare cores, not the core count.
package capacity

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine is a machine's cores and the share of them idle when measured.
type Machine struct {
	// Cores is the number of CPUs.
	Cores int
	// Idle is the share of CPU time idle over Window, 0 to 1.
	Idle float64
	// Window is how long the idle share was measured over; zero: assumed
	// idle, not measured (a test, or a system without /proc/stat).
	Window time.Duration
}

// Idle returns a machine of n cores, all of them idle, as assumed.
func Idle(n int) Machine { return Machine{Cores: n, Idle: 1} }

// IsZero says whether m holds nothing yet (neither measured nor assumed).
func (m Machine) IsZero() bool { return m.Cores == 0 }

// Spare is the idle cores: Cores times the idle share.
func (m Machine) Spare() float64 { return float64(m.Cores) * m.Idle }

func (m Machine) String() string {
	if m.Window == 0 {
		return fmt.Sprintf("%d cores (assumed idle)", m.Cores)
	}
	return fmt.Sprintf("%d cores, %.0f%% idle over %s (%.1f spare)", m.Cores, 100*m.Idle, m.Window, m.Spare())
}

// Procs is the Ginkgo processes a cluster gets by default: one and a half
// per spare core (a spec mostly waits on the kubelet's and the runtime's
// timers, so a core carries more than one), at least 2, at most 6.
// Measured on a 2-core machine: 6 processes per cluster beside a second
// cluster drove the load average to 26-80 and turned verdicts; 3 on one
// cluster kept it under 15 with every verdict as expected.
func (m Machine) Procs() int {
	return min(max(int(math.Round(1.5*m.Spare())), 2), 6)
}

// CarriesClusters says whether the machine has two spare cores for each of
// n clusters: a kind node's API server, etcd, kubelet and runtime take most
// of a core each while pods start, and the specs' timing wants the rest.
func (m Machine) CarriesClusters(n int) bool { return m.Spare() >= float64(2*n)-0.25 }

// Measure reads how idle the machine is over window (the kernel's
// /proc/stat counters at both ends). Where there is no /proc/stat it
// returns the core count, assumed idle, and the reason.
func Measure(ctx context.Context, window time.Duration) (Machine, error) {
	cores := runtime.NumCPU()
	before, err := readCPU("/proc/stat")
	if err != nil {
		return Idle(cores), err
	}
	t := time.NewTimer(window)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return Idle(cores), ctx.Err()
	case <-t.C:
	}
	after, err := readCPU("/proc/stat")
	if err != nil {
		return Idle(cores), err
	}
	idle, err := idleShare(before, after)
	if err != nil {
		return Idle(cores), err
	}
	return Machine{Cores: cores, Idle: idle, Window: window}, nil
}

// cpuTimes are the aggregate "cpu" line's counters, in clock ticks.
type cpuTimes struct{ idle, total uint64 }

// readCPU reads the aggregate line of a /proc/stat file.
func readCPU(path string) (cpuTimes, error) {
	f, err := os.Open(path)
	if err != nil {
		return cpuTimes{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if t, ok, err := parseCPULine(sc.Text()); ok || err != nil {
			return t, err
		}
	}
	if err := sc.Err(); err != nil {
		return cpuTimes{}, err
	}
	return cpuTimes{}, fmt.Errorf("%s: no aggregate cpu line", path)
}

// parseCPULine reads "cpu  user nice system idle iowait irq softirq steal
// ...": idle counts idle and iowait (a core waiting on the disk is free to
// run a process), total every field up to steal (guest time is already
// in user). ok is false for other lines.
func parseCPULine(line string) (cpuTimes, bool, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != "cpu" {
		return cpuTimes{}, false, nil
	}
	if len(fields) < 5 {
		return cpuTimes{}, true, fmt.Errorf("short cpu line %q", line)
	}
	var t cpuTimes
	for i, f := range fields[1:min(len(fields), 9)] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return cpuTimes{}, true, fmt.Errorf("cpu line %q: %w", line, err)
		}
		t.total += v
		if i == 3 || i == 4 { // idle, iowait
			t.idle += v
		}
	}
	return t, true, nil
}

// idleShare is the idle share of the ticks between two readings.
func idleShare(before, after cpuTimes) (float64, error) {
	if after.total <= before.total || after.idle < before.idle {
		return 0, errors.New("cpu counters did not advance")
	}
	share := float64(after.idle-before.idle) / float64(after.total-before.total)
	return min(max(share, 0), 1), nil
}
