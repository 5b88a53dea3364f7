// Package verdictstest is for tests only: no production code imports it
// (its own test checks that).
//
// The Ginkgo reports recorded in judge/verdicts/testdata were written before specs
// named the cause of a failure (suites/harness.Cause), so every failure in
// them reads as faultline's own (requirements.HarnessCause). The tests that
// judge those runs against today's expectations first give each recorded
// failure the cause its spec would name today, by the message patterns the
// expectations matched before they named causes. This is the only place
// faultline matches a failure's message, and it is never used to judge a
// run: a real run's causes are what its specs recorded.
package verdictstest

import (
	"regexp"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/requirements"
)

// recordedPatterns are the expectations' former message patterns, split by
// the cause each stands for, most specific first; a pattern counts only for
// a requirement that declares its cause.
var recordedPatterns = []struct {
	pattern *regexp.Regexp
	cause   string
}{
	// CRI (suites/cri cache.go, kubelet.go)
	{regexp.MustCompile(`creation abandoned|nothing is in progress to retry against`), "abandoned"},
	{regexp.MustCompile(`the retry got no answer within`), "retry-unanswered"},
	{regexp.MustCompile(`the identical retry must succeed once the runtime finished`), "retry-refused"},
	{regexp.MustCompile(`the identical retry must return the object the timed-out request created|not a new one`), "second-object"},
	{regexp.MustCompile(`must create the object once`), "created-twice"},
	{regexp.MustCompile(`listed before it was claimed|the timed-out object \S+ is listed`), "listed-unclaimed"},
	{regexp.MustCompile(`listed after the restart|exactly the claimed object is listed`), "listed-wrong"},
	{regexp.MustCompile(`must create the sandbox once`), "second-sandbox"},
	{regexp.MustCompile(`must create the container once`), "second-container"},
	// DRA (suites/dra)
	{regexp.MustCompile(`told about only one`), "claim-not-named"},
	{regexp.MustCompile(`DeadlineExceeded.*must name driver|must name the driver; these do not`), "driver-not-named"},
	{regexp.MustCompile(`the kubelet holds a CDI device of a claim more than once`), "device-twice"},
	// NRI (suites/nri)
	{regexp.MustCompile(`^(known )?discrepancy \S+`), "request-succeeded"},
	{regexp.MustCompile(`containerd/nri#316`), "timeout-counted"},
	{regexp.MustCompile(`must hold exactly the pod.s one sandbox`), "leftover-sandbox"},
}

// leftoverAttempt is the NRI leak check's message: which kind of object the
// failed attempt left is in the runtime state it prints.
var leftoverAttempt = regexp.MustCompile(`the failed attempt ([0-9a-f]+) must leave nothing behind`)

// RecordedCause returns the cause a spec of requirements ids that failed
// with message would name today, "" when no former pattern matches (the
// failure stays faultline's own). The message is matched with its
// whitespace collapsed, as the expectations matched it.
func RecordedCause(ids []string, message string) string {
	msg := strings.Join(strings.Fields(message), " ")
	declared := func(cause string) bool {
		for _, id := range ids {
			if r, ok := requirements.Lookup(id); ok && r.Declares(cause) {
				return true
			}
		}
		return false
	}
	if m := leftoverAttempt.FindStringSubmatch(msg); m != nil {
		for _, kind := range []string{"sandbox", "container"} {
			if strings.Contains(msg, kind+" "+m[1]) && declared("leftover-"+kind) {
				return "leftover-" + kind
			}
		}
	}
	for _, p := range recordedPatterns {
		if p.pattern.MatchString(msg) && declared(p.cause) {
			return p.cause
		}
	}
	return ""
}

// WithRecordedCauses gives each failed spec of recorded reports that has no
// cause the one RecordedCause finds, as the report entry its spec would
// have written today (mark makes it: wire.CauseEntry with an open
// wire.CauseMark, which this package cannot import), and returns how
// many it gave one. A failure no former pattern matches stays faultline's
// own.
func WithRecordedCauses(reports []types.Report, entryName string, mark func(cause string) types.ReportEntry) int {
	given := 0
	for i := range reports {
		for j := range reports[i].SpecReports {
			sr := &reports[i].SpecReports[j]
			if sr.State != types.SpecStateFailed || hasEntry(sr, entryName) {
				continue
			}
			if c := RecordedCause(requirements.FromLabels(sr.Labels()), sr.Failure.Message); c != "" {
				sr.ReportEntries = append(sr.ReportEntries, mark(c))
				given++
			}
		}
	}
	return given
}

func hasEntry(sr *types.SpecReport, name string) bool {
	for _, e := range sr.ReportEntries {
		if e.Name == name {
			return true
		}
	}
	return false
}
