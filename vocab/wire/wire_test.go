package wire

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestFloorJSON: a floor reads back as written, and a floor of no parts
// stays a floor (zero, not unknown).
func TestFloorJSON(t *testing.T) {
	for _, f := range []Floor{
		{Total: 3*time.Minute + 15*time.Second, Parts: []FloorPart{
			{Name: "kubelet's DRA call deadline", Duration: 45 * time.Second},
			{Name: "kubelet resync (syncFrequency)", Duration: 2 * time.Minute, Times: 2},
			{Name: "kubelet container garbage collection", Duration: 10 * time.Second, UpTo: true},
		}},
		{},
	} {
		data, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var back Floor
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, f) {
			t.Errorf("%s read back as %+v, want %+v", data, back, f)
		}
	}
	var f Floor
	if err := json.Unmarshal([]byte(`{"total":60000000000,"parts":[{"name":"x","duration":60000000000,"upTo":true}]}`), &f); err != nil {
		t.Fatal(err)
	}
	if f.Total != time.Minute || len(f.Parts) != 1 || !f.Parts[0].UpTo {
		t.Errorf("the wire form reads as %+v", f)
	}
}

func TestFloorString(t *testing.T) {
	f := Floor{Total: 2*time.Minute + 50*time.Second, Parts: []FloorPart{
		{Name: "kubelet resync", Duration: 2 * time.Minute, Times: 2},
		{Name: "kubelet container GC", Duration: 50 * time.Second, UpTo: true},
	}}
	if got, want := f.String(), "2m50s = kubelet resync 2×1m0s + kubelet container GC ≤50s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := (Floor{}).String(), "0s (no timer)"; got != want {
		t.Errorf("String() of no parts = %q, want %q", got, want)
	}
}

// TestSum: a spec's several floor entries add up; none is no floor.
func TestSum(t *testing.T) {
	if Sum() != nil {
		t.Error("Sum() of nothing is a floor")
	}
	a := Floor{Total: time.Minute, Parts: []FloorPart{{Name: "a", Duration: time.Minute}}}
	b := Floor{Total: 10 * time.Second, Parts: []FloorPart{{Name: "b", Duration: 10 * time.Second}}}
	got := Sum(a, Floor{}, b)
	if got.Total != 70*time.Second || len(got.Parts) != 2 || got.Parts[0].Name != "a" || got.Parts[1].Name != "b" {
		t.Errorf("Sum = %+v", got)
	}
	if z := Sum(Floor{}); z == nil || z.Total != 0 {
		t.Errorf("Sum of a zero floor = %v, want a zero floor", z)
	}
}
