package verdicts

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

// floorEntry is the report entry harness.Floor writes, as read back from a
// JSON report.
func floorEntry(parts ...wire.FloorPart) types.ReportEntry {
	f := wire.Floor{Parts: parts}
	for _, p := range parts {
		f.Total += p.Duration
	}
	value := types.WrapEntryValue(f)
	data, _ := json.Marshal(f)
	value.AsJSON = string(data)
	return types.ReportEntry{Name: wire.FloorEntry, Value: value}
}

// floorSpec is a spec of requirement ids that ran for took.
func floorSpec(text string, state types.SpecState, took time.Duration, ids []string, entries ...types.ReportEntry) types.SpecReport {
	var labels []string
	for _, id := range ids {
		labels = append(labels, requirements.Label(id))
	}
	sr := types.SpecReport{
		LeafNodeType: types.NodeTypeIt, LeafNodeText: text, State: state, RunTime: took,
		LeafNodeLabels: labels, ReportEntries: entries,
	}
	if state == types.SpecStateSkipped {
		sr.Failure.Message = "needs two nodes"
	}
	return sr
}

// floorTestReport is a synthetic run of two stacks whose specs cover every
// case of time against floor.
func floorTestReport(t *testing.T) *Report {
	t.Helper()
	resync := wire.FloorPart{Name: "kubelet resync", Duration: time.Minute}
	deadline := wire.FloorPart{Name: "kubelet's DRA call deadline", Duration: 45 * time.Second}
	a := []types.SpecReport{
		// 2.0×, over.
		floorSpec("transient", types.SpecStatePassed, 2*time.Minute, []string{"DRA-TRANSIENT-RETRIED"}, floorEntry(resync)),
		// 1.2×, under.
		floorSpec("unclassified", types.SpecStatePassed, 72*time.Second, []string{"DRA-UNCLASSIFIED-TRANSIENT"}, floorEntry(resync)),
		// 3.0× in two entries, over and the slowest; it failed.
		floorSpec("deadline", types.SpecStateFailed, 5*time.Minute+15*time.Second, []string{"DRA-DEADLINE-RETRIED"}, floorEntry(deadline), floorEntry(resync)),
		// Skipped: never ran its scenario, whatever its time.
		floorSpec("skipped", types.SpecStateSkipped, 10*time.Minute, []string{"DRA-BAD-CONFIG-NAMED"}, floorEntry(resync)),
		// No timer: no ratio.
		floorSpec("no timer", types.SpecStatePassed, time.Minute, []string{"DRA-TAINTED-DEVICE-EVICTS"}, floorEntry()),
		// No floor declared.
		floorSpec("undeclared", types.SpecStatePassed, time.Hour, []string{"DRA-HEALTH-IN-POD-STATUS"}),
		// Two requirements: listed once. 1.6×.
		floorSpec("two requirements", types.SpecStatePassed, 96*time.Second, []string{"DRA-EVERY-FAILING-DEVICE-NAMED", "DRA-EVERY-FAILING-CLAIM-NAMED"}, floorEntry(resync)),
	}
	b := []types.SpecReport{
		// 1.5× exactly is not over.
		floorSpec("transient", types.SpecStatePassed, 90*time.Second, []string{"DRA-TRANSIENT-RETRIED"}, floorEntry(resync)),
		// 4×.
		floorSpec("unclassified", types.SpecStatePassed, 4*time.Minute, []string{"DRA-UNCLASSIFIED-TRANSIENT"}, floorEntry(resync)),
	}
	var runs []Run
	for key, specs := range map[string][]types.SpecReport{"crio-1.37": b, "containerd-1.37": a} {
		run, err := FromGinkgo([]types.Report{{SpecReports: specs}}, 1, key)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	return Build(runs, nil, Header{})
}

func TestOverFloor(t *testing.T) {
	r := floorTestReport(t)
	if !r.HasFloors() {
		t.Fatal("HasFloors() = false")
	}
	var got []string
	for _, s := range r.OverFloor() {
		got = append(got, fmt.Sprintf("%s %s %.1f", s.Stack, s.Name, s.Ratio))
	}
	want := []string{
		"containerd-1.37 deadline 3.0",
		"containerd-1.37 transient 2.0",
		"containerd-1.37 two requirements 1.6",
		"crio-1.37 unclassified 4.0",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("over floor:\n%s\nwant (per stack, the largest ratio first):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	specs := r.StackSpecs("containerd-1.37")
	if len(specs) != 7 {
		t.Errorf("%d specs of containerd-1.37, want 7 (a spec of two requirements once)", len(specs))
	}
	for _, s := range specs {
		switch s.Name {
		case "undeclared":
			if s.Floor != nil {
				t.Errorf("undeclared has the floor %v", s.Floor)
			}
		case "no timer":
			if s.Floor == nil || s.Floor.Total != 0 {
				t.Errorf("no timer has the floor %v, want 0", s.Floor)
			}
		case "deadline":
			if s.Floor == nil || s.Floor.Total != 105*time.Second || len(s.Floor.Parts) != 2 {
				t.Errorf("deadline has the floor %v, want its two entries' sum", s.Floor)
			}
		}
	}
}

// TestFloorUnreadable: an entry that is not a floor leaves the spec's
// floor unknown, never smaller, and the other entries are still read.
func TestFloorUnreadable(t *testing.T) {
	bad := types.ReportEntry{Name: wire.FloorEntry, Value: types.ReportEntryValue{AsJSON: `"five minutes"`}}
	negative := types.ReportEntry{Name: wire.FloorEntry, Value: types.ReportEntryValue{AsJSON: `{"total":-1}`}}
	dump := types.ReportEntry{Name: wire.DumpEntry, Value: types.ReportEntryValue{AsJSON: `"dumps/ns"`}}
	for _, e := range []types.ReportEntry{bad, negative} {
		sr := floorSpec("x", types.SpecStatePassed, time.Minute, []string{"DRA-TRANSIENT-RETRIED"},
			floorEntry(wire.FloorPart{Name: "kubelet resync", Duration: time.Minute}), e, dump)
		s := specOf(sr, 1)
		if s.Floor != nil {
			t.Errorf("%s: floor %v, want unknown", e.Value.AsJSON, s.Floor)
		}
		if s.Dump != "dumps/ns" {
			t.Errorf("%s: the dump entry after it was not read", e.Value.AsJSON)
		}
	}
}

// TestRecordedRunsFloors: the recorded runs read and judge as before; a
// spec that recorded no floor entry (every spec of a run recorded before
// floors) has its floor unknown, never zero.
func TestRecordedRunsFloors(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json.gz")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded runs: %v", err)
	}
	for _, file := range files {
		reports, err := ReadGinkgoReports(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		entries := map[string]bool{} // spec name => it recorded a floor
		for _, rep := range reports {
			for _, sr := range rep.SpecReports {
				for _, e := range sr.ReportEntries {
					if e.Name == wire.FloorEntry {
						entries[sr.FullText()] = true
					}
				}
			}
		}
		run, err := FromGinkgo(reports, 1, "recorded")
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		r := Build([]Run{run}, nil, Header{})
		if r.HasFloors() != (len(entries) > 0) {
			t.Errorf("%s: HasFloors() = %v with %d specs recording a floor", file, r.HasFloors(), len(entries))
		}
		for _, s := range r.StackSpecs(run.Stack.Key) {
			if !entries[s.Name] && s.Floor != nil {
				t.Errorf("%s: %s recorded no floor, but has %v", file, s.Name, s.Floor)
			}
		}
	}
}
