package faultspec

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// maxParameters is the API server's limit of opaque parameters (10 KiB):
// the parser never sees more.
const maxParameters = 10 << 10

// FuzzParse: any opaque parameters are parsed without panic; an error is
// an *InvalidError; an accepted FaultSpec satisfies the rules (stalls within
// MaxStall, counts within MaxCount, unprepare faults that end, device names
// valid and unique, health faults of a known type down for at most
// MaxStreamDown, Omit on prepare only, with a count and for the whole
// claim) and re-marshals and re-parses to the same value.
func FuzzParse(f *testing.F) {
	const head = `"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec"`
	for _, s := range []string{
		`{` + head + `,"prepare":[{"type":"Transient","count":2,"message":"flaky"},{"type":"Permanent","reason":"DeviceFailed","taintEffect":"NoSchedule","devices":["dev-1"]},{"type":"Stall","duration":"1m","count":1},{"type":"Unclassified"}],"unprepare":[{"type":"Transient","count":3}]}`,
		`{` + head + `,"prepare":[{"type":"Stall","duration":"1m30s","count":1}]}`,
		`{` + head + `,"prepare":[{"type":"Stall","duration":"5x"}]}`,
		`{` + head + `,"prepare":[{"type":"Stall","duration":"2562047h"}]}`,
		`{` + head + `,"prepare":[{"type":"Stall","duration":"-1s"}]}`,
		`{` + head + `,"unprepare":[{"type":"Permanent","reason":"DeviceFailed"}]}`,
		`{` + head + `,"unprepare":[{"type":"Unclassified"}]}`,
		`{` + head + `,"prepare":[{"type":"Transient","count":1e3}]}`,
		`{` + head + `,"prepare":[{"type":"Transient","count":99999999999999999999}]}`,
		`{` + head + `,"prepare":[{"type":"Unclassified","devices":[" dev-1","dev-1","dev-1",""]}]}`,
		`{` + head + `,"prepare":[],"unprepare":[]}`,
		`{` + head + `,"prepare":[{"type":"Unclassified","devices":[]}]}`,
		`{` + head + `,"prepare":[{"type":"Unclassified","message":"\xff\xfe bad utf8 \ud800"}]}`,
		`{` + head + `,"kind":"FaultSpec"}`,
		`{` + head + `,"Prepare":[{"Type":"Transient","Count":1}]}`,
		`{` + head + `,"prepare":null}`,
		`{` + head + `,"prepare":[null]}`,
		`{` + head + `,"health":[{"type":"StreamDrop","duration":"2m30s","message":"gone"},{"type":"StreamDrop"}],"cdi":{"hook":true}}`,
		`{` + head + `,"health":[{"type":"StreamDrop","duration":"0s"}]}`,
		`{` + head + `,"health":[{"type":"StreamDrop","duration":"11m"}]}`,
		`{` + head + `,"health":[{"type":"Drop","count":1}]}`,
		`{` + head + `,"health":[],"cdi":{}}`,
		`{` + head + `,"health":null,"cdi":null}`,
		`{` + head + `,"service":[{"type":"Unresponsive","duration":"1m30s"}]}`,
		`{` + head + `,"service":[{"type":"Unresponsive","duration":"5m0.000000001s"},{"type":"Unresponsive"}]}`,
		`{` + head + `,"service":[],"health":[]}`,
		`{` + head + `,"cdi":{"hook":false},"cdi":{"hook":true}}`,
		`{` + head + `,"cdi":[]}`,
		`{` + head + `,"prepare":[{"type":"Omit","count":1},{"type":"Transient","count":1}],"cdi":{"hook":true}}`,
		`{` + head + `,"prepare":[{"type":"Omit","count":0,"devices":["dev-0"],"message":"x"}],"unprepare":[{"type":"Omit","count":1}]}`,
		`{"apiVersion":"v1"}`, `null`, `[]`, `"x"`, ``, `{`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > maxParameters {
			t.Skip()
		}
		spec, err := Parse(raw)
		if err != nil {
			if !IsInvalid(err) {
				t.Fatalf("error %T %v is not an *InvalidError", err, err)
			}
			return
		}
		checkInvariants(t, spec)
		again, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		spec2, err := Parse(again)
		if err != nil {
			t.Fatalf("%s parsed, its re-marshalled %s does not: %v", raw, again, err)
		}
		if !reflect.DeepEqual(spec, spec2) {
			t.Fatalf("%s parsed as %+v, re-marshalled %s parses as %+v", raw, spec, again, spec2)
		}
	})
}

func checkInvariants(t *testing.T, spec *FaultSpec) {
	t.Helper()
	if spec.APIVersion != APIVersion || spec.Kind != Kind {
		t.Errorf("accepted %s %s", spec.APIVersion, spec.Kind)
	}
	for phase, faults := range map[string][]Fault{"prepare": spec.Prepare, "unprepare": spec.Unprepare} {
		for i, f := range faults {
			if f.Type == Stall && (f.StallDuration() <= 0 || f.StallDuration() > MaxStall) {
				t.Errorf("%s[%d]: stall %q accepted, outside (0, %s]", phase, i, f.Duration, MaxStall)
			}
			if n := f.CountOrZero(); n < 0 || n > MaxCount {
				t.Errorf("%s[%d]: count %d accepted", phase, i, n)
			}
			if phase == "unprepare" && (f.Type == Permanent || f.CountOrZero() == 0) {
				t.Errorf("unprepare[%d]: a fault that never ends accepted: %+v", i, f)
			}
			if f.Type == Omit && (phase != "prepare" || f.CountOrZero() == 0 || len(f.Devices) > 0 || f.Message != "") {
				t.Errorf("%s[%d]: omit accepted: %+v", phase, i, f)
			}
			for j, d := range f.Devices {
				if d == "" || strings.TrimSpace(d) != d || slices.Index(f.Devices, d) != j || !deviceName.MatchString(d) {
					t.Errorf("%s[%d]: device %q accepted", phase, i, d)
				}
			}
		}
	}
	if spec.Health != nil && len(spec.Health) == 0 {
		t.Errorf("empty health list not normalized to nil")
	}
	if spec.Service != nil && len(spec.Service) == 0 {
		t.Errorf("empty service list not normalized to nil")
	}
	for i, f := range spec.Service {
		if f.Type != Unresponsive {
			t.Errorf("service[%d]: type %q accepted", i, f.Type)
		}
		if d := f.DownDuration(); d <= 0 || d > MaxUnresponsive {
			t.Errorf("service[%d]: duration %q accepted, outside (0, %s]", i, f.Duration, MaxUnresponsive)
		}
	}
	for i, h := range spec.Health {
		if h.Type != StreamDrop {
			t.Errorf("health[%d]: type %q accepted", i, h.Type)
		}
		if d := h.DownDuration(); d < 0 || d > MaxStreamDown || (h.Duration != "" && d == 0) {
			t.Errorf("health[%d]: duration %q accepted, outside (0, %s]", i, h.Duration, MaxStreamDown)
		}
	}
}
