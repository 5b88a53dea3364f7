package verdicts

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

// spec is a spec's result; a failed one has the first cause its first
// requirement declares (a failure of the stack, as the specs record it).
func spec(state State, run int, reqs ...string) Spec {
	s := Spec{Name: fmt.Sprintf("spec of %v", reqs), State: state, Run: run, Requirements: reqs}
	if r, ok := requirements.Lookup(reqs[0]); ok && state == Fail && len(r.Causes) > 0 {
		s.Cause = r.Causes[0].ID
	}
	return s
}

func stackRun(key string, specs ...Spec) Run {
	return Run{Stack: wire.StackInfo{Key: key, Runtime: strings.Split(key, "-")[0]}, Specs: specs}
}

func mustExpect(t *testing.T, doc string) ExpectationSet {
	t.Helper()
	x, err := ParseExpectations([]byte(doc), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return ExpectationSet{x.Stack: x}
}

const testExpectations = `stack: containerd-1.36
expect:
- requirement: DRA-EVERY-FAILING-CLAIM-NAMED
  verdict: fail
  causes: [started-unprepared, claim-not-named]
  reason: the kubelet names the first claim only
  reference: https://example.com/manager.go
- requirement: DRA-PERMANENT-FAILS-POD
  verdict: not implemented
  reason: KEP-5322
  reference: https://example.com/kep
- requirement: CRI-CONTAINER-CHANGED-REQUEST
  verdict: varies
  outcomes: [pass, fail]
  causes: [changed-refused]
  reason: depends on timing
  reference: https://example.com/timing
  evidence: run A passed, run B failed
`

// TestStates: every state a requirement can get, and which are unexpected.
func TestStates(t *testing.T) {
	x := mustExpect(t, testExpectations)
	rep := Build([]Run{stackRun("containerd-1.36",
		spec(Pass, 1, "DRA-TRANSIENT-RETRIED"),
		spec(Fail, 1, "DRA-EVERY-FAILING-CLAIM-NAMED"),
		spec(NotImplemented, 1, "DRA-PERMANENT-FAILS-POD"),
		spec(Skipped, 1, "CRI-SANDBOX-RETRY-GETS-FIRST"),
		spec(Pending, 1, "NRI-POLICY-IGNORED-ERROR"),
		spec(Fail, 1, "NRI-ERROR-STOPS-CHAIN"),
		spec(NotImplemented, 1, "NRI-REQUIRED-PLUGIN-MISSING"),
		spec(Fail, 1, "CRI-CONTAINER-CHANGED-REQUEST"),
	)}, x, Header{})
	for id, want := range map[string]struct {
		state      State
		unexpected bool
	}{
		"DRA-TRANSIENT-RETRIED":         {Pass, false},
		"DRA-EVERY-FAILING-CLAIM-NAMED": {KnownDiscrepancy, false},
		"DRA-PERMANENT-FAILS-POD":       {NotImplemented, false},
		"CRI-SANDBOX-RETRY-GETS-FIRST":  {Skipped, false},
		"NRI-POLICY-IGNORED-ERROR":      {Pending, false},
		"NRI-ERROR-STOPS-CHAIN":         {Fail, true},
		"NRI-REQUIRED-PLUGIN-MISSING":   {NotImplemented, true},
		"CRI-CONTAINER-CHANGED-REQUEST": {KnownDiscrepancy, false},
	} {
		v := rep.Verdict(id, "containerd-1.36")
		if v == nil {
			t.Errorf("%s: no verdict", id)
			continue
		}
		if v.State != want.state || (v.Unexpected != "") != want.unexpected {
			t.Errorf("%s: %s, unexpected %q; want %s, unexpected=%v", id, v.State, v.Unexpected, want.state, want.unexpected)
		}
	}
	if rep.OK() {
		t.Error("a run with unexpected verdicts is OK")
	}
	if got := len(rep.Requirements); got != 8 {
		t.Errorf("%d rows, want 8", got)
	}
	if rep.Requirements[0].ID != "DRA-PERMANENT-FAILS-POD" {
		t.Errorf("rows are not in the catalogue's order: %s first", rep.Requirements[0].ID)
	}
}

// TestExpectedFailureThatPassesIsUnexpected keeps the expectations true.
func TestExpectedFailureThatPassesIsUnexpected(t *testing.T) {
	rep := Build([]Run{stackRun("containerd-1.36", spec(Pass, 1, "DRA-EVERY-FAILING-CLAIM-NAMED"))}, mustExpect(t, testExpectations), Header{})
	v := rep.Verdict("DRA-EVERY-FAILING-CLAIM-NAMED", "containerd-1.36")
	if v.State != Pass || !strings.Contains(v.Unexpected, "expected fail") {
		t.Errorf("%+v", v)
	}
}

// TestOtherStackHasNoExpectations: expectations are per stack.
func TestOtherStackHasNoExpectations(t *testing.T) {
	rep := Build([]Run{stackRun("crio-1.37", spec(Fail, 1, "DRA-EVERY-FAILING-CLAIM-NAMED"))}, mustExpect(t, testExpectations), Header{})
	if v := rep.Verdict("DRA-EVERY-FAILING-CLAIM-NAMED", "crio-1.37"); v.State != Fail || v.Unexpected == "" {
		t.Errorf("%+v", v)
	}
	if rep.Expectations["crio-1.37"] != "" {
		t.Errorf("expectations for crio-1.37: %q", rep.Expectations["crio-1.37"])
	}
}

// TestWorstSpecDecides: a requirement checked by several specs gets the
// worst of their states.
func TestWorstSpecDecides(t *testing.T) {
	rep := Build([]Run{stackRun("crio-1.36",
		spec(Pass, 1, "NRI-ASYNC-ERROR-IGNORED"), spec(Fail, 1, "NRI-ASYNC-ERROR-IGNORED"), spec(Pass, 1, "NRI-ASYNC-ERROR-IGNORED"),
		spec(Pass, 1, "NRI-ERROR-STOPS-CHAIN"), spec(Skipped, 1, "NRI-ERROR-STOPS-CHAIN"),
	)}, nil, Header{})
	if v := rep.Verdict("NRI-ASYNC-ERROR-IGNORED", "crio-1.36"); v.State != Fail || len(v.Specs) != 3 {
		t.Errorf("%+v", v)
	}
	if v := rep.Verdict("NRI-ERROR-STOPS-CHAIN", "crio-1.36"); v.State != Skipped {
		t.Errorf("%+v", v)
	}
}

// TestRepeatAggregation: runs that disagree make a varying verdict; an
// expectation of "varies" accepts it, others do not.
func TestRepeatAggregation(t *testing.T) {
	x := mustExpect(t, testExpectations)
	runs := []Run{
		stackRun("containerd-1.36", spec(Pass, 1, "CRI-CONTAINER-CHANGED-REQUEST"), spec(Pass, 1, "DRA-TRANSIENT-RETRIED")),
		stackRun("containerd-1.36", spec(Fail, 2, "CRI-CONTAINER-CHANGED-REQUEST"), spec(Fail, 2, "DRA-TRANSIENT-RETRIED")),
		stackRun("containerd-1.36", spec(Pass, 3, "CRI-CONTAINER-CHANGED-REQUEST"), spec(Pass, 3, "DRA-TRANSIENT-RETRIED")),
	}
	rep := Build(runs, x, Header{})
	if rep.Header.Repeat != 3 {
		t.Errorf("repeat %d", rep.Header.Repeat)
	}
	v := rep.Verdict("CRI-CONTAINER-CHANGED-REQUEST", "containerd-1.36")
	if !v.Varies || v.Unexpected != "" || v.State != KnownDiscrepancy || v.Counts()[Pass] != 2 || v.Counts()[Fail] != 1 {
		t.Errorf("expected to vary: %+v", v)
	}
	v = rep.Verdict("DRA-TRANSIENT-RETRIED", "containerd-1.36")
	if !v.Varies || !strings.Contains(v.Unexpected, "varies: pass in 2 of 3 runs, fail in 1 of 3 runs") {
		t.Errorf("not expected to vary: %+v", v)
	}
}

func TestSetupFailuresAreUnexpected(t *testing.T) {
	run := stackRun("crio-1.36")
	run.SetupFailures = []Spec{{Name: "[SynchronizedBeforeSuite]", State: Fail, Message: "no cluster"}}
	rep := Build([]Run{run}, nil, Header{})
	if rep.OK() || len(rep.SetupFailures) != 1 {
		t.Errorf("%+v", rep)
	}
	if err := rep.Err(false); err == nil || !strings.Contains(err.Error(), "setup on crio-1.36: [SynchronizedBeforeSuite]: no cluster") {
		t.Errorf("the error does not name the setup failure: %v", err)
	}
}

// A CI log often shows only a run's last lines: the error names each
// verdict that failed the run, on a line of its own, clipped.
func TestErrNamesTheUnexpectedVerdicts(t *testing.T) {
	rep := &Report{Verdicts: []Verdict{
		{Requirement: "DRA-TRANSIENT-RETRIED", Stack: "crio-1.37", Unexpected: "fail (cause x)\nand a long story"},
		{Requirement: "DRA-PERMANENT-FAILS-POD", Stack: "crio-1.37"},
		{Requirement: "CRI-SANDBOX-RETRY-GETS-FIRST", Stack: "containerd-1.37", Unexpected: strings.Repeat("é", 400)},
	}}
	msg := rep.Err(false).Error()
	lines := strings.Split(msg, "\n")
	if len(lines) != 3 || lines[1] != "  DRA-TRANSIENT-RETRIED on crio-1.37: fail (cause x) and a long story" ||
		!strings.HasPrefix(lines[2], "  CRI-SANDBOX-RETRY-GETS-FIRST on containerd-1.37: éé") || !utf8.ValidString(lines[2]) || utf8.RuneCountInString(lines[2]) > 400 {
		t.Errorf("%q", msg)
	}
}

func TestParseExpectationsRefusesBadFiles(t *testing.T) {
	for name, doc := range map[string]string{
		"no stack":                    "expect: []\n",
		"unknown field":               "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: fail, reason: r, reference: https://x, why: 1}\n",
		"unknown requirement":         "stack: a-1.1\nexpect:\n- {requirement: NO-SUCH-THING, verdict: fail, reason: r, reference: https://x}\n",
		"twice":                       "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: fail, reason: r, reference: https://x}\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: fail, reason: r, reference: https://x}\n",
		"bad verdict":                 "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: flaky, reason: r, reference: https://x}\n",
		"no reason":                   "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: fail, reference: https://x}\n",
		"no reference":                "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: fail, reason: r}\n",
		"varies one outcome":          "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: varies, outcomes: [fail], reason: r, reference: https://x, evidence: e}\n",
		"varies no evidence":          "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: varies, outcomes: [pass, fail], reason: r, reference: https://x}\n",
		"outcomes with fail":          "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: fail, outcomes: [pass, fail], reason: r, reference: https://x}\n",
		"bad outcome":                 "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: varies, outcomes: [pass, pending], reason: r, reference: https://x, evidence: e}\n",
		"fail without causes":         "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: fail, reason: r, reference: https://x}\n",
		"varies without causes":       "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: varies, outcomes: [pass, fail], reason: r, reference: https://x, evidence: e}\n",
		"cause not declared":          "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: fail, causes: [abandoned], reason: r, reference: https://x}\n",
		"cause harness":               "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: fail, causes: [harness], reason: r, reference: https://x}\n",
		"cause twice":                 "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: fail, causes: [not-running, not-running], reason: r, reference: https://x}\n",
		"causes, no failure":          "stack: a-1.1\nexpect:\n- {requirement: DRA-PERMANENT-FAILS-POD, verdict: not implemented, causes: [pod-runs], reason: r, reference: https://x}\n",
		"causes, varies without fail": "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: varies, outcomes: [pass, skipped], causes: [not-running], reason: r, reference: https://x, evidence: e}\n",
		"message pattern":             "stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: fail, causes: [not-running], message: \"x\", reason: r, reference: https://x}\n",
		"not yaml":                    "stack: [\n",
	} {
		if _, err := ParseExpectations([]byte(doc), name); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestStackKey(t *testing.T) {
	for in, want := range map[[3]string]string{
		{"containerd", "v1.36.3", ""}:         "containerd-1.36",
		{"crio", "1.37.2", ""}:                "crio-1.37",
		{"crio", "", ""}:                      "crio",
		{"crio", "v1.37.0-alpha.1+abc", ""}:   "crio-1.37",
		{"containerd", "v1.37.2", "kep-5322"}: "containerd-1.37+kep-5322",
	} {
		got := wire.StackKey(in[0], in[1], in[2])
		if got != want {
			t.Errorf("wire.StackKey(%q, %q, %q) = %q, want %q", in[0], in[1], in[2], got, want)
		}
		if base := BaseKey(got); base != wire.StackKey(in[0], in[1], "") {
			t.Errorf("BaseKey(%q) = %q", got, base)
		}
	}
}

// TestVariantFallsBackToItsBaseExpectations: a variant stack without a file
// of its own is judged by its base stack's; with one, by its own.
func TestVariantFallsBackToItsBaseExpectations(t *testing.T) {
	base := &Expectations{Stack: "containerd-1.37"}
	own := &Expectations{Stack: "containerd-1.37+kep-5322"}
	set := ExpectationSet{"containerd-1.37": base}
	if got := set.For("containerd-1.37+nri-v0.12.5"); got != base {
		t.Errorf("a variant without expectations got %v, want its base's", got)
	}
	set["containerd-1.37+kep-5322"] = own
	if got := set.For("containerd-1.37+kep-5322"); got != own {
		t.Errorf("a variant with expectations got %v, want its own", got)
	}
	if got := set.For("crio-1.37"); got != nil {
		t.Errorf("an unknown stack got %v", got)
	}
}

func TestCompare(t *testing.T) {
	x := mustExpect(t, testExpectations)
	base := Build([]Run{stackRun("containerd-1.36",
		spec(Pass, 1, "DRA-TRANSIENT-RETRIED"), spec(Fail, 1, "DRA-EVERY-FAILING-CLAIM-NAMED"), spec(Pass, 1, "NRI-ERROR-STOPS-CHAIN"), spec(Pass, 1, "DRA-UNPREPARE-RETRIED"))}, x, Header{})
	cur := Build([]Run{
		stackRun("containerd-1.36", spec(Fail, 1, "DRA-TRANSIENT-RETRIED"), spec(Pass, 1, "DRA-EVERY-FAILING-CLAIM-NAMED"), spec(Pass, 1, "NRI-ERROR-STOPS-CHAIN"), spec(Pass, 1, "NRI-ASYNC-ERROR-IGNORED"), spec(Fail, 1, "NRI-CRASHED-PLUGIN-DROPPED")),
		stackRun("containerd-1.36", spec(Pass, 2, "DRA-TRANSIENT-RETRIED"), spec(Pass, 2, "DRA-EVERY-FAILING-CLAIM-NAMED"), spec(Fail, 2, "NRI-ERROR-STOPS-CHAIN"), spec(Pass, 2, "NRI-ASYNC-ERROR-IGNORED")),
	}, x, Header{})
	var got []string
	for _, c := range Compare(base, cur) {
		got = append(got, c.Kind+" "+c.Requirement)
	}
	want := []string{
		"new failure DRA-TRANSIENT-RETRIED",
		"new failure NRI-CRASHED-PLUGIN-DROPPED",
		"new failure NRI-ERROR-STOPS-CHAIN",
		"new pass DRA-EVERY-FAILING-CLAIM-NAMED",
		"not in the baseline NRI-ASYNC-ERROR-IGNORED",
		"not in this run DRA-UNPREPARE-RETRIED",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSkipsOnOwnClusters: on a cluster faultline made a skip is unexpected
// unless an expectation names it; elsewhere it is reported only.
func TestSkipsOnOwnClusters(t *testing.T) {
	x := mustExpect(t, `stack: crio-1.36
expect:
- {requirement: DRA-HEALTH-IN-POD-STATUS, verdict: skipped, reason: gate off, reference: "https://x"}
`)
	runs := []Run{stackRun("crio-1.36", spec(Skipped, 1, "DRA-TRANSIENT-RETRIED"), spec(Skipped, 1, "DRA-HEALTH-IN-POD-STATUS"))}
	own := Build(runs, x, Header{OwnClusters: true})
	if v := own.Verdict("DRA-TRANSIENT-RETRIED", "crio-1.36"); v.Unexpected == "" {
		t.Errorf("a skip on an own cluster is expected: %+v", v)
	}
	if v := own.Verdict("DRA-HEALTH-IN-POD-STATUS", "crio-1.36"); v.Unexpected != "" {
		t.Errorf("an expected skip is unexpected: %s", v.Unexpected)
	}
	if foreign := Build(runs, x, Header{}); !foreign.OK() {
		t.Errorf("a skip on a cluster faultline did not make is unexpected: %+v", foreign.Unexpected())
	}
}

// TestExpectedFailureOfAnotherCause: a failure whose cause the expectation
// does not name is unexpected, and names its cause; the message is never
// read.
func TestExpectedFailureOfAnotherCause(t *testing.T) {
	x := mustExpect(t, `stack: crio-1.36
expect:
- {requirement: DRA-EVERY-FAILING-CLAIM-NAMED, verdict: fail, causes: [claim-not-named], reason: r, reference: "https://x"}
`)
	like := spec(Fail, 1, "DRA-EVERY-FAILING-CLAIM-NAMED")
	like.Cause, like.Message = "claim-not-named", "Timed out after 120s."
	unlike := spec(Fail, 1, "DRA-EVERY-FAILING-CLAIM-NAMED")
	unlike.Cause, unlike.Message = "not-running", "both failed, but the user is told about only one"
	if v := Build([]Run{stackRun("crio-1.36", like)}, x, Header{}).Verdict("DRA-EVERY-FAILING-CLAIM-NAMED", "crio-1.36"); v.State != KnownDiscrepancy || v.Unexpected != "" {
		t.Errorf("%+v", v)
	}
	v := Build([]Run{stackRun("crio-1.36", unlike)}, x, Header{}).Verdict("DRA-EVERY-FAILING-CLAIM-NAMED", "crio-1.36")
	if v.State != Fail || !strings.Contains(v.Unexpected, "another cause than the expectation names (claim-not-named)") || !strings.Contains(v.Unexpected, "cause not-running") {
		t.Errorf("%+v", v)
	}
}

// TestHarnessFailureIsNeverExpected: a failure of faultline's own machinery
// (recorded as harness, or with no cause at all) is unexpected whatever
// the expectation, and says so; an unexpected failure names its cause.
func TestHarnessFailureIsNeverExpected(t *testing.T) {
	x := mustExpect(t, testExpectations)
	for _, cause := range []string{requirements.HarnessCause, ""} {
		s := spec(Fail, 1, "DRA-EVERY-FAILING-CLAIM-NAMED")
		s.Cause = cause
		v := Build([]Run{stackRun("containerd-1.36", s)}, x, Header{}).Verdict("DRA-EVERY-FAILING-CLAIM-NAMED", "containerd-1.36")
		if v.State != Fail || !strings.Contains(v.Unexpected, "faultline's own machinery (cause harness)") {
			t.Errorf("cause %q: %+v", cause, v)
		}
	}
	v := Build([]Run{stackRun("containerd-1.36", spec(Fail, 1, "DRA-TRANSIENT-RETRIED"))}, x, Header{}).Verdict("DRA-TRANSIENT-RETRIED", "containerd-1.36")
	if !strings.Contains(v.Unexpected, "fail (cause started-unprepared), and no expectation") {
		t.Errorf("an unexpected failure does not name its cause: %q", v.Unexpected)
	}
}
