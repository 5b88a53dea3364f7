package calls

import "testing"

// An omitted claim counts as a prepare call that neither failed nor
// succeeded: the kubelet got no result for it.
func TestSummaryCountsOmitted(t *testing.T) {
	r := NewRecorder()
	r.Add(Call{Method: Prepare, ClaimUID: "b", Attempt: 1, Request: 1, Outcome: Omitted})
	r.Add(Call{Method: Prepare, ClaimUID: "a", Attempt: 1, Request: 1, Outcome: Prepared})
	r.Add(Call{Method: Prepare, ClaimUID: "b", Attempt: 2, Request: 2, Outcome: Prepared})
	if got, want := r.Report("b").Summary, (Summary{PrepareCalls: 2, PrepareOmitted: 1, PrepareSucceeded: 1}); got != want {
		t.Errorf("summary %+v, want %+v", got, want)
	}
	if got, want := r.Report("").Summary, (Summary{PrepareCalls: 3, PrepareOmitted: 1, PrepareSucceeded: 2}); got != want {
		t.Errorf("all: summary %+v, want %+v", got, want)
	}
}
