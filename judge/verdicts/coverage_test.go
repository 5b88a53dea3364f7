package verdicts

import (
	"errors"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"strings"
	"testing"
)

// TestInconclusiveRank: inconclusive is worse than not implemented and
// skipped, better than a failure; neither it nor a skip counts as checked.
func TestInconclusiveRank(t *testing.T) {
	for _, c := range []struct {
		states []State
		want   State
	}{
		{[]State{NotImplemented, Inconclusive}, Inconclusive},
		{[]State{Inconclusive, Skipped}, Inconclusive},
		{[]State{Pass, Inconclusive}, Inconclusive},
		{[]State{Inconclusive, KnownDiscrepancy}, KnownDiscrepancy},
		{[]State{Inconclusive, Fail}, Fail},
		{[]State{Pending, Inconclusive}, Inconclusive},
	} {
		if got := worst(c.states); got != c.want {
			t.Errorf("worst(%v) = %s, want %s", c.states, got, c.want)
		}
	}
	for _, s := range States {
		if _, ok := rank[s]; !ok {
			t.Errorf("state %s has no rank", s)
		}
		want := s == Pass || s == Fail || s == KnownDiscrepancy || s == NotImplemented
		if s.Checked() != want {
			t.Errorf("%s.Checked() = %v, want %v", s, s.Checked(), want)
		}
	}
}

// coverageRun is one stack's run: a spec per requirement, in the given
// states.
func coverageRun(states map[string]State) Run {
	r := Run{Stack: wire.StackInfo{Key: "containerd-1.37", Runtime: "containerd"}}
	for id, s := range states {
		r.Specs = append(r.Specs, Spec{Name: "checks " + id, Requirements: []string{id}, State: s, Message: "why " + string(s), Run: 1})
	}
	return r
}

// TestInconclusiveJudged: on a cluster faultline made an inconclusive spec
// is unexpected, as a skip is; elsewhere it is reported, and the run is
// incomplete.
func TestInconclusiveJudged(t *testing.T) {
	run := coverageRun(map[string]State{"DRA-TRANSIENT-RETRIED": Inconclusive})
	if v := Build([]Run{run}, nil, Header{OwnClusters: true}).Verdict("DRA-TRANSIENT-RETRIED", "containerd-1.37"); v == nil || v.State != Inconclusive || v.Unexpected == "" {
		t.Errorf("own cluster: %+v, want an unexpected inconclusive verdict", v)
	}
	rep := Build([]Run{run}, nil, Header{})
	if v := rep.Verdict("DRA-TRANSIENT-RETRIED", "containerd-1.37"); v == nil || v.State != Inconclusive || v.Unexpected != "" {
		t.Errorf("another cluster: %+v, want an inconclusive verdict, reported only", v)
	}
	if !rep.OK() || rep.Complete() {
		t.Errorf("another cluster: OK %v, complete %v; want OK and incomplete", rep.OK(), rep.Complete())
	}
}

// TestCoverageAndErr: N of M counts the selected requirements but the
// pending ones; a run that checked less is ErrIncomplete unless allowed,
// and an unexpected verdict wins over that.
func TestCoverageAndErr(t *testing.T) {
	x := ExpectationSet{"containerd-1.37": &Expectations{Stack: "containerd-1.37", Expect: []Expectation{{
		Requirement: "DRA-PERMANENT-FAILS-POD", Verdict: ExpectNotImplemented, Reason: "no KEP-5322", Reference: "https://example.com",
	}}}}
	states := map[string]State{
		"DRA-TRANSIENT-RETRIED":      Pass,
		"DRA-PERMANENT-FAILS-POD":    NotImplemented,
		"DRA-UNCLASSIFIED-TRANSIENT": Skipped,
		"DRA-BAD-CONFIG-NAMED":       Inconclusive,
		"DRA-DEADLINE-RETRIED":       Pending,
	}
	rep := Build([]Run{coverageRun(states)}, x, Header{})
	if c := rep.Count(); c != (Coverage{Selected: 4, Checked: 2, Pending: 1}) || rep.Coverage != c {
		t.Errorf("count %+v (in the report %+v), want 2 of 4 checked, 1 pending", c, rep.Coverage)
	}
	if n := len(rep.NotChecked()); n != 2 {
		t.Errorf("%d not checked, want 2", n)
	}
	if err := rep.Err(false); !errors.Is(err, ErrIncomplete) || errors.Is(err, ErrUnexpected) {
		t.Errorf("incomplete: err = %v, want ErrIncomplete alone", err)
	}
	if err := rep.Err(true); err != nil {
		t.Errorf("incomplete, allowed: err = %v, want nil", err)
	}

	// An unexpected verdict beside the skips: exit 1, not 4, allowed or not.
	states["DRA-DEADLINE-ERROR-NAMED"] = Pass
	states["DRA-EVERY-FAILING-DEVICE-NAMED"] = NotImplemented // no expectation says so
	rep = Build([]Run{coverageRun(states)}, x, Header{})
	for _, allow := range []bool{false, true} {
		if err := rep.Err(allow); !errors.Is(err, ErrUnexpected) || errors.Is(err, ErrIncomplete) {
			t.Errorf("unexpected and incomplete, allow %v: err = %v, want ErrUnexpected alone", allow, err)
		}
	}

	// Everything checked: nil.
	rep = Build([]Run{coverageRun(map[string]State{"DRA-TRANSIENT-RETRIED": Pass, "DRA-PERMANENT-FAILS-POD": NotImplemented, "DRA-DEADLINE-RETRIED": Pending})}, x, Header{})
	if c := rep.Count(); !rep.Complete() || rep.Err(false) != nil || c != (Coverage{Selected: 2, Checked: 2, Pending: 1}) {
		t.Errorf("complete run: count %+v, err %v", c, rep.Err(false))
	}
}

// TestTooBusyIsIncompleteNotUnexpected: a spec whose node was too busy to
// judge it is inconclusive, never unexpected, also on a cluster faultline
// made; the run is incomplete and says why and what to do.
func TestTooBusyIsIncompleteNotUnexpected(t *testing.T) {
	run := coverageRun(map[string]State{"DRA-UNPREPARE-RETRIED": Inconclusive, "DRA-TRANSIENT-RETRIED": Pass})
	for i := range run.Specs {
		if run.Specs[i].State == Inconclusive {
			run.Specs[i].Message = "the node was quiet enough to judge the unprepare retry's pace did not happen: " + wire.TooBusy + "the kubelet's timers fired up to 6s late"
		}
	}
	rep := Build([]Run{run}, nil, Header{OwnClusters: true})
	if v := rep.Verdict("DRA-UNPREPARE-RETRIED", "containerd-1.37"); v == nil || v.State != Inconclusive || v.Unexpected != "" {
		t.Fatalf("%+v, want an inconclusive verdict that is not unexpected", v)
	}
	if n := len(rep.TooBusy()); n != 1 {
		t.Errorf("%d too busy, want 1", n)
	}
	err := rep.Err(false)
	if !errors.Is(err, ErrIncomplete) || errors.Is(err, ErrUnexpected) || !strings.Contains(err.Error(), "too busy") || !strings.Contains(err.Error(), "--procs") {
		t.Errorf("err = %v, want ErrIncomplete saying the node was too busy and what to do", err)
	}
	// Another inconclusive spec of the same requirement keeps it unexpected.
	run.Specs = append(run.Specs, Spec{Name: "also checks", Requirements: []string{"DRA-UNPREPARE-RETRIED"}, State: Inconclusive, Message: "the fault did not fire", Run: 1})
	if v := Build([]Run{run}, nil, Header{OwnClusters: true}).Verdict("DRA-UNPREPARE-RETRIED", "containerd-1.37"); v == nil || v.Unexpected == "" {
		t.Errorf("%+v, want unexpected: not every inconclusive spec was too busy", v)
	}
}
