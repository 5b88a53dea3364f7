package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
	validator "github.com/containerd/nri/plugins/default-validator/builtin"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/plugin"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
)

// startChain starts instances a, b, c (indexes 10, 20, 30) in reverse
// order, so that the call order can only come from the indexes.
func startChain(t *testing.T, rt *testRuntime, opts ...instanceOptions) (a, b, c *instance) {
	t.Helper()
	c = startInstance(t, rt.socket, "faultline-c", "30")
	b = startInstance(t, rt.socket, "faultline-b", "20", opts...)
	a = startInstance(t, rt.socket, "faultline-a", "10")
	for _, in := range []*instance{a, b, c} {
		in.waitReady(t)
	}
	rt.waitRegistered(t, 3)
	return a, b, c
}

// Every pod and container event reaches the plugin, and is recorded in
// arrival order with what it was about.
func TestRecordsEveryEvent(t *testing.T) {
	rt := startRuntime(t, socketPath(t))
	a := startInstance(t, rt.socket, "faultline-a", "10")
	a.waitReady(t)
	rt.waitRegistered(t, 1)

	pod := newPod("uid-all", nil)
	ctr := newContainer(pod, "app")
	events := []string{
		"RunPodSandbox", "CreateContainer", "PostCreateContainer", "StartContainer", "PostStartContainer",
		"UpdateContainer", "PostUpdateContainer", "UpdatePodSandbox", "PostUpdatePodSandbox",
		"StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox",
	}
	var want []string
	for _, ev := range events {
		if err := rt.send(ev, pod, ctr); err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
		want = append(want, ev+":ok")
	}
	if got := a.results(pod.Uid); !equal(got, want) {
		t.Fatalf("records:\n%v\nwant:\n%v", got, want)
	}

	var prev record.Event
	for i, e := range a.rec.List(pod.Uid) {
		if e.Plugin != "faultline-a" || e.Index != "10" || e.PodNamespace != "ns" || e.PodName != pod.Name {
			t.Errorf("record %d: bad identity %+v", i, e)
		}
		isContainer := strings.Contains(e.Event, "Container")
		if isContainer && (e.ContainerName != "app" || e.ContainerID != ctr.Id) || !isContainer && e.ContainerName != "" {
			t.Errorf("record %d (%s): container %q/%q", i, e.Event, e.ContainerName, e.ContainerID)
		}
		if e.PodSandboxID != pod.Id {
			t.Errorf("record %d (%s): sandbox ID %q, want %q", i, e.Event, e.PodSandboxID, pod.Id)
		}
		if e.End.Before(e.Start) || i > 0 && (e.Seq <= prev.Seq || e.Start.Before(prev.Start)) {
			t.Errorf("record %d out of order: %+v after %+v", i, e, prev)
		}
		prev = e
	}

	// A container event without its pod (containerd sends StopContainer
	// with a nil pod once the sandbox is gone) is still attributed to the
	// pod, from the kubelet's container labels.
	if err := rt.send("StopContainer", nil, ctr); err != nil {
		t.Fatal(err)
	}
	if e := a.last(t, pod.Uid, "StopContainer"); e.PodName != pod.Name || e.Seq <= prev.Seq {
		t.Errorf("StopContainer without pod recorded as %+v", e)
	}
}

// Plugins are called in index order; an error stops the chain: the
// higher index is not called and the runtime gets the error, which names
// the plugin, its index, the event, the pod and the container.
func TestErrorStopsChain(t *testing.T) {
	rt := startRuntime(t, socketPath(t))
	a, b, c := startChain(t, rt)
	pod := newPod("uid-chain", map[string]string{b.key("CreateContainer"): "error"})

	if err := rt.send("RunPodSandbox", pod, nil); err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	if got, want := rt.metrics.called("RunPodSandbox"), []string{"10-faultline-a", "20-faultline-b", "30-faultline-c"}; !equal(got, want) {
		t.Errorf("RunPodSandbox called %v, want %v", got, want)
	}

	err := rt.send("CreateContainer", pod, newContainer(pod, "app"))
	want := `faultline NRI plugin "faultline-b" (index 20): injected error in CreateContainer for pod ns/pod-uid-chain container app`
	if got := plugin.Message("faultline-b", "20", plugin.InjectedError, "CreateContainer", "ns", pod.Name, "app"); got != want {
		t.Errorf("plugin.Message = %q, want %q", got, want)
	}
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("CreateContainer error = %v, want one ending in %q", err, want)
	}
	t.Logf("the runtime sees: %v", err)
	if got := rt.metrics.called("CreateContainer"); !equal(got, []string{"10-faultline-a", "20-faultline-b"}) {
		t.Errorf("CreateContainer called %v, want a then b only", got)
	}

	ea, eb := a.last(t, pod.Uid, "CreateContainer"), b.last(t, pod.Uid, "CreateContainer")
	if ea.Result != record.OK || eb.Result != record.Error || eb.Message != want || eb.Fault != "error" {
		t.Errorf("records: a %+v, b %+v", ea, eb)
	}
	if eb.Start.Before(ea.End) {
		t.Errorf("b started (%s) before a finished (%s)", eb.Start, ea.End)
	}
	if got := c.results(pod.Uid); !equal(got, []string{"RunPodSandbox:ok"}) {
		t.Errorf("c saw %v, want RunPodSandbox only", got)
	}
}

// error;times=N fails the first N events of that pod and container, then
// lets them pass; container= leaves other containers alone.
func TestErrorTimes(t *testing.T) {
	rt := startRuntime(t, socketPath(t))
	a := startInstance(t, rt.socket, "faultline-a", "10")
	a.waitReady(t)
	rt.waitRegistered(t, 1)
	pod := newPod("uid-times", map[string]string{a.key("CreateContainer"): "error;times=2;container=app"})

	for i, wantErr := range []bool{true, true, false} {
		err := rt.send("CreateContainer", pod, newContainer(pod, "app"))
		if (err != nil) != wantErr {
			t.Errorf("attempt %d: error = %v, want error: %v", i+1, err, wantErr)
		}
	}
	if err := rt.send("CreateContainer", pod, newContainer(pod, "sidecar")); err != nil {
		t.Errorf("sidecar: %v", err)
	}
	want := []string{"CreateContainer:error", "CreateContainer:error", "CreateContainer:ok", "CreateContainer:ok"}
	if got := a.results(pod.Uid); !equal(got, want) {
		t.Errorf("records %v, want %v", got, want)
	}
	if e := a.rec.List(pod.Uid)[2]; e.Fault == "" || !strings.Contains(e.Message, "already fired") {
		t.Errorf("third attempt record %+v should say the fault is used up", e)
	}
}

// A stall shorter than the runtime's timeout only delays the event.
func TestStallShorterThanTimeout(t *testing.T) {
	rt := startRuntime(t, socketPath(t))
	_, b, c := startChain(t, rt)
	const stall = 100 * time.Millisecond
	pod := newPod("uid-short", map[string]string{b.key("RunPodSandbox"): "stall=" + stall.String()})

	began := time.Now()
	if err := rt.send("RunPodSandbox", pod, nil); err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	if took := time.Since(began); took < stall || took >= requestTimeout {
		t.Errorf("RunPodSandbox took %s, want [%s, %s)", took, stall, requestTimeout)
	}
	if e := b.last(t, pod.Uid, "RunPodSandbox"); e.Result != record.Stalled || e.Interrupted || e.End.Sub(e.Start) < stall {
		t.Errorf("b recorded %+v", e)
	}
	if c.last(t, pod.Uid, "RunPodSandbox").Result != record.OK {
		t.Error("c not called after b")
	}
	if n := b.notes(record.Disconnected); n != 0 || rt.metrics.registered() != 3 {
		t.Errorf("b was dropped: %d disconnects, %d plugins registered", n, rt.metrics.registered())
	}
}

// A stall longer than the timeout is a fatal error: the runtime drops the
// plugin, calls the next one and returns no error. The plugin comes back
// and sees later events.
func TestStallLongerThanTimeout(t *testing.T) {
	rt := startRuntime(t, socketPath(t))
	_, b, c := startChain(t, rt)
	synced := b.notes(record.Synchronize)
	pod := newPod("uid-long", map[string]string{b.key("RunPodSandbox"): "stall=1m"})

	began := time.Now()
	if err := rt.send("RunPodSandbox", pod, nil); err != nil {
		t.Fatalf("RunPodSandbox: the runtime saw %v, want no error", err)
	}
	if took := time.Since(began); took < requestTimeout || took > requestTimeout+5*time.Second {
		t.Errorf("RunPodSandbox took %s, want about the %s timeout", took, requestTimeout)
	}
	if err := rt.metrics.callErr("20-faultline-b", "RunPodSandbox"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("runtime got %v from b, want a deadline error", err)
	}
	if got := rt.metrics.called("RunPodSandbox"); !equal(got, []string{"10-faultline-a", "20-faultline-b", "30-faultline-c"}) {
		t.Errorf("RunPodSandbox called %v: the chain must go on without b", got)
	}
	eventually(t, "b's stalled handler to end", func() bool {
		return b.last(t, pod.Uid, "RunPodSandbox").Result != record.Pending
	})
	if e := b.last(t, pod.Uid, "RunPodSandbox"); e.Result != record.Stalled || !e.Interrupted {
		t.Errorf("b recorded %+v, want an interrupted stall", e)
	}

	b.waitReconnected(t, rt, synced, 3)
	later := newPod("uid-later", nil)
	if err := rt.send("RunPodSandbox", later, nil); err != nil {
		t.Fatal(err)
	}
	if got := b.results(later.Uid); !equal(got, []string{"RunPodSandbox:ok"}) {
		t.Errorf("after reconnecting b saw %v", got)
	}
	if got := c.results(pod.Uid); !equal(got, []string{"RunPodSandbox:ok"}) {
		t.Errorf("c saw %v", got)
	}
}

// disconnect closes the connection mid-event: like a timeout, the runtime
// drops the plugin without an error; the plugin reconnects.
func TestDisconnect(t *testing.T) {
	rt := startRuntime(t, socketPath(t))
	_, b, c := startChain(t, rt)
	synced := b.notes(record.Synchronize)
	pod := newPod("uid-disc", map[string]string{b.key("StartContainer"): "disconnect"})
	ctr := newContainer(pod, "app")

	if err := rt.send("StartContainer", pod, ctr); err != nil {
		t.Fatalf("StartContainer: the runtime saw %v, want no error", err)
	}
	if e := b.last(t, pod.Uid, "StartContainer"); e.Result != record.Disconnect {
		t.Errorf("b recorded %+v", e)
	}
	if c.last(t, pod.Uid, "StartContainer").Result != record.OK {
		t.Error("c not called")
	}
	b.waitReconnected(t, rt, synced, 3)
	if err := rt.send("PostStartContainer", pod, ctr); err != nil {
		t.Fatal(err)
	}
	if b.last(t, pod.Uid, "PostStartContainer").Result != record.OK {
		t.Error("b missed the event after reconnecting")
	}
}

// crash exits the process mid-event (here Exit only reports the code, and
// the plugin plays dead). The runtime carries on without it. The restarted
// process keeps the record and does not fire a times=1 crash again.
func TestCrash(t *testing.T) {
	rt := startRuntime(t, socketPath(t))
	state := t.TempDir()
	a, b, c := startChain(t, rt, instanceOptions{stateDir: state})
	pod := newPod("uid-crash", map[string]string{b.key("CreateContainer"): "crash;times=1"})

	if err := rt.send("CreateContainer", pod, newContainer(pod, "app")); err != nil {
		t.Fatalf("CreateContainer: the runtime saw %v, want no error", err)
	}
	select {
	case code := <-b.exits:
		if code != plugin.CrashExitCode {
			t.Errorf("exit code %d, want %d", code, plugin.CrashExitCode)
		}
	case <-time.After(waitTimeout):
		t.Fatal("crash did not exit")
	}
	if err := b.wait(t); !errors.Is(err, plugin.ErrExited) {
		t.Errorf("Run returned %v, want ErrExited", err)
	}
	if !errors.Is(b.Ready(), plugin.ErrExited) {
		t.Errorf("crashed plugin ready: %v", b.Ready())
	}
	if c.last(t, pod.Uid, "CreateContainer").Result != record.OK {
		t.Error("c not called after b crashed")
	}
	if e := b.last(t, pod.Uid, "CreateContainer"); e.Result != record.Crash || e.Boot != 0 {
		t.Errorf("b recorded %+v", e)
	}
	eventually(t, "the runtime to notice b is gone", func() bool {
		_ = rt.send("RunPodSandbox", newPod("uid-probe", nil), nil)
		return rt.metrics.registered() == 2
	})

	// The kubelet restarts the container: same name, index and state dir.
	restarted := startInstance(t, rt.socket, "faultline-b", "20", instanceOptions{stateDir: state})
	restarted.waitReady(t)
	rt.waitRegistered(t, 3)
	if err := rt.send("CreateContainer", pod, newContainer(pod, "app")); err != nil {
		t.Fatalf("retried CreateContainer: %v", err)
	}

	srv := httptest.NewServer(record.Handler(restarted.rec, restarted.Ready))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/events?podUID=" + pod.Uid)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []record.Event
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Result != record.Crash || got[0].Boot != 0 || got[1].Result != record.OK || got[1].Boot != 1 {
		t.Errorf("GET /events after the restart: %+v", got)
	}
	if a.last(t, pod.Uid, "CreateContainer").Result != record.OK {
		t.Error("a disturbed")
	}
}

// A malformed annotation fails the instance's events with an error that
// names the key and the reason; the plugin stays up.
func TestMalformedAnnotation(t *testing.T) {
	rt := startRuntime(t, socketPath(t))
	a, b, _ := startChain(t, rt)
	for i, tc := range []struct{ key, value, reason string }{
		{a.key("StartContainer"), "stal=5s", `unknown fault "stal"`},
		{"nri.faultline.k8s.io/faultline-a.CreateContainr", "error", `unknown event "CreateContainr"`},
		{a.key("CreateContainer"), "error;times=0", `times="0" is not a positive integer`},
		{a.key("RunPodSandbox"), "error;container=app", "container= only applies to container events"},
	} {
		pod := newPod("uid-bad-"+string(rune('0'+i)), map[string]string{tc.key: tc.value})
		err := rt.send("RunPodSandbox", pod, nil)
		want := `faultline NRI plugin "faultline-a" (index 10): malformed fault annotation in RunPodSandbox for pod ns/` + pod.Name +
			`: annotation ` + tc.key + `="` + tc.value + `": ` + tc.reason
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%q: error = %v\nwant it to contain %s", tc.key, tc.value, err, want)
		}
		if got := b.results(pod.Uid); len(got) != 0 {
			t.Errorf("b called after a failed: %v", got)
		}
	}
	if err := rt.send("RunPodSandbox", newPod("uid-good", nil), nil); err != nil {
		t.Errorf("good pod after malformed ones: %v", err)
	}
	if a.notes(record.Disconnected) != 0 || a.Ready() != nil {
		t.Error("a malformed annotation disturbed the plugin")
	}
}

// A malformed annotation never fails a teardown event (the runtime could
// not stop or remove the pod): the plugin logs it and says so in the
// record; other events still fail; a teardown's own valid fault still fires.
func TestMalformedAnnotationSparesTeardown(t *testing.T) {
	rt := startRuntime(t, socketPath(t))
	a, b, _ := startChain(t, rt)
	pod := newPod("uid-teardown", map[string]string{
		a.key("StartContainer"): "stal=5s",
		b.key("StopContainer"):  "error;times=1",
	})
	if err := rt.send("RunPodSandbox", pod, nil); err == nil || !strings.Contains(err.Error(), "malformed fault annotation in RunPodSandbox") {
		t.Errorf("RunPodSandbox: %v, want the malformed annotation", err)
	}
	ctr := newContainer(pod, "app")
	if err := rt.send("CreateContainer", pod, ctr); err == nil || !strings.Contains(err.Error(), `unknown fault "stal"`) {
		t.Errorf("CreateContainer: %v, want the malformed annotation", err)
	}
	// b's own StopContainer fault fires, a's malformed annotation does not stop it.
	if err := rt.send("StopContainer", pod, ctr); err == nil || !strings.Contains(err.Error(), `"faultline-b" (index 20): injected error in StopContainer`) {
		t.Errorf("StopContainer: %v, want b's injected error", err)
	}
	for _, event := range []string{"StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox"} {
		var c *api.Container
		if faults.IsContainerEvent(event) {
			c = ctr
		}
		if err := rt.send(event, pod, c); err != nil {
			t.Errorf("%s failed: %v", event, err)
		}
		e := a.last(t, pod.Uid, event)
		if e.Result != record.OK || !strings.Contains(e.Message, "malformed fault annotation ignored in "+event) ||
			!strings.Contains(e.Message, `unknown fault "stal"`) {
			t.Errorf("%s record: %+v", event, e)
		}
	}
	if !strings.Contains(a.logs.String(), "malformed fault annotation ignored in a teardown event") {
		t.Errorf("no log line for the ignored annotation:\n%s", a.logs.String())
	}
	if a.notes(record.Disconnected) != 0 || a.Ready() != nil {
		t.Error("a malformed annotation disturbed the plugin")
	}
}

// After the runtime restarts (its process dies, the socket goes away and
// comes back), the plugin reconnects to the new runtime.
func TestReconnectAfterRuntimeRestart(t *testing.T) {
	socket := socketPath(t)
	rt := startRuntime(t, socket)
	a := startInstance(t, socket, "faultline-a", "10")
	a.waitReady(t)
	rt.waitRegistered(t, 1)
	synced := a.notes(record.Synchronize)

	rt.Stop()
	a.conns.cutAll() // the dead runtime's connections go with it
	eventually(t, "a to notice the runtime is gone", func() bool { return a.Ready() != nil })
	if !strings.Contains(a.Ready().Error(), socket) {
		t.Errorf("not-ready reason %q does not name the socket", a.Ready())
	}

	restarted := startRuntime(t, socket)
	a.waitReconnected(t, restarted, synced, 1)
	pod := newPod("uid-restart", nil)
	if err := restarted.send("RunPodSandbox", pod, nil); err != nil {
		t.Fatal(err)
	}
	if got := a.results(pod.Uid); !equal(got, []string{"RunPodSandbox:ok"}) {
		t.Errorf("a saw %v after the runtime restarted", got)
	}
	if a.notes(record.Disconnected) != 1 {
		t.Errorf("want one Disconnected record, have %d", a.notes(record.Disconnected))
	}
}

// The default validator's required plugins (config required_plugins or
// pod annotation required-plugins.noderesource.dev) are checked at
// CreateContainer against the plugins the runtime had registered when it
// started relaying the request.
func TestRequiredPluginsValidator(t *testing.T) {
	rt := startRuntime(t, socketPath(t),
		adaptation.WithDefaultValidator(&validator.DefaultValidatorConfig{Enable: true}))
	a := startInstance(t, rt.socket, "faultline-a", "10")
	b := startInstance(t, rt.socket, "faultline-b", "20")
	a.waitReady(t)
	b.waitReady(t)
	rt.waitRegistered(t, 3) // the builtin 00-default-validator counts too

	pod := newPod("uid-req", map[string]string{
		"required-plugins.noderesource.dev": `["faultline-b"]`,
		b.key("CreateContainer"):            "stall=1m;times=1",
	})
	// Surprise: b times out in this very CreateContainer and is dropped,
	// yet it counts as present, because it was registered when the
	// request started.
	if _, err := rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: newContainer(pod, "app")}); err != nil {
		t.Errorf("CreateContainer with b timing out: %v", err)
	}

	// Without b, creation is rejected.
	b.stop()
	_ = b.wait(t)
	eventually(t, "the runtime to notice b is gone", func() bool {
		_ = rt.send("RunPodSandbox", newPod("uid-probe", nil), nil)
		return rt.metrics.registered() == 2
	})
	_, err := rt.CreateContainer(context.Background(), &api.CreateContainerRequest{Pod: pod, Container: newContainer(pod, "app")})
	want := `validator "00-default-validator" rejected container adjustment, reason: validation error: required plugin "faultline-b" not present`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CreateContainer without b: %v\nwant %s", err, want)
	}
	t.Logf("the runtime sees: %v", err)
	if got := a.results(pod.Uid); !equal(got, []string{"CreateContainer:ok", "CreateContainer:ok"}) {
		t.Errorf("a saw %v: plugins run before validation", got)
	}
}

// As a validator (--validator), the plugin's faults apply to
// ValidateContainerAdjustment. An error rejects the container; unlike the
// other events, a timeout also fails it.
func TestValidatorFaults(t *testing.T) {
	rt := startRuntime(t, socketPath(t))
	a := startInstance(t, rt.socket, "faultline-a", "10", instanceOptions{
		config: func(c *plugin.Config) { c.Validator = true },
	})
	a.waitReady(t)
	rt.waitRegistered(t, 1)

	pod := newPod("uid-val-err", map[string]string{a.key("ValidateContainerAdjustment"): "error;container=app"})
	err := rt.send("CreateContainer", pod, newContainer(pod, "app"))
	want := `validator "10-faultline-a" rejected container adjustment, reason: faultline NRI plugin "faultline-a" (index 10): injected error in ValidateContainerAdjustment for pod ns/pod-uid-val-err container app`
	if err == nil || err.Error() != want {
		t.Errorf("CreateContainer: %v\nwant %s", err, want)
	}
	if err := rt.send("CreateContainer", pod, newContainer(pod, "sidecar")); err != nil {
		t.Errorf("sidecar: %v", err)
	}

	synced := a.notes(record.Synchronize)
	stalled := newPod("uid-val-stall", map[string]string{a.key("ValidateContainerAdjustment"): "stall=1m;times=1"})
	err = rt.send("CreateContainer", stalled, newContainer(stalled, "app"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "validator plugin 10-faultline-a failed") {
		t.Errorf("CreateContainer with a stalled validator: %v, want a deadline error naming the validator", err)
	}
	t.Logf("the runtime sees: %v", err)
	a.waitReconnected(t, rt, synced, 1)
	if err := rt.send("CreateContainer", stalled, newContainer(stalled, "app")); err != nil {
		t.Errorf("after reconnecting: %v", err)
	}
}

// With a failure policy (NRI >= v0.12.4 runtimes only), a timeout fails the
// request like an error, and keep_connected keeps the plugin registered.
func TestFailurePolicy(t *testing.T) {
	for _, keep := range []bool{false, true} {
		name := map[bool]string{false: "fail_request", true: "fail_request+keep_connected"}[keep]
		t.Run(name, func(t *testing.T) {
			rt := startRuntime(t, socketPath(t))
			_, b, c := startChain(t, rt, instanceOptions{config: func(cfg *plugin.Config) {
				cfg.FailurePolicy = &api.FailurePolicy{FailRequest: true, KeepConnected: keep}
			}})
			pod := newPod("uid-policy", map[string]string{b.key("RunPodSandbox"): "stall=1m;times=1"})

			err := rt.send("RunPodSandbox", pod, nil)
			want := "plugin 20-faultline-b failed to handle RunPodSandbox request: context deadline exceeded"
			if err == nil || err.Error() != want {
				t.Errorf("RunPodSandbox: %v, want %s", err, want)
			}
			if got := c.results(pod.Uid); len(got) != 0 {
				t.Errorf("c called after b failed: %v", got)
			}
			if err := rt.send("RunPodSandbox", pod, nil); err != nil {
				t.Errorf("second RunPodSandbox: %v", err)
			}
			if keep {
				// Still registered, b answers the next request while its
				// first handler is still stuck.
				if got := b.results(pod.Uid); !equal(got, []string{"RunPodSandbox:pending", "RunPodSandbox:ok"}) {
					t.Errorf("b recorded %v, want the stuck request pending and the next one ok", got)
				}
				if n := rt.metrics.registered(); n != 3 {
					t.Errorf("%d plugins registered, want b kept", n)
				}
			}
			wantDisconnects := map[bool]int{false: 1, true: 0}[keep]
			eventually(t, "b's records", func() bool { return b.notes(record.Disconnected) == wantDisconnects })
		})
	}
}
