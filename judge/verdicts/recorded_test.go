package verdicts

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/judge/verdicts/verdictstest"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

// The recorded runs predate a change of the catalogue: they name the IDs of
// the four pending specs of containerd/nri#45, which the catalogue retired
// when the NRI v0.12.4 failure policy replaced them. A requirement added
// after a run has no spec in it (namedBy tells), so a new requirement
// touches no list here.
var (
	retiredSinceRecorded = map[string]bool{
		"NRI-POLICY-IGNORED-ERROR":    true,
		"NRI-POLICY-UNIGNORED-ERROR":  true,
		"NRI-POLICY-IGNORED-REPORTED": true,
	}
	// respecifiedSinceRecorded are requirements whose spec was rewritten
	// after the recorded runs: what those runs recorded is the old spec's
	// verdict, which today's expectations do not judge. The CDI spec relied
	// on map order and passed unexercised on v1.36.3 (full6-136-*); it now
	// makes the partly failed prepare happen every time.
	respecifiedSinceRecorded = map[string]bool{"DRA-TWO-DRIVERS-CDI-ONCE": true}
)

// namedBy is every requirement the runs' specs name: a Ginkgo report lists
// every spec of the tree, skipped ones too, so a requirement of the
// catalogue it does not name had no spec when the run was recorded.
func namedBy(runs ...Run) map[string]bool {
	named := map[string]bool{}
	for _, r := range runs {
		for _, s := range r.Specs {
			for _, id := range s.Requirements {
				named[id] = true
			}
		}
	}
	return named
}

// Recorded Ginkgo JSON reports of real runs here (testdata/*.json.gz):
//   - full-containerd, full-crio: every suite, Kubernetes v1.36.3 with
//     containerd 2.4.2 and CRI-O 1.36.2 (2026-11-24);
//   - full2-containerd: every suite again, from a .ci/run (2026-11-24);
//   - full3-containerd: every suite, the README's hack/run-e2e.sh (2026-11-24);
//   - full4-containerd, full4-crio: a later .ci/run (2026-11-24 02:03);
//   - full137-containerd, full137-crio: every suite on Kubernetes v1.37.2
//     (2026-11-24 03:55), before the NRI failure-policy and DRA checklist
//     specs;
//   - full5-containerd, full5-crio: every suite on Kubernetes v1.37.2, the
//     default, with every requirement of today's catalogue (2026-11-24 07:02;
//     the README's grid);
//   - nri7-containerd: every suite on containerd built with NRI v0.12.5
//     (stack containerd-1.37+nri-v0.12.5, 2026-11-24 14:33);
//   - kep7-containerd, kep7-crio: every suite on the kubelet of
//     clusters/patches/kep-5322 (stacks *-1.37+kep-5322, 2026-11-24 14:15);
//   - full6-containerd, full6-crio: every suite on Kubernetes v1.37.2 with
//     every requirement of today's catalogue, from the cold .ci/run
//     (2026-11-24 10:50; the README's grid); full6-136-containerd,
//     full6-136-crio: every suite on v1.36.3 (2026-11-24 10:05);
//   - ci136-containerd: the cold .ci/run's 'smoke || ci' stage on v1.36.3,
//     where containerd kept a sandbox an NRI plugin had failed (2026-11-24
//     10:52);
//   - full8-containerd, full8-crio: every suite on Kubernetes v1.37.2 after
//     causes, premises and the deterministic CDI spec (2026-11-26 00:24),
//     before the CRI specs fixed their interleavings (racedWhenRecorded);
//   - full9-containerd, full9-crio: every suite on Kubernetes v1.37.2 with
//     the CRI gates and the relay's cancel (run 1 of --repeat 3,
//     2026-11-26 02:55; the README's grid): read as they are
//     (TestNativeRunWithCauses);
//   - full10-137-*, full10-136-*: every suite on v1.37.2 (2026-11-26 07:41,
//     the session's last commit) and on v1.36.5 (06:10), both runtimes (the
//     README's grid): read as they are;
//   - full10-135-*: every suite on v1.35.8 (2026-11-26 08:36, the session's
//     first full run; the README's grid): read as they are;
//   - ctd237-containerd: every suite on v1.37.2 with containerd 2.3.7
//     (--containerd-version v2.3.7, NRI v0.12.0; 2026-11-26 09:26), the
//     Serial specs on their own cluster;
//   - ctd229-containerd: the same with containerd 2.2.9 (NRI v0.11.0;
//     2026-11-26 10:56);
//   - rerun135-*: the DRA health and taint specs and the NRI asynchronous
//     hooks on v1.35.8 again (2026-11-26 07:26);
//   - cdi1363-containerd, cdi1363-crio: 'smoke || ci' with the CDI and
//     restart specs on v1.36.3, run 1 of 3 (2026-11-26 04:20), where
//     kubernetes#140274 duplicates the CDI device;
//   - ci-subset-containerd-unlabelled: a run with a label filter, from before
//     specs named requirements (2026-11-23).
//
// recorded reads one as today's specs would have ended it
// (verdictstest.AsToday: a CRI spec from UNCLAIMED-HIDDEN on that passed on
// an abandoned creation is not implemented now), and gives each failure the cause its
// spec would record today (verdictstest.WithRecordedCauses: the runs
// predate causes, so without it every failure would read as faultline's
// own; it is the only place a failure's message is matched).
func recorded(t *testing.T, name string) []types.Report {
	t.Helper()
	reports, err := ReadGinkgoReports("testdata/" + name + ".json.gz")
	if err != nil {
		t.Fatal(err)
	}
	verdictstest.AsToday(reports, wire.NotImplementedPrefix)
	verdictstest.WithRecordedCauses(reports, wire.CauseEntry, CauseMarkEntry)
	return reports
}

func recordedRun(t *testing.T, name string, run int, stackKey string) Run {
	t.Helper()
	r, err := FromGinkgo(recorded(t, name), run, stackKey)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestNativeRunWithCauses: a run whose specs recorded their causes and
// premises themselves is judged as it is, with no help from the former
// message patterns: nothing unexpected, every requirement checked, and
// every failure carries a declared cause, never faultline's own.
func TestNativeRunWithCauses(t *testing.T) {
	x, err := LoadExpectationsPath("../expectations")
	if err != nil {
		t.Fatal(err)
	}
	var runs []Run
	for _, name := range []string{"full9-containerd", "full9-crio"} {
		r, err := ReadGinkgoFile("testdata/"+name+".json.gz", 1, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range r.Specs {
			if s.State == Fail && (s.Cause == "" || s.Cause == requirements.HarnessCause) {
				t.Errorf("%s: %s failed with cause %q", name, s.Name, s.Cause)
			}
		}
		runs = append(runs, r)
	}
	rep := Build(runs, x, Header{OwnClusters: true})
	for _, v := range rep.Unexpected() {
		t.Errorf("%s on %s: %s", v.Requirement, v.Stack, v.Unexpected)
	}
	if n := len(namedBy(runs...)); len(rep.Verdicts) != 2*n {
		t.Errorf("%d verdicts, want %d (every requirement the runs' specs name, on both stacks)", len(rep.Verdicts), 2*n)
	}
}

// TestRecordedRunsRead: the stack comes from the suite setup's report entry,
// every spec names a requirement of the catalogue, and Ginkgo's states map
// onto faultline's (a not-implemented skip is not a skip).
func TestRecordedRunsRead(t *testing.T) {
	for name, want := range map[string]struct {
		key, runtime, version string
		states                map[State]int
	}{
		// containerd gave the timed-out creations of CRI 4-7 up in five
		// specs, which passed then and are not implemented today.
		"full-containerd": {"containerd-1.36", "containerd", "2.4.2", map[State]int{Pass: 35, Fail: 11, NotImplemented: 6, Pending: 4}},
		"full-crio":       {"crio-1.36", "crio", "1.36.2", map[State]int{Pass: 45, Fail: 6, NotImplemented: 1, Pending: 4}},
	} {
		t.Run(name, func(t *testing.T) {
			r := recordedRun(t, name, 1, "")
			if r.Stack.Key != want.key || r.Stack.Runtime != want.runtime || r.Stack.RuntimeVersion != want.version || len(r.Stack.Nodes) != 1 {
				t.Errorf("stack %+v", r.Stack)
			}
			got := map[State]int{}
			for _, s := range r.Specs {
				got[s.State]++
				if len(s.Requirements) == 0 {
					t.Errorf("%s names no requirement", s.Name)
				}
				for _, id := range s.Requirements {
					if _, ok := requirements.Lookup(id); !ok && !retiredSinceRecorded[id] {
						t.Errorf("%s names unknown %s", s.Name, id)
					}
				}
				if s.State == Fail && s.Message == "" {
					t.Errorf("%s failed without a message", s.Name)
				}
			}
			for _, s := range States {
				if got[s] != want.states[s] {
					t.Errorf("specs per state %v, want %v", got, want.states)
					break
				}
			}
			if len(r.SetupFailures) != 0 {
				t.Errorf("setup failures %+v", r.SetupFailures)
			}
		})
	}
}

// TestRecordedRunsAgainstBuiltinExpectations: the checked-in expectations
// explain every failure of the recorded full runs (the expectations files
// live in package expectations; the same content is read here from disk so
// this package does not import it).
// racedWhenRecorded says whether a requirement's verdict in a run recorded
// before 2026-11-26 came from a race the suite no longer leaves open: the
// CRI cache specs (CRI-SANDBOX-*, CRI-CONTAINER-*) ran while a timed-out
// call reached the runtime as a cancel or as its own deadline by chance,
// and runc-slow slept instead of holding a gate. The expectations describe
// the fixed interleaving (fakes/crirelay callContext); those runs are
// judged on every other requirement.
func racedWhenRecorded(requirement string) bool {
	return strings.HasPrefix(requirement, "CRI-SANDBOX-") || strings.HasPrefix(requirement, "CRI-CONTAINER-")
}

func TestRecordedRunsAgainstExpectations(t *testing.T) {
	x, err := LoadExpectationsPath("../expectations")
	if err != nil {
		t.Fatal(err)
	}
	full := []Run{recordedRun(t, "full-containerd", 1, ""), recordedRun(t, "full-crio", 1, "")}
	rep := Build(full, x, Header{})
	for _, v := range rep.Unexpected() {
		if racedWhenRecorded(v.Requirement) {
			continue
		}
		t.Errorf("%s on %s: %s", v.Requirement, v.Stack, v.Unexpected)
	}
	// Another full run on containerd (.ci/run, 2026-11-24 01:02), whose
	// container stage failed in other ways than the first: the
	// expectations' message patterns take both.
	// And the new-user run (2026-11-24 01:54), where containerd left a
	// failed sandbox behind (NRI-SYNC-ERROR-FAILS-REQUEST varies), and a
	// later .ci/run with two more ways the CRI timings came out.
	// And the first full run on Kubernetes v1.37.2 (2026-11-24 03:55, CRI-O
	// 1.36.3 in skew), judged by the 1.37 files that extend the 1.36 ones.
	// And the runs of today's catalogue: the default stacks, and the
	// variants judged by their own files (a pass of the failure policy on
	// NRI v0.12.5, of KEP-5322 on the patched kubelet). And the runs with
	// every requirement of today's catalogue on both releases, where a
	// driver that stops answering gets its known verdict.
	for _, name := range []string{"full2-containerd", "full3-containerd", "full4-containerd", "full4-crio", "full137-containerd", "full137-crio",
		"full5-containerd", "full5-crio", "nri7-containerd", "kep7-containerd", "kep7-crio",
		"full6-containerd", "full6-crio", "full6-136-containerd", "full6-136-crio", "ci136-containerd"} {
		for _, v := range Build([]Run{recordedRun(t, name, 1, "")}, x, Header{OwnClusters: true}).Unexpected() {
			if respecifiedSinceRecorded[v.Requirement] || racedWhenRecorded(v.Requirement) {
				continue
			}
			t.Errorf("%s: %s: %s", name, v.Requirement, v.Unexpected)
		}
	}
	if want := len(namedBy(full...)); len(rep.Stacks) != 2 || len(rep.Requirements) != want {
		t.Errorf("%d stacks, %d rows, want %d (every requirement the runs' specs name)", len(rep.Stacks), len(rep.Requirements), want)
	}
	for _, c := range []struct {
		id, stack string
		state     State
	}{
		{"DRA-PERMANENT-FAILS-POD", "containerd-1.36", NotImplemented},
		{"DRA-EVERY-FAILING-CLAIM-NAMED", "crio-1.36", KnownDiscrepancy},
		{"NRI-START-ERROR-FAILS-REQUEST", "crio-1.36", KnownDiscrepancy},
		{"NRI-START-ERROR-FAILS-REQUEST", "containerd-1.36", Pass},
		{"NRI-POLICY-IGNORED-ERROR", "crio-1.36", Pending},
	} {
		if v := rep.Verdict(c.id, c.stack); v == nil || v.State != c.state {
			t.Errorf("%s on %s: %+v, want %s", c.id, c.stack, v, c.state)
		}
	}

	for _, c := range []struct{ name, stack string }{
		{"full6-containerd", "containerd-1.37"}, {"full6-crio", "crio-1.37"},
		{"full6-136-containerd", "containerd-1.36"}, {"full6-136-crio", "crio-1.36"},
	} {
		if v := Build([]Run{recordedRun(t, c.name, 1, "")}, x, Header{OwnClusters: true}).Verdict("DRA-UNRESPONSIVE-DRIVER", c.stack); v == nil || v.State != KnownDiscrepancy {
			t.Errorf("%s: DRA-UNRESPONSIVE-DRIVER on %s: %+v, want a known discrepancy", c.name, c.stack, v)
		}
	}

	// The variants: their passes are expected by their own files, and
	// would be news to their base stack's.
	for _, c := range []struct{ name, id, stack string }{
		{"nri7-containerd", "NRI-POLICY-FAIL-REQUEST", "containerd-1.37+nri-v0.12.5"},
		{"nri7-containerd", "NRI-POLICY-KEEP-CONNECTED", "containerd-1.37+nri-v0.12.5"},
		{"kep7-containerd", "DRA-PERMANENT-FAILS-POD", "containerd-1.37+kep-5322"},
		{"kep7-crio", "DRA-PERMANENT-FAILS-POD", "crio-1.37+kep-5322"},
	} {
		run := recordedRun(t, c.name, 1, "")
		if v := Build([]Run{run}, x, Header{OwnClusters: true}).Verdict(c.id, c.stack); v == nil || v.State != Pass || v.Unexpected != "" {
			t.Errorf("%s: %s on %s: %+v, want an expected pass", c.name, c.id, c.stack, v)
		}
		base := ExpectationSet{BaseKey(c.stack): x[BaseKey(c.stack)]}
		if v := Build([]Run{run}, base, Header{OwnClusters: true}).Verdict(c.id, c.stack); v == nil || v.Unexpected == "" {
			t.Errorf("%s: %s on %s judged by %s alone: %+v, want unexpected", c.name, c.id, c.stack, BaseKey(c.stack), v)
		}
	}

	// Without expectations every failure is unexpected, and so is a
	// not-implemented requirement.
	bare := Build([]Run{recordedRun(t, "full-crio", 1, "")}, nil, Header{})
	if n := len(bare.Unexpected()); n != 7 {
		t.Errorf("%d unexpected verdicts without expectations, want 7 (6 requirements fail, 1 not implemented)", n)
	}
}

// TestRecordedFilteredRun: specs a label filter left out are no results; a
// report without a stack entry takes the stack the caller names.
func TestRecordedFilteredRun(t *testing.T) {
	if _, err := FromGinkgo(recorded(t, "ci-subset-containerd-unlabelled"), 1, ""); err == nil {
		t.Error("a report without a stack entry and no stack given: no error")
	}
	r := recordedRun(t, "ci-subset-containerd-unlabelled", 1, "containerd")
	if r.Stack.Key != "containerd" || r.LabelFilter != "(smoke || (ci && !ResourceCache))" {
		t.Errorf("stack %q, filter %q", r.Stack.Key, r.LabelFilter)
	}
	got := map[State]int{}
	for _, s := range r.Specs {
		got[s.State]++
	}
	// Ginkgo reports the 4 pending specs whatever the filter; the filter
	// (no ci label) left them out.
	if got[Pass] != 18 || len(r.Specs) != 18 {
		t.Errorf("states %v, want 18 pass (31 specs filtered out, 4 pending ones too)", got)
	}
	// Its specs name no requirement: one row says so.
	rep := Build([]Run{r}, nil, Header{})
	if len(rep.Requirements) != 1 || rep.Requirements[0].ID != NoRequirement {
		t.Errorf("rows %+v", rep.Requirements)
	}
}

// TestRecordedRepeat: three runs of the CRI suite on one containerd cluster
// (--repeat 3, 2026-11-24), before the suite fixed the interleavings (the
// history behind racedWhenRecorded): the container stage's 5, 6 and 7 each
// failed in one run; in the others
// containerd gave the creation up (not implemented), but for one run of 7
// where it kept the container and the restart leaked nothing (pass). The
// NRI suite's pending specs, which Ginkgo reports whatever the filter, are
// no rows.
func TestRecordedRepeat(t *testing.T) {
	var runs []Run
	for i := 1; i <= 3; i++ {
		runs = append(runs, recordedRun(t, fmt.Sprintf("repeat-cri-containerd-run%d", i), i, ""))
	}
	x, err := LoadExpectationsPath("../expectations")
	if err != nil {
		t.Fatal(err)
	}
	rep := Build(runs, x, Header{})
	for _, v := range rep.Unexpected() {
		if !racedWhenRecorded(v.Requirement) {
			t.Errorf("%s: %s", v.Requirement, v.Unexpected)
		}
	}
	var varying []string
	for _, v := range rep.Verdicts {
		if v.Varies {
			varying = append(varying, fmt.Sprintf("%s %v", v.Requirement, v.Runs))
		}
		if r, _ := requirements.Lookup(v.Requirement); r.Area != "cri" && r.Area != "faultline" {
			t.Errorf("row %s of area %s in a CRI-only run", v.Requirement, r.Area)
		}
		if len(v.Runs) != 3 {
			t.Errorf("%s: %d runs", v.Requirement, len(v.Runs))
		}
	}
	want := []string{
		"CRI-CONTAINER-CHANGED-REQUEST [not implemented fail not implemented]",
		"CRI-CONTAINER-UNCLAIMED-REMOVED [not implemented not implemented fail]",
		"CRI-CONTAINER-RESTART-NO-LEAK [fail not implemented pass]",
	}
	if strings.Join(varying, "\n") != strings.Join(want, "\n") {
		t.Errorf("varying:\n%s\nwant:\n%s", strings.Join(varying, "\n"), strings.Join(want, "\n"))
	}
	// Without the "varies" expectations they are unexpected.
	strict := Build(runs, nil, Header{})
	if v := strict.Verdict("CRI-CONTAINER-CHANGED-REQUEST", "containerd-1.36"); v == nil || !strings.Contains(v.Unexpected, "varies: fail in 1 of 3 runs, not implemented in 2 of 3 runs") {
		t.Errorf("%+v", v)
	}
}

// TestSuiteLevelFailures: a suite that ended early (its timeout, an
// interrupt, no spec selected) fails the run even though the specs it did
// not get to look like filtered ones; a dump path outside the results
// directory is dropped; pending specs a --skip left out are no results.
func TestSuiteLevelFailures(t *testing.T) {
	reports := recorded(t, "full-crio")
	reports[0].SpecialSuiteFailureReasons = []string{"Suite Timeout Elapsed"}
	reports[0].SuiteConfig.SkipStrings = []string{"per-plugin failure policy"}
	for i := range reports[0].SpecReports {
		sr := &reports[0].SpecReports[i]
		if sr.State == types.SpecStateFailed {
			sr.ReportEntries = append(sr.ReportEntries, types.ReportEntry{Name: wire.DumpEntry, Value: types.WrapEntryValue("../../etc")})
		}
	}
	r, err := FromGinkgo(reports, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.SetupFailures) != 1 || r.SetupFailures[0].Message != "Suite Timeout Elapsed" {
		t.Errorf("setup failures %+v", r.SetupFailures)
	}
	for _, s := range r.Specs {
		if strings.Contains(s.Dump, "..") {
			t.Errorf("%s: dump %q outside the results directory kept", s.Name, s.Dump)
		}
		if s.State == Fail && !strings.HasPrefix(s.Dump, "dumps/") {
			t.Errorf("%s: failed without its own dump (%q)", s.Name, s.Dump)
		}
		if s.State == Pending {
			t.Errorf("%s: a pending spec --skip left out is a result", s.Name)
		}
	}
	if Build([]Run{r}, nil, Header{}).OK() {
		t.Error("a suite that timed out is OK")
	}
}

// TestRecordedRunsOnKubernetes137: the v1.37.2 runs are their own stacks,
// and CRI-O 1.36 under a 1.37 kubelet is named as skew.
func TestRecordedRunsOnKubernetes137(t *testing.T) {
	for name, key := range map[string]string{"full137-containerd": "containerd-1.37", "full137-crio": "crio-1.37"} {
		r := recordedRun(t, name, 1, "")
		if r.Stack.Key != key || r.Stack.KubernetesVersion != "v1.37.2" {
			t.Errorf("%s: stack %s on %s, want %s", name, r.Stack.Key, r.Stack.KubernetesVersion, key)
		}
		if skew := r.Stack.Skew; (name == "full137-crio") != (skew != "") {
			t.Errorf("%s: skew %q", name, skew)
		}
	}
}

// TestRecordedVariantsMatchTheirBase: a variant stack run in full (the
// multi-node shape, the KEP-5322 kubelet, containerd with NRI v0.12.5) gives
// every requirement the verdict its base stack gave in a full run, but where
// the variant's own expectations say it differs, or the base's say the
// verdict varies between runs. For the multi-node shape that is the issue's
// rule: its verdicts match the single-node ones.
func TestRecordedVariantsMatchTheirBase(t *testing.T) {
	x, err := LoadExpectationsPath("../expectations")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ variant, base string }{
		{"multi7-containerd", "full6-containerd"}, {"multi7-crio", "full6-crio"},
		{"kep7-containerd", "full6-containerd"}, {"kep7-crio", "full6-crio"},
		{"nri7-containerd", "full6-containerd"},
		// containerd 2.3.7 (NRI v0.12.0) instead of 2.4.2: every verdict
		// as 2.4.2's.
		{"ctd237-containerd", "full10-137-containerd"},
		// containerd 2.2.9 (NRI v0.11.0): 2.4.2's verdicts but the
		// sandbox retry while the creation is held, which passes there
		// (its expectations drop it).
		{"ctd229-containerd", "full10-137-containerd"},
	} {
		variant, base := recordedRun(t, c.variant, 1, ""), recordedRun(t, c.base, 1, "")
		vkey, bkey := variant.Stack.Key, base.Stack.Key
		if vkey == bkey || BaseKey(vkey) != bkey {
			t.Errorf("%s is stack %s, not a variant of %s's %s", c.variant, vkey, c.base, bkey)
			continue
		}
		rep := Build([]Run{variant, base}, x, Header{OwnClusters: true})
		differ := 0
		named := namedBy(variant, base)
		for _, req := range requirements.All() {
			if !named[req.ID] {
				continue // added after both runs
			}
			v, b := rep.Verdict(req.ID, vkey), rep.Verdict(req.ID, bkey)
			if v == nil || b == nil {
				t.Errorf("%s: %s has no verdict on %s or %s", c.variant, req.ID, vkey, bkey)
				continue
			}
			if v.State == b.State || racedWhenRecorded(req.ID) {
				continue
			}
			ve, be := x.For(vkey).For(req.ID, variant.Stack.KubernetesVersion), x.For(bkey).For(req.ID, base.Stack.KubernetesVersion)
			state := v.State
			if state == KnownDiscrepancy {
				state = Fail // a failure the expectation explains
			}
			if be != nil && be.Verdict == ExpectVaries && slices.Contains(be.Allowed(), state) {
				continue
			}
			if !reflect.DeepEqual(ve, be) {
				differ++ // the variant's file says so
				continue
			}
			t.Errorf("%s on %s: %s, on %s: %s; no expectation says they differ", req.ID, vkey, v.State, bkey, b.State)
		}
		if strings.Contains(vkey, "multinode") && differ != 0 {
			t.Errorf("%s: %d verdicts differ from the single-node ones by the expectations, want none", vkey, differ)
		}
	}
}

// TestStacksByMinorAndPatch: the pinned patch of every supported minor, and
// v1.36.3, judged by the built-in expectations as recorded: nothing
// unexpected, and kubernetes#140274 where its history says (fails until
// v1.36.3 and on every 1.35 release, passes from v1.36.4 and on 1.37).
func TestStacksByMinorAndPatch(t *testing.T) {
	x, err := LoadExpectationsPath("../expectations")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, kubernetes string
		cdi              State
	}{
		{"full10-137", "v1.37.2", Pass}, {"full10-136", "v1.36.5", Pass}, {"full10-135", "v1.35.8", KnownDiscrepancy},
		{"cdi1363", "v1.36.3", KnownDiscrepancy},
		// The DRA health and taint specs and the NRI asynchronous hooks,
		// again on v1.35.8.
		{"rerun135", "v1.35.8", ""},
	} {
		for _, rt := range []string{"containerd", "crio"} {
			name := c.name + "-" + rt
			r, err := ReadGinkgoFile("testdata/"+name+".json.gz", 1, "")
			if err != nil {
				t.Fatal(err)
			}
			if r.Stack.KubernetesVersion != c.kubernetes {
				t.Errorf("%s: Kubernetes %s, want %s", name, r.Stack.KubernetesVersion, c.kubernetes)
			}
			rep := Build([]Run{r}, x, Header{OwnClusters: true})
			for _, v := range rep.Unexpected() {
				t.Errorf("%s: %s: %s", name, v.Requirement, v.Unexpected)
			}
			if c.cdi == "" {
				continue
			}
			if v := rep.Verdict("DRA-TWO-DRIVERS-CDI-ONCE", r.Stack.Key); v == nil || v.State != c.cdi {
				t.Errorf("%s: DRA-TWO-DRIVERS-CDI-ONCE %+v, want %s", name, v, c.cdi)
			}
		}
	}
}
