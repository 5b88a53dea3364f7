package faults_test

import (
	"testing"
	"time"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
)

// What the builder writes, the plugin's parser must read back as the same
// fault, for every mode and option, and For must find it under the key of
// its instance and event.
func TestBuildRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		event string
		fault faults.Fault
		value string // what the suites wrote by hand before there was a builder
	}{
		{"RunPodSandbox", faults.Fault{Mode: faults.Error}, "error"},
		{"RunPodSandbox", faults.Fault{Mode: faults.Error, Times: 2}, "error;times=2"},
		{"CreateContainer", faults.Fault{Mode: faults.Error, Times: 2, Container: "testpod"}, "error;times=2;container=testpod"},
		{"StartContainer", faults.Fault{Mode: faults.Error, Times: 1}, "error;times=1"},
		{"CreateContainer", faults.Fault{Mode: faults.Stall, Stall: 20 * time.Second, Times: 1}, "stall=20s;times=1"},
		{"CreateContainer", faults.Fault{Mode: faults.Stall, Stall: 1500 * time.Millisecond, Times: 1, Container: "direct"}, "stall=1.5s;times=1;container=direct"},
		{"RunPodSandbox", faults.Fault{Mode: faults.Stall, Stall: 90 * time.Second}, "stall=1m30s"},
		{"RunPodSandbox", faults.Fault{Mode: faults.Crash, Times: 1}, "crash;times=1"},
		{"StartContainer", faults.Fault{Mode: faults.Disconnect, Times: 1}, "disconnect;times=1"},
		{"StopPodSandbox", faults.Fault{Mode: faults.Disconnect}, "disconnect"},
	} {
		const instance = "faultline-b"
		key, value := faults.Annotation(instance, tc.event, tc.fault)
		if value != tc.value {
			t.Errorf("%+v: value %q, want %q", tc.fault, value, tc.value)
		}
		if want := faults.Prefix + instance + "." + tc.event; key != want {
			t.Errorf("%+v: key %q, want %q", tc.fault, key, want)
		}

		parsed, err := faults.Parse(value, faults.IsContainerEvent(tc.event))
		if err != nil {
			t.Errorf("Parse(%q) of the builder's value: %v", value, err)
			continue
		}
		want := tc.fault
		want.Value = value
		if *parsed != want {
			t.Errorf("Parse(%q) = %+v, want %+v", value, *parsed, want)
		}

		found, err := faults.For(map[string]string{key: value}, instance, tc.event, tc.fault.Container)
		if err != nil || found == nil {
			t.Errorf("For(%s=%q): %+v, %v; want the fault", key, value, found, err)
			continue
		}
		want.Key = key
		if *found != want {
			t.Errorf("For(%s=%q) = %+v, want %+v", key, value, *found, want)
		}
	}
}
