package harness

// A spec's floor: how long its scenario must take by design, whatever
// faultline does. The report shows each spec's run time beside its floor
// and lists the specs that took much longer (judge/report): the time beyond
// the floor is faultline's own (poll slack, delays of its choosing, pod
// starts) or the stack being slow.

import (
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/vocab/wire"
)

// Part is one component timer of a spec's floor (Wait, Period).
type Part struct{ p wire.FloorPart }

// Wait is a timer of the stack the scenario waits out: a deadline (the
// kubelet's 45 s for a DRA call), a delay after an event (the kubelet's
// resync after a failed sync, at its length without jitter), a back-off.
// name says whose timer it is.
func Wait(name string, d time.Duration) Part {
	return Part{wire.FloorPart{Name: name, Duration: d}}
}

// Period is a periodic loop of the stack the scenario waits for the next
// run of (the kubelet's container garbage collection): it counts whole,
// d being the longest the scenario may have to wait.
func Period(name string, d time.Duration) Part {
	return Part{wire.FloorPart{Name: name, Duration: d, UpTo: true}}
}

// Times is the timer waited out n times (n failed prepare calls, each
// retried at the next resync).
func (p Part) Times(n int) Part {
	if n < 1 {
		panic(fmt.Sprintf("harness: %q waited out %d times: leave a timer the scenario does not wait for out of its floor", p.p.Name, n))
	}
	once := max(p.p.Times, 1)
	p.p.Duration = p.p.Duration / time.Duration(once) * time.Duration(once*n)
	p.p.Times = once * n
	if p.p.Times == 1 {
		p.p.Times = 0
	}
	return p
}

// Floor declares the running spec's floor: the component timers its
// scenario waits out by design (Wait, Period), derived from the stack's
// mechanisms (the kubelet's resync, its deadlines, a runtime's cleanup
// loop, the cluster's request timeouts) and never from faultline's own
// choices (a stall's length, a quiet window, poll intervals, timeouts for
// slack). Declare it at the start of the spec, or where the path the
// scenario takes is known; each call adds its parts, the floor is their
// sum. Floor() without parts says the scenario waits for no timer. A part
// of no length (a timeout the cluster's facts do not know) makes the floor
// unknown: nothing is recorded.
func Floor(parts ...Part) {
	ginkgo.GinkgoHelper()
	f, err := floorOf(parts)
	if err != nil {
		framework.Logf("faultline: no floor for this spec: %v", err)
		return
	}
	ginkgo.AddReportEntry(wire.FloorEntry, f, ginkgo.ReportEntryVisibilityFailureOrVerbose)
}

// floorOf sums parts into the report entry's value.
func floorOf(parts []Part) (wire.Floor, error) {
	var f wire.Floor
	for _, p := range parts {
		if p.p.Duration <= 0 {
			return wire.Floor{}, fmt.Errorf("%q has no length (%s)", p.p.Name, p.p.Duration)
		}
		f.Total += p.p.Duration
		f.Parts = append(f.Parts, p.p)
	}
	return f, nil
}
