package harness

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

func TestFloorParts(t *testing.T) {
	f, err := floorOf([]Part{
		Wait("kubelet's DRA call deadline", 45*time.Second),
		Wait("kubelet resync", time.Minute).Times(2),
		Period("kubelet container GC", time.Minute),
		Wait("back-off", 10*time.Second).Times(3).Times(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := wire.Floor{Total: 45*time.Second + 2*time.Minute + time.Minute + time.Minute, Parts: []wire.FloorPart{
		{Name: "kubelet's DRA call deadline", Duration: 45 * time.Second},
		{Name: "kubelet resync", Duration: 2 * time.Minute, Times: 2},
		{Name: "kubelet container GC", Duration: time.Minute, UpTo: true},
		{Name: "back-off", Duration: time.Minute, Times: 6},
	}}
	if f.String() != want.String() || f.Total != want.Total {
		t.Errorf("floor = %s, want %s", f, want)
	}
	if f, err := floorOf(nil); err != nil || f.Total != 0 || len(f.Parts) != 0 {
		t.Errorf("no parts: %+v, %v; want a zero floor", f, err)
	}
	if one := Wait("x", time.Second).Times(1); one.p.Times != 0 || one.p.Duration != time.Second {
		t.Errorf("Times(1) = %+v, want the timer once", one.p)
	}
	// A timeout the cluster's facts do not know: the floor is unknown.
	if _, err := floorOf([]Part{Wait("a", time.Second), Wait("runtimeRequestTimeout", 0)}); err == nil {
		t.Error("a part of no length makes a floor")
	}
	defer func() {
		if recover() == nil {
			t.Error("Times(0) did not panic")
		}
	}()
	Wait("x", time.Second).Times(0)
}

// TestFloorEntryReadBack: the entry Floor adds, written into Ginkgo's JSON
// report and read back, is the spec's floor for the judge; two entries add
// up, and a spec without one has no floor.
func TestFloorEntryReadBack(t *testing.T) {
	entry := func(parts ...Part) types.ReportEntry {
		f, err := floorOf(parts)
		if err != nil {
			t.Fatal(err)
		}
		return types.ReportEntry{Name: wire.FloorEntry, Value: types.WrapEntryValue(f)}
	}
	spec := func(text string, entries ...types.ReportEntry) types.SpecReport {
		return types.SpecReport{
			LeafNodeType: types.NodeTypeIt, LeafNodeText: text, State: types.SpecStatePassed, RunTime: 3 * time.Minute,
			LeafNodeLabels: []string{requirements.Label("DRA-DEADLINE-RETRIED")}, ReportEntries: entries,
		}
	}
	written := []types.Report{{SpecReports: types.SpecReports{
		spec("declared twice", entry(Wait("kubelet's DRA call deadline", 45*time.Second)), entry(Wait("kubelet resync", time.Minute).Times(2))),
		spec("no timer", entry()),
		spec("none declared"),
	}}}
	data, err := json.Marshal(written)
	if err != nil {
		t.Fatal(err)
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		t.Fatal(err)
	}
	run, err := verdicts.FromGinkgo(reports, 1, "containerd-1.37")
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Specs) != 3 {
		t.Fatalf("%d specs, want 3", len(run.Specs))
	}
	twice, none, undeclared := run.Specs[0], run.Specs[1], run.Specs[2]
	if twice.Floor == nil || twice.Floor.Total != 45*time.Second+2*time.Minute || len(twice.Floor.Parts) != 2 {
		t.Errorf("two entries read as %v, want their sum", twice.Floor)
	}
	if ratio, ok := twice.FloorRatio(); !ok || ratio < 1.09 || ratio > 1.1 {
		t.Errorf("ratio %v %v, want 3m over 2m45s", ratio, ok)
	}
	if none.Floor == nil || none.Floor.Total != 0 {
		t.Errorf("Floor() read as %v, want a zero floor", none.Floor)
	}
	if _, ok := none.FloorRatio(); ok {
		t.Error("a zero floor has a ratio")
	}
	if undeclared.Floor != nil {
		t.Errorf("a spec without an entry has the floor %v", undeclared.Floor)
	}
}
