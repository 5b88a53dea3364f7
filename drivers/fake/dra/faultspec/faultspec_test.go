package faultspec

import (
	"strings"
	"testing"
	"time"
)

func TestParseValid(t *testing.T) {
	raw := `{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec",
	  "prepare":[
	    {"type":"Transient","count":2,"message":"flaky"},
	    {"type":"Permanent","reason":"DeviceFailed","taintEffect":"NoSchedule","devices":["dev-1"]},
	    {"type":"Stall","duration":"1m","count":1},
	    {"type":"Unclassified"}],
	  "unprepare":[{"type":"Permanent","reason":"BadConfiguration"}]}`
	spec, err := Parse([]byte(raw))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := len(spec.Prepare); got != 4 {
		t.Fatalf("got %d prepare faults, want 4", got)
	}
	if spec.Prepare[0].CountOrZero() != 2 {
		t.Errorf("count: got %d", spec.Prepare[0].CountOrZero())
	}
	if spec.Prepare[1].Effect() != TaintNoSchedule {
		t.Errorf("effect: got %q", spec.Prepare[1].Effect())
	}
	if spec.Prepare[2].StallDuration() != time.Minute {
		t.Errorf("duration: got %v", spec.Prepare[2].StallDuration())
	}
	if (Fault{Type: Permanent, Reason: DeviceFailed}).Effect() != TaintNoExecute {
		t.Errorf("default effect must be NoExecute")
	}
}

// Every invalid spec must be rejected with a message naming the bad field,
// because that message is what a spec writer sees in the pod's events.
func TestParseInvalid(t *testing.T) {
	const head = `"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec"`
	for name, tc := range map[string]struct {
		raw  string
		want []string
	}{
		"empty":              {``, []string{"parameters: empty"}},
		"not json":           {`{`, []string{"parameters:"}},
		"unknown top field":  {`{` + head + `,"prepar":[]}`, []string{`unknown field "prepar"`}},
		"unknown nested":     {`{` + head + `,"prepare":[{"type":"Transient","count":1,"cont":3}]}`, []string{`unknown field "prepare[0].cont"`}},
		"wrong apiVersion":   {`{"apiVersion":"v1","kind":"FaultSpec"}`, []string{`apiVersion: "v1" is not supported`}},
		"wrong kind":         {`{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"Fault"}`, []string{`kind: "Fault" is not supported`}},
		"unknown type":       {`{` + head + `,"prepare":[{"type":"Flaky"}]}`, []string{`prepare[0].type: unknown fault type "Flaky"`}},
		"missing type":       {`{` + head + `,"unprepare":[{}]}`, []string{`unprepare[0].type: required`}},
		"negative count":     {`{` + head + `,"prepare":[{"type":"Stall","duration":"1s","count":-1}]}`, []string{`prepare[0].count: must not be negative, got -1`}},
		"transient no count": {`{` + head + `,"prepare":[{"type":"Transient"}]}`, []string{`prepare[0].count: required for Transient`}},
		"count type":         {`{` + head + `,"prepare":[{"type":"Transient","count":"2"}]}`, []string{"parameters:", "count"}},
		"permanent count":    {`{` + head + `,"prepare":[{"type":"Permanent","reason":"DeviceFailed","count":1}]}`, []string{`prepare[0].count: not allowed for Permanent`}},
		"no reason":          {`{` + head + `,"prepare":[{"type":"Permanent"}]}`, []string{`prepare[0].reason: required for Permanent`}},
		"unknown reason":     {`{` + head + `,"prepare":[{"type":"Permanent","reason":"Broken"}]}`, []string{`prepare[0].reason: unknown classification "Broken"`}},
		"reason on transient": {`{` + head + `,"prepare":[{"type":"Transient","count":1,"reason":"DeviceFailed"}]}`,
			[]string{`prepare[0].reason: only allowed for Permanent`}},
		"bad effect": {`{` + head + `,"prepare":[{"type":"Permanent","reason":"DeviceFailed","taintEffect":"PreferNoSchedule"}]}`,
			[]string{`prepare[0].taintEffect: unknown effect "PreferNoSchedule"`}},
		"effect on bad config": {`{` + head + `,"prepare":[{"type":"Permanent","reason":"BadConfiguration","taintEffect":"NoExecute"}]}`,
			[]string{`prepare[0].taintEffect: only allowed for Permanent with reason DeviceFailed`}},
		"bad duration":      {`{` + head + `,"prepare":[{"type":"Stall","duration":"5 minutes"}]}`, []string{`prepare[0].duration: invalid duration "5 minutes"`}},
		"zero duration":     {`{` + head + `,"prepare":[{"type":"Stall","duration":"0s"}]}`, []string{`prepare[0].duration: must be positive`}},
		"stall no duration": {`{` + head + `,"prepare":[{"type":"Stall"}]}`, []string{`prepare[0].duration: required for Stall`}},
		"duration on transient": {`{` + head + `,"prepare":[{"type":"Transient","count":1,"duration":"1s"}]}`,
			[]string{`prepare[0].duration: only allowed for Stall`}},
		"empty device":    {`{` + head + `,"prepare":[{"type":"Unclassified","devices":[""]}]}`, []string{`prepare[0].devices[0]: must not be empty`}},
		"duplicate field": {`{` + head + `,"kind":"FaultSpec"}`, []string{`duplicate field "kind"`}},
		"all problems reported": {`{` + head + `,"prepare":[{"type":"Stall","duration":"x"},{"type":"Transient","count":-2}]}`,
			[]string{`prepare[0].duration`, `prepare[1].count: must not be negative`}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.raw))
			if err == nil {
				t.Fatal("expected an error")
			}
			if !IsInvalid(err) {
				t.Errorf("error %T is not an *InvalidError", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}
