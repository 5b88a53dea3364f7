package controls

import (
	"slices"
	"strings"

	"github.com/faultline-k8s/faultline/judge/verdicts"
)

// Judge says what keeps run from being control c's red run of requirement:
// its verdict there is not red (fail, or a known discrepancy: the spec said
// fail), no failed spec names c's cause, or, with base (the run of the stack
// c varies), another requirement's verdict differs from base's (the mutant
// is not precise). Empty when run is the control's red run.
func Judge(c Control, requirement string, run verdicts.Run, base *verdicts.Run, x verdicts.ExpectationSet) []string {
	var problems []string
	rep := verdicts.Build([]verdicts.Run{run}, x, verdicts.Header{OwnClusters: true})
	v := rep.Verdict(requirement, run.Stack.Key)
	switch {
	case v == nil:
		return []string{"the run has no verdict of " + requirement}
	case !Red(v.State):
		problems = append(problems, requirement+": "+string(v.State)+", want red (fail or known discrepancy)")
	}
	if causes := FailedCauses(*v); !slices.Contains(causes, c.Cause) {
		problems = append(problems, requirement+" failed with causes "+listOrNone(causes)+", not "+c.Cause)
	}
	if base != nil {
		for _, d := range Imprecise(run, *base, append([]string{requirement}, c.AlsoChanges...), x) {
			problems = append(problems, "not precise: "+d)
		}
	}
	return problems
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// Red says whether a verdict in state s is the spec saying fail: a failure,
// explained by the expectations or not. Not implemented, skipped and
// inconclusive are not: the spec did not say fail.
func Red(s verdicts.State) bool { return s == verdicts.Fail || s == verdicts.KnownDiscrepancy }

// FailedCauses are the causes v's failed specs named.
func FailedCauses(v verdicts.Verdict) []string {
	var causes []string
	for _, s := range v.Specs {
		if s.State == verdicts.Fail {
			causes = append(causes, verdicts.CauseOf(s))
		}
	}
	return causes
}

// Imprecise lists the requirements other than the control's (and those it
// declares it changes too) whose verdict
// on the mutant's run differs from the base run's, except where the base
// stack's expectations say it varies between those states; empty when the
// mutant breaks only its requirement. Requirements one of the runs does not
// name are left out (added after one of them, or outside the suites the
// mutant's run selected).
func Imprecise(mutant, base verdicts.Run, requirements []string, x verdicts.ExpectationSet) []string {
	rep := verdicts.Build([]verdicts.Run{mutant, base}, x, verdicts.Header{OwnClusters: true})
	var out []string
	for _, r := range rep.Requirements {
		if slices.Contains(requirements, r.ID) {
			continue
		}
		m, b := rep.Verdict(r.ID, mutant.Stack.Key), rep.Verdict(r.ID, base.Stack.Key)
		if m == nil || b == nil || m.State == b.State {
			continue
		}
		state := m.State
		if state == verdicts.KnownDiscrepancy {
			state = verdicts.Fail
		}
		if e := b.Expectation; e != nil && e.Verdict == verdicts.ExpectVaries && slices.Contains(e.Allowed(), state) {
			continue
		}
		out = append(out, r.ID+": "+string(m.State)+" on "+mutant.Stack.Key+", "+string(b.State)+" on "+base.Stack.Key)
	}
	return out
}
