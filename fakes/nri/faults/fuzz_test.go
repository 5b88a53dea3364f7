package faults_test

import (
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
)

// maxValue bounds a fuzzed annotation value (Kubernetes allows 256 KiB for
// all of a pod's annotations; longer inputs only slow the fuzzer).
const maxValue = 4096

var seeds = []string{
	"error", "error;times=2", " stall=1m30s ; times=1 ", "stall=500ms;container=app", "disconnect", "crash;times=1;container=a-1",
	"stall=5m", "stall=5m0.000000001s", "stall=2562047h47m16.854775807s", "stall=-1s", "stall=0", "stall=1e3s", "stall=",
	"", ";", ";;", "stal=5s", "Error", "error=boom", "error;times=0", "error;times=+5", "error;times=9223372036854775807",
	"error;times=99999999999999999999", "error;times=1;times=2", "error;container=App", "error;container=" + strings.Repeat("a", 64),
	"error;retries=1", "error;", "error;times", "error;=", "error;container=", "\xff", "error;container=\xff", strings.Repeat(`"`, 300),
}

// FuzzParse (the NRI fault annotation value): any value is parsed without
// panic; an accepted fault satisfies the rules (a known mode, a stall within
// MaxStall, container= only on container events) and what Value writes for
// it parses back to the same fault; an error stays short.
func FuzzParse(f *testing.F) {
	for _, s := range seeds {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, value string, containerEvent bool) {
		if len(value) > maxValue {
			t.Skip()
		}
		got, err := faults.Parse(value, containerEvent)
		if err != nil {
			if len(err.Error()) > 512 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
			return
		}
		checkFault(t, got, containerEvent)
		again, err := faults.Parse(faults.Value(*got), containerEvent)
		if err != nil {
			t.Fatalf("%q parsed as %+v, its Value %q does not parse: %v", value, *got, faults.Value(*got), err)
		}
		again.Value, got.Value = "", ""
		if *again != *got {
			t.Errorf("%q parsed as %+v, its Value parses as %+v", value, *got, *again)
		}
	})
}

func checkFault(t *testing.T, f *faults.Fault, containerEvent bool) {
	t.Helper()
	switch f.Mode {
	case faults.Stall:
		if f.Stall <= 0 || f.Stall > faults.MaxStall {
			t.Errorf("stall %s accepted, outside (0, %s]", f.Stall, faults.MaxStall)
		}
	case faults.Error, faults.Disconnect, faults.Crash:
		if f.Stall != 0 {
			t.Errorf("%s with a stall", f.Mode)
		}
	default:
		t.Errorf("mode %q accepted", f.Mode)
	}
	if f.Times < 0 {
		t.Errorf("times %d accepted", f.Times)
	}
	if f.Container != "" && (!containerEvent || len(f.Container) > 63) {
		t.Errorf("container %q accepted (container event %v)", f.Container, containerEvent)
	}
}

// FuzzFor (a pod's annotations): any annotation is read without panic; a
// fault that For returns is the event's own, well-formed, for the
// container; a malformed annotation of the instance is reported, while
// other instances are not disturbed.
func FuzzFor(f *testing.F) {
	for i, s := range seeds {
		events := []string{"RunPodSandbox", "CreateContainer", "StopPodSandbox", "StopContainer", "CreateContainr", "", "a.CreateContainer"}
		f.Add(events[i%len(events)], s, "app")
	}
	f.Fuzz(func(t *testing.T, event, value, container string) {
		if len(event)+len(value)+len(container) > maxValue {
			t.Skip()
		}
		const instance = "faultline-a"
		ann := map[string]string{faults.Key(instance, event): value, faults.Key("faultline-b", "RunPodSandbox"): "error"}
		for _, asked := range []string{"RunPodSandbox", "CreateContainer", "StopContainer", event} {
			got, err := faults.For(ann, instance, asked, container)
			if got != nil {
				if asked != event || got.Key != faults.Key(instance, event) || got.Value != value {
					t.Errorf("For(%s) returned %+v for annotation %s=%q", asked, got, faults.Key(instance, event), value)
				}
				if got.Container != "" && got.Container != container {
					t.Errorf("For(%s, container %q) returned a fault for container %q", asked, container, got.Container)
				}
				checkFault(t, got, faults.IsContainerEvent(asked))
			}
			if err != nil && len(err.Error()) > 2048 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
		}
		if got, err := faults.For(ann, "faultline-b", "RunPodSandbox", ""); err != nil || got == nil || got.Mode != faults.Error {
			t.Errorf("instance b disturbed by a's annotation %q=%q: %+v, %v", event, value, got, err)
		}
	})
}
