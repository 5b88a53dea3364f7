package faults_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
)

// The plugin must know every event NRI can send, or a fault for a new
// event would be reported as malformed.
func TestEventsCoverNRI(t *testing.T) {
	ours := append(slices.Clone(faults.PodEvents), faults.ContainerEvents...)
	for _, name := range api.EventPrettyNames {
		if !slices.Contains(ours, name) {
			t.Errorf("NRI event %s missing from faults.PodEvents/ContainerEvents", name)
		}
	}
	if len(ours) != len(api.EventPrettyNames) {
		t.Errorf("faults knows %d events, NRI %d", len(ours), len(api.EventPrettyNames))
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		value     string
		container bool
		want      faults.Fault
	}{
		{"error", false, faults.Fault{Mode: faults.Error}},
		{"error;times=2", false, faults.Fault{Mode: faults.Error, Times: 2}},
		{" stall=1m30s ; times=1 ", false, faults.Fault{Mode: faults.Stall, Stall: 90 * time.Second, Times: 1}},
		{"stall=500ms;container=app", true, faults.Fault{Mode: faults.Stall, Stall: 500 * time.Millisecond, Container: "app"}},
		{"disconnect", false, faults.Fault{Mode: faults.Disconnect}},
		{"crash;times=1;container=a-1", true, faults.Fault{Mode: faults.Crash, Times: 1, Container: "a-1"}},
	} {
		got, err := faults.Parse(tc.value, tc.container)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.value, err)
			continue
		}
		tc.want.Value = tc.value
		if *got != tc.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.value, *got, tc.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct {
		value     string
		container bool
		reason    string
	}{
		{"", false, "no fault given"},
		{"stal=5s", false, `unknown fault "stal"`},
		{"Error", false, `unknown fault "Error"`},
		{"error=boom", false, "error takes no value"},
		{"stall", false, "stall needs a duration"},
		{"stall=5", false, `stall duration "5"`},
		{"stall=-1s", false, `stall duration "-1s"`},
		{"stall=5m0.001s", false, `stall duration "5m0.001s" is longer than the cap of 5m0s`},
		{"stall=1h;times=1", false, `stall duration "1h" is longer than the cap of 5m0s`},
		{"error;times=0", false, `times="0" is not a positive integer`},
		{"error;times=x", false, `times="x"`},
		{"error;times=1;times=2", false, `option "times" given twice`},
		{"error;container=app", false, "container= only applies to container events"},
		{"error;container=App", true, `container="App" is not a valid container name`},
		{"error;retries=1", false, `unknown option "retries=1"`},
		{"error;", false, `unknown option ""`},
	} {
		_, err := faults.Parse(tc.value, tc.container)
		if err == nil || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("Parse(%q) error = %v, want it to contain %q", tc.value, err, tc.reason)
		}
	}
}

func TestFor(t *testing.T) {
	ann := map[string]string{
		faults.Key("a", "CreateContainer"): "error;times=2;container=app",
		faults.Key("a", "RunPodSandbox"):   "stall=3s",
		faults.Key("b", "CreateContainer"): "crash",
		// An instance whose name extends "a" is not "a".
		faults.Prefix + "a.x.CreateContainer": "disconnect",
		"unrelated.example.com/key":           "whatever",
	}

	f, err := faults.For(ann, "a", "CreateContainer", "app")
	if err != nil || f == nil || f.Mode != faults.Error || f.Times != 2 || f.Key != faults.Key("a", "CreateContainer") {
		t.Errorf("For(a, CreateContainer, app) = %+v, %v", f, err)
	}
	if f, err := faults.For(ann, "a", "CreateContainer", "sidecar"); f != nil || err != nil {
		t.Errorf("container-scoped fault applied to another container: %+v, %v", f, err)
	}
	if f, err := faults.For(ann, "a", "StartContainer", "app"); f != nil || err != nil {
		t.Errorf("fault for another event applied: %+v, %v", f, err)
	}
	if f, err := faults.For(ann, "b", "CreateContainer", "x"); err != nil || f == nil || f.Mode != faults.Crash {
		t.Errorf("For(b) = %+v, %v", f, err)
	}
	if f, err := faults.For(ann, "a.x", "CreateContainer", "x"); err != nil || f == nil || f.Mode != faults.Disconnect {
		t.Errorf("For(a.x) = %+v, %v", f, err)
	}
	if f, err := faults.For(nil, "a", "CreateContainer", "x"); f != nil || err != nil {
		t.Errorf("For(no annotations) = %+v, %v", f, err)
	}
}

// A malformed annotation for an instance fails every event of that
// instance, naming the key, and leaves other instances alone.
func TestForMalformed(t *testing.T) {
	for _, tc := range []struct {
		key, value, reason string
	}{
		{faults.Key("a", "StopContainer"), "stal=5s", `unknown fault "stal"`},
		{faults.Key("a", "CreateContainr"), "error", `unknown event "CreateContainr"`},
		{faults.Key("a", "RunPodSandbox"), "error;container=app", "container= only applies to container events"},
	} {
		ann := map[string]string{tc.key: tc.value, faults.Key("b", "RunPodSandbox"): "error"}
		_, err := faults.For(ann, "a", "RunPodSandbox", "")
		var m *faults.MalformedError
		if !errors.As(err, &m) || m.Key != tc.key || !strings.Contains(err.Error(), tc.key) ||
			!strings.Contains(err.Error(), tc.reason) {
			t.Errorf("For(%s=%q) error = %v, want a MalformedError naming the key and %q", tc.key, tc.value, err, tc.reason)
		}
		if f, err := faults.For(ann, "b", "RunPodSandbox", ""); err != nil || f == nil {
			t.Errorf("instance b affected by a's malformed annotation: %+v, %v", f, err)
		}
	}
}

func TestValidateInstance(t *testing.T) {
	for _, ok := range []string{"faultline-a", "a", "x.y_z", strings.Repeat("n", 35)} {
		if err := faults.ValidateInstance(ok); err != nil {
			t.Errorf("ValidateInstance(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", "a+b", "a/b", strings.Repeat("n", 36)} {
		if err := faults.ValidateInstance(bad); err == nil {
			t.Errorf("ValidateInstance(%q) accepted", bad)
		}
	}
}

// The event's own well-formed fault is returned along with another
// annotation's error, for the caller that must not fail (teardown).
func TestForMalformedKeepsOwnFault(t *testing.T) {
	ann := map[string]string{
		faults.Key("a", "StartContainer"): "stal=5s",
		faults.Key("a", "StopPodSandbox"): "error;times=1",
	}
	f, err := faults.For(ann, "a", "StopPodSandbox", "")
	var m *faults.MalformedError
	if !errors.As(err, &m) || m.Key != faults.Key("a", "StartContainer") {
		t.Errorf("error %v, want the StartContainer annotation", err)
	}
	if f == nil || f.Mode != faults.Error || f.Times != 1 {
		t.Errorf("StopPodSandbox's own fault: %+v", f)
	}
	for _, e := range []string{"StopPodSandbox", "RemovePodSandbox", "StopContainer", "RemoveContainer"} {
		if !faults.IsTeardown(e) {
			t.Errorf("%s is a teardown event", e)
		}
	}
	for _, e := range []string{"RunPodSandbox", "CreateContainer", "StartContainer", "UpdateContainer", "PostStartContainer"} {
		if faults.IsTeardown(e) {
			t.Errorf("%s is no teardown event", e)
		}
	}
}

// A huge malformed value makes a short error.
func TestMalformedErrorIsShort(t *testing.T) {
	huge := strings.Repeat(`"`, 256<<10)
	for _, value := range []string{huge, "error;" + huge, "stall=" + huge, "error;times=" + huge, strings.Repeat("é", 100000)} {
		_, err := faults.For(map[string]string{faults.Key("a", "RunPodSandbox"): value}, "a", "RunPodSandbox", "")
		if err == nil || len(err.Error()) > 1024 {
			t.Errorf("error of %d bytes for a value of %d bytes", len(err.Error()), len(value))
		}
	}
}
