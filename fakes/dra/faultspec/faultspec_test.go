package faultspec

import (
	"encoding/json"
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
	  "unprepare":[{"type":"Transient","count":3},{"type":"Stall","duration":"5m","count":1},{"type":"Unclassified","count":2}]}`
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
	spec, err = Parse([]byte(`{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec","prepare":[{"type":"Omit","count":1}],"cdi":{"hook":true}}`))
	if err != nil || len(spec.Prepare) != 1 || spec.Prepare[0].Type != Omit || spec.Prepare[0].CountOrZero() != 1 {
		t.Errorf("omit: %+v, %v", spec, err)
	}
}

func TestParseHealthAndCDI(t *testing.T) {
	spec, err := Parse([]byte(`{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec",
	  "health":[{"type":"StreamDrop","duration":"2m30s","message":"gone"},{"type":"StreamDrop"}],
	  "cdi":{"hook":true}}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(spec.Health) != 2 || spec.Health[0].DownDuration() != 150*time.Second || spec.Health[1].DownDuration() != 0 || spec.Health[0].Message != "gone" {
		t.Errorf("health: %+v", spec.Health)
	}
	if spec.CDI == nil || !spec.CDI.Hook {
		t.Errorf("cdi: %+v", spec.CDI)
	}
	// An empty cdi object asks for CDI devices without the hook.
	spec, err = Parse([]byte(`{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec","cdi":{},"health":[]}`))
	if err != nil || spec.CDI == nil || spec.CDI.Hook || spec.Health != nil {
		t.Errorf("cdi {}: %+v, %v", spec, err)
	}
	spec, err = Parse([]byte(`{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec","cdi":null}`))
	if err != nil || spec.CDI != nil {
		t.Errorf("cdi null: %+v, %v", spec, err)
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
		"padded device":   {`{` + head + `,"prepare":[{"type":"Unclassified","devices":["dev-0"," dev-1"]}]}`, []string{`prepare[0].devices[1]: device " dev-1" has spaces around its name`}},
		"duplicate device": {`{` + head + `,"prepare":[{"type":"Unclassified","devices":["dev-1","dev-0","dev-1"]}]}`,
			[]string{`prepare[0].devices[2]: device "dev-1" is named twice`}},
		"not a device name": {`{` + head + `,"prepare":[{"type":"Unclassified","devices":["Dev_1"]}]}`, []string{`prepare[0].devices[0]: device "Dev_1" is not a device name`}},
		"stall over the cap": {`{` + head + `,"prepare":[{"type":"Stall","duration":"5m0.001s"}]}`,
			[]string{`prepare[0].duration: "5m0.001s" is longer than the cap of 5m0s (the kubelet gives up on a call after 45s)`}},
		"unprepare stall over the cap": {`{` + head + `,"unprepare":[{"type":"Stall","duration":"1h","count":1}]}`,
			[]string{`unprepare[0].duration: "1h" is longer than the cap of 5m0s`}},
		"count over the cap": {`{` + head + `,"prepare":[{"type":"Transient","count":1001}]}`, []string{`prepare[0].count: 1001 is more than the cap of 1000`}},
		"permanent unprepare": {`{` + head + `,"unprepare":[{"type":"Permanent","reason":"DeviceFailed"}]}`,
			[]string{`unprepare[0].type: Permanent is not allowed for unprepare`, "Terminating"}},
		"endless unclassified unprepare": {`{` + head + `,"unprepare":[{"type":"Unclassified"}]}`,
			[]string{`unprepare[0].count: required for Unclassified on unprepare`}},
		"endless stall unprepare": {`{` + head + `,"unprepare":[{"type":"Stall","duration":"1s","count":0}]}`,
			[]string{`unprepare[0].count: required for Stall on unprepare`}},
		"all problems reported": {`{` + head + `,"prepare":[{"type":"Stall","duration":"x"},{"type":"Transient","count":-2}]}`,
			[]string{`prepare[0].duration`, `prepare[1].count: must not be negative`}},
		"health no type":          {`{` + head + `,"health":[{"duration":"1m"}]}`, []string{`health[0].type: required, one of StreamDrop`}},
		"health unknown type":     {`{` + head + `,"health":[{"type":"Drop"}]}`, []string{`health[0].type: unknown health fault type "Drop"`}},
		"health fault as prepare": {`{` + head + `,"prepare":[{"type":"StreamDrop"}]}`, []string{`prepare[0].type: unknown fault type "StreamDrop"`}},
		"health bad duration":     {`{` + head + `,"health":[{"type":"StreamDrop","duration":"2 minutes"}]}`, []string{`health[0].duration: invalid duration "2 minutes"`}},
		"health zero duration":    {`{` + head + `,"health":[{"type":"StreamDrop","duration":"0s"}]}`, []string{`health[0].duration: must be positive, got "0s" (leave it out to serve the first reconnect)`}},
		"health over the cap":     {`{` + head + `,"health":[{"type":"StreamDrop","duration":"10m0.1s"}]}`, []string{`health[0].duration: "10m0.1s" is longer than the cap of 10m0s`}},
		"health count":            {`{` + head + `,"health":[{"type":"StreamDrop","count":1}]}`, []string{`unknown field "health[0].count"`}},
		"health devices":          {`{` + head + `,"health":[{"type":"StreamDrop","devices":["dev-0"]}]}`, []string{`unknown field "health[0].devices"`}},
		"cdi unknown field":       {`{` + head + `,"cdi":{"hooks":true}}`, []string{`unknown field "cdi.hooks"`}},
		"service no type":         {`{` + head + `,"service":[{"duration":"1m"}]}`, []string{`service[0].type: required, one of Unresponsive`}},
		"service unknown type":    {`{` + head + `,"service":[{"type":"Hang","duration":"1m"}]}`, []string{`service[0].type: unknown service fault type "Hang"`}},
		"service no duration":     {`{` + head + `,"service":[{"type":"Unresponsive"}]}`, []string{`service[0].duration: required`}},
		"service bad duration":    {`{` + head + `,"service":[{"type":"Unresponsive","duration":"90"}]}`, []string{`service[0].duration: invalid duration "90"`}},
		"service zero duration":   {`{` + head + `,"service":[{"type":"Unresponsive","duration":"-1s"}]}`, []string{`service[0].duration: must be positive`}},
		"service over the cap":    {`{` + head + `,"service":[{"type":"Unresponsive","duration":"5m1s"}]}`, []string{`service[0].duration: "5m1s" is longer than the cap of 5m0s (the service must come back)`}},
		"service devices":         {`{` + head + `,"service":[{"type":"Unresponsive","duration":"1m","devices":["dev-0"]}]}`, []string{`unknown field "service[0].devices"`}},
		"service fault as health": {`{` + head + `,"health":[{"type":"Unresponsive"}]}`, []string{`health[0].type: unknown health fault type "Unresponsive"`}},
		"cdi not an object":       {`{` + head + `,"cdi":true}`, []string{"parameters:", "cdi"}},
		"cdi hook type":           {`{` + head + `,"cdi":{"hook":"yes"}}`, []string{"parameters:", "hook"}},
		"omit no count":           {`{` + head + `,"prepare":[{"type":"Omit"}]}`, []string{`prepare[0].count: required for Omit`}},
		"omit zero count":         {`{` + head + `,"prepare":[{"type":"Omit","count":0}]}`, []string{`prepare[0].count: required for Omit`}},
		"omit over the cap":       {`{` + head + `,"prepare":[{"type":"Omit","count":1001}]}`, []string{`prepare[0].count: 1001 is more than the cap of 1000`}},
		"omit on unprepare":       {`{` + head + `,"unprepare":[{"type":"Omit","count":1}]}`, []string{`unprepare[0].type: Omit is only for prepare`}},
		"omit devices":            {`{` + head + `,"prepare":[{"type":"Omit","count":1,"devices":["dev-0"]}]}`, []string{`prepare[0].devices: not allowed for Omit`}},
		"omit message":            {`{` + head + `,"prepare":[{"type":"Omit","count":1,"message":"gone"}]}`, []string{`prepare[0].message: not allowed for Omit`}},
		"omit reason":             {`{` + head + `,"prepare":[{"type":"Omit","count":1,"reason":"DeviceFailed"}]}`, []string{`prepare[0].reason: only allowed for Permanent`}},
		"omit duration":           {`{` + head + `,"prepare":[{"type":"Omit","count":1,"duration":"1s"}]}`, []string{`prepare[0].duration: only allowed for Stall`}},
		"omit lower case":         {`{` + head + `,"prepare":[{"type":"omit","count":1}]}`, []string{`prepare[0].type: unknown fault type "omit"`}},
		"omit as a service fault": {`{` + head + `,"service":[{"type":"Omit","duration":"1m"}]}`, []string{`service[0].type: unknown service fault type "Omit"`}},
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

// The FaultSpecs the suites (suites/dra) and the client build are valid.
func TestSuitesFaultSpecsValid(t *testing.T) {
	one, two, three := 1, 2, 3
	for name, spec := range map[string]FaultSpec{
		"transient":               {Prepare: []Fault{{Type: Transient, Count: &two, Message: "faultline: transient failure"}}},
		"unclassified once":       {Prepare: []Fault{{Type: Unclassified, Count: &one, Message: "faultline: no classification"}}},
		"unclassified always":     {Prepare: []Fault{{Type: Unclassified, Message: "faultline: never works"}}},
		"permanent":               {Prepare: []Fault{{Type: Permanent, Reason: BadConfiguration, Message: "faultline: mode X needs firmware 2"}}},
		"stall past the 45s":      {Prepare: []Fault{{Type: Stall, Duration: (2 * 45 * time.Second).String(), Count: &one}}},
		"transient unprepare":     {Unprepare: []Fault{{Type: Transient, Count: &three, Message: "faultline: transient unprepare failure"}}},
		"device failed":           {Prepare: []Fault{{Type: Permanent, Reason: DeviceFailed, TaintEffect: TaintNone, Devices: []string{"dev-1"}}}},
		"stall at the cap":        {Prepare: []Fault{{Type: Stall, Duration: MaxStall.String()}}},
		"unprepare stall once":    {Unprepare: []Fault{{Type: Stall, Duration: "1m", Count: &one}}},
		"transient at the cap":    {Prepare: []Fault{{Type: Transient, Count: ptrTo(MaxCount)}}},
		"cdi with hook":           {CDI: &CDI{Hook: true}},
		"transient with cdi":      {Prepare: []Fault{{Type: Transient, Count: &one, Message: "faultline: transient failure"}}, CDI: &CDI{Hook: true}},
		"stream drop":             {Health: []HealthFault{{Type: StreamDrop, Duration: (150 * time.Second).String(), Message: "faultline: health stream dropped"}}},
		"stream drop at the cap":  {Health: []HealthFault{{Type: StreamDrop, Duration: MaxStreamDown.String()}}},
		"stream drop once":        {Health: []HealthFault{{Type: StreamDrop}}},
		"unresponsive":            {Service: []ServiceFault{{Type: Unresponsive, Duration: (90 * time.Second).String()}}},
		"unresponsive at the cap": {Service: []ServiceFault{{Type: Unresponsive, Duration: MaxUnresponsive.String()}}},
		"omit once with cdi":      {Prepare: []Fault{{Type: Omit, Count: &one}}, CDI: &CDI{Hook: true}},
		"omit at the cap":         {Prepare: []Fault{{Type: Omit, Count: ptrTo(MaxCount)}}},
	} {
		spec.APIVersion, spec.Kind = APIVersion, Kind
		raw, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(raw); err != nil {
			t.Errorf("%s: %s: %v", name, raw, err)
		}
	}
	// The one invalid spec the suites build on purpose stays invalid.
	if _, err := Parse([]byte(`{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec","prepare":[{"type":"Stall","duration":"5x"}]}`)); err == nil ||
		!strings.Contains(err.Error(), `prepare[0].duration: invalid duration "5x"`) {
		t.Errorf("5x: %v", err)
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestCheckDevices(t *testing.T) {
	spec, err := Parse([]byte(`{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec",
	  "prepare":[{"type":"Unclassified","devices":["dev-0","dev-3"]}],"unprepare":[{"type":"Transient","count":1,"devices":["dev-7"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.CheckDevices([]string{"dev-0", "dev-3", "dev-7"}, "requests (all)"); err != nil {
		t.Errorf("all allocated: %v", err)
	}
	err = spec.CheckDevices([]string{"dev-0", "dev-1"}, "requests gpu")
	if !IsInvalid(err) {
		t.Fatalf("err = %v, want an *InvalidError", err)
	}
	for _, want := range []string{
		`prepare[0].devices[1]: device "dev-3" is not allocated to this claim for requests gpu; valid: dev-0, dev-1`,
		`unprepare[0].devices[0]: device "dev-7" is not allocated`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not contain %q", err, want)
		}
	}
	if err := spec.CheckDevices(nil, "requests x"); err == nil || !strings.Contains(err.Error(), "valid: none") {
		t.Errorf("nothing allocated: %v", err)
	}
}
