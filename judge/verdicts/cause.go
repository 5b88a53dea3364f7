package verdicts

import (
	"encoding/json"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/requirements"
)

// causeOf names why a failed spec failed, from its CauseEntry marks: the
// cause of the innermost check still open when it failed. A failure outside
// every check, a check of faultline's own step (requirements.HarnessCause)
// and a spec that did not fail an assertion (it panicked, timed out, was
// interrupted or aborted: none of that is the stack's named behaviour) are
// requirements.HarnessCause. No message is read: the cause is what the spec
// recorded.
func causeOf(sr types.SpecReport) string {
	if sr.State != types.SpecStateFailed {
		return requirements.HarnessCause
	}
	var open []string
	for _, e := range sr.ReportEntries {
		if e.Name != wire.CauseEntry {
			continue
		}
		var m wire.CauseMark
		if json.Unmarshal([]byte(e.Value.AsJSON), &m) != nil || m.Cause == "" {
			return requirements.HarnessCause // not a mark harness.Cause writes
		}
		if m.Open {
			open = append(open, m.Cause)
			continue
		}
		// A check ends: the last one opened with its cause.
		for i := len(open) - 1; i >= 0; i-- {
			if open[i] == m.Cause {
				open = append(open[:i], open[i+1:]...)
				break
			}
		}
	}
	if len(open) == 0 {
		return requirements.HarnessCause
	}
	return open[len(open)-1]
}

// CauseOf is a failed spec's cause: requirements.HarnessCause when no
// reader named one.
func CauseOf(s Spec) string {
	if s.Cause == "" {
		return requirements.HarnessCause
	}
	return s.Cause
}

// failCauses names the causes of a verdict's failed specs, " (cause X)",
// for the unexpected verdict's text; "" when none failed.
func failCauses(v Verdict) string {
	var causes []string
	for _, s := range v.Specs {
		if s.State == Fail && !slices.Contains(causes, CauseOf(s)) {
			causes = append(causes, CauseOf(s))
		}
	}
	switch len(causes) {
	case 0:
		return ""
	case 1:
		return " (cause " + causes[0] + ")"
	}
	slices.Sort(causes)
	return " (causes " + strings.Join(causes, ", ") + ")"
}

// CauseMarkEntry is the report entry harness.Cause writes where a check of
// cause begins, as written and as read back from a JSON report.
func CauseMarkEntry(cause string) types.ReportEntry {
	m := wire.CauseMark{Cause: cause, Open: true}
	value := types.WrapEntryValue(m) // marshals m when written
	data, _ := json.Marshal(m)
	value.AsJSON = string(data) // as read back
	return types.ReportEntry{Name: wire.CauseEntry, Value: value}
}
