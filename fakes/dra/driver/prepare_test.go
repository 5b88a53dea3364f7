package driver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	resourceapi "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/dra/errortype"
)

func TestTransientThenSuccess(t *testing.T) {
	c := newClaim("flaky", []alloc{{"gpu", "dev-0"}},
		faultConfig(prepareFaultsSpec(`{"type":"Transient","count":2,"message":"try again"}`)))
	h := newHarness(t, c)

	for attempt := 1; attempt <= 2; attempt++ {
		res := h.prepare(c)
		want := fmt.Sprintf("driver dra.faultline.k8s.io: prepare of claim ns/flaky (uid uid-flaky) failed on attempt %d [transient]: "+
			"1 of 1 devices failed: pool=node-a device=dev-0 request=gpu: transient (failing attempt %d of 2): injected fault: try again", attempt, attempt)
		if res.Error != want {
			t.Errorf("attempt %d:\n got %q\nwant %q", attempt, res.Error, want)
		}
		if _, found := errortype.Get(res); found {
			t.Errorf("attempt %d: transient failure must not carry error_type", attempt)
		}
	}
	res := h.prepare(c)
	if res.Error != "" {
		t.Fatalf("attempt 3 must succeed, got %q", res.Error)
	}
	if len(res.Devices) != 1 || res.Devices[0].DeviceName != "dev-0" || res.Devices[0].PoolName != testNode ||
		strings.Join(res.Devices[0].RequestNames, ",") != "gpu" {
		t.Errorf("unexpected devices %v", res.Devices)
	}
	rep := h.drv.Recorder().Report(string(c.UID))
	if want := (calls.Summary{PrepareCalls: 3, PrepareFailed: 2, PrepareSucceeded: 1}); rep.Summary != want {
		t.Errorf("summary %+v, want %+v", rep.Summary, want)
	}
	if rep.Calls[1].Attempt != 2 || rep.Calls[1].Classification != "transient" || rep.Calls[1].Permanent {
		t.Errorf("call 2 recorded as %+v", rep.Calls[1])
	}
}

func TestPermanentFailures(t *testing.T) {
	for _, tc := range []struct {
		name, fault, label string
		taint              resourceapi.DeviceTaintEffect // "" = no taint expected
		reason             string
	}{
		{"device failed, default NoExecute", `{"type":"Permanent","reason":"DeviceFailed"}`, "permanent/DeviceFailed", resourceapi.DeviceTaintEffectNoExecute, ReasonDeviceFailed},
		{"device failed, NoSchedule", `{"type":"Permanent","reason":"DeviceFailed","taintEffect":"NoSchedule"}`, "permanent/DeviceFailed", resourceapi.DeviceTaintEffectNoSchedule, ReasonDeviceFailed},
		{"bad configuration", `{"type":"Permanent","reason":"BadConfiguration","message":"model X needs firmware 2"}`, "permanent/BadConfiguration", "", ReasonBadConfiguration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClaim("broken", []alloc{{"gpu", "dev-1"}}, faultConfig(prepareFaultsSpec(tc.fault)))
			h := newHarness(t, c)

			for attempt := 1; attempt <= 2; attempt++ {
				res := h.prepare(c)
				mustContain(t, res.Error,
					"driver dra.faultline.k8s.io: prepare of claim ns/broken (uid uid-broken) failed on attempt "+fmt.Sprint(attempt)+" ["+tc.label+"]",
					"pool=node-a device=dev-1 request=gpu: "+tc.label+": ")
				if et, found := errortype.Get(res); !found || et != errortype.Permanent {
					t.Errorf("error_type: got %v (found %v), want Permanent", et, found)
				}
			}
			call := h.lastCall(c.UID)
			if !call.Permanent || call.Classification != tc.label || call.Outcome != calls.Failed {
				t.Errorf("recorded %+v", call)
			}

			// Claim status: synchronous, so no polling needed.
			claim, err := h.client.ResourceV1().ResourceClaims(testNamespace).Get(h.ctx, c.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(claim.Status.Devices) != 1 {
				t.Fatalf("status.devices: %+v", claim.Status.Devices)
			}
			dev := claim.Status.Devices[0]
			cond := apimeta.FindStatusCondition(dev.Conditions, ConditionReady)
			if dev.Driver != DefaultDriverName || dev.Pool != testNode || dev.Device != "dev-1" || cond == nil ||
				cond.Status != metav1.ConditionFalse || cond.Reason != tc.reason || !strings.Contains(cond.Message, tc.label) {
				t.Errorf("status.devices[0] = %+v", dev)
			}

			if tc.taint == "" {
				taints := h.deviceTaints("dev-1")
				if len(taints) != 0 {
					t.Errorf("BadConfiguration must not taint the device: %v", taints)
				}
				return
			}
			h.eventually("taint on dev-1 in the ResourceSlice", func() string {
				taints := h.deviceTaints("dev-1")
				if len(taints) != 1 {
					return fmt.Sprintf("taints=%v", taints)
				}
				if taints[0].Key != TaintKey || taints[0].Value != string(c.UID) || taints[0].Effect != tc.taint {
					return fmt.Sprintf("wrong taint %+v", taints[0])
				}
				return ""
			})
			if taints := h.deviceTaints("dev-0"); len(taints) != 0 {
				t.Errorf("dev-0 must stay untainted: %v", taints)
			}
		})
	}
}

func TestUnclassifiedIsNotMarkedPermanent(t *testing.T) {
	c := newClaim("vague", []alloc{{"gpu", "dev-0"}}, faultConfig(prepareFaultsSpec(`{"type":"Unclassified","count":1}`)))
	h := newHarness(t, c)
	res := h.prepare(c)
	mustContain(t, res.Error, "failed on attempt 1 [unclassified]", "pool=node-a device=dev-0 request=gpu: unclassified: injected fault")
	if _, found := errortype.Get(res); found {
		t.Error("unclassified failure must not carry error_type")
	}
	if res := h.prepare(c); res.Error != "" {
		t.Errorf("count 1: second attempt must succeed, got %q", res.Error)
	}
}

// One claim, two devices: faults can target one device by name, and the
// error lists every failing device.
func TestPerDeviceFaults(t *testing.T) {
	two := []alloc{{"a", "dev-0"}, {"b", "dev-1"}}
	for _, tc := range []struct {
		name   string
		config []resourceapi.DeviceAllocationConfiguration
		want   []string
		absent []string
		perm   bool
	}{
		{
			name:   "fault names one device",
			config: []resourceapi.DeviceAllocationConfiguration{faultConfig(prepareFaultsSpec(`{"type":"Permanent","reason":"DeviceFailed","devices":["dev-1"]}`))},
			want:   []string{"[permanent/DeviceFailed]: 1 of 2 devices failed: pool=node-a device=dev-1 request=b: permanent/DeviceFailed"},
			absent: []string{"device=dev-0"},
			perm:   true,
		},
		{
			name:   "config scoped to a request",
			config: []resourceapi.DeviceAllocationConfiguration{faultConfig(prepareFaultsSpec(`{"type":"Transient","count":5}`), "b")},
			want:   []string{"[transient]: 1 of 2 devices failed: pool=node-a device=dev-1 request=b: transient (failing attempt 1 of 5)"},
			absent: []string{"device=dev-0"},
		},
		{
			name: "both devices fail differently",
			config: []resourceapi.DeviceAllocationConfiguration{faultConfig(prepareFaultsSpec(
				`{"type":"Transient","count":3,"devices":["dev-0"]}`,
				`{"type":"Permanent","reason":"DeviceFailed","devices":["dev-1"]}`))},
			want: []string{
				"[permanent/DeviceFailed]: 2 of 2 devices failed: ",
				"pool=node-a device=dev-0 request=a: transient (failing attempt 1 of 3): injected fault; ",
				"pool=node-a device=dev-1 request=b: permanent/DeviceFailed: injected device failure",
			},
			perm: true,
		},
		{
			name: "two config entries, one per request",
			config: []resourceapi.DeviceAllocationConfiguration{
				faultConfig(prepareFaultsSpec(`{"type":"Permanent","reason":"BadConfiguration"}`), "a"),
				faultConfig(prepareFaultsSpec(`{"type":"Permanent","reason":"DeviceFailed"}`), "b"),
			},
			want: []string{"[permanent/BadConfiguration+DeviceFailed]: 2 of 2 devices failed: ",
				"device=dev-0 request=a: permanent/BadConfiguration", "device=dev-1 request=b: permanent/DeviceFailed"},
			perm: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClaim("pair", two, tc.config...)
			h := newHarness(t, c)
			res := h.prepare(c)
			mustContain(t, res.Error, tc.want...)
			for _, a := range tc.absent {
				if strings.Contains(res.Error, a) {
					t.Errorf("%q must not mention %q", res.Error, a)
				}
			}
			if _, found := errortype.Get(res); found != tc.perm {
				t.Errorf("error_type present = %v, want %v", found, tc.perm)
			}
		})
	}
}

func TestInvalidFaultSpecIsBadConfiguration(t *testing.T) {
	for _, tc := range []struct{ name, params, want string }{
		{"unknown field", prepareFaultsSpec(`{"type":"Transient","count":1,"coutn":2}`), `unknown field "prepare[0].coutn"`},
		{"bad duration", prepareFaultsSpec(`{"type":"Stall","duration":"ten seconds"}`), `prepare[0].duration: invalid duration "ten seconds"`},
		{"negative count", prepareFaultsSpec(`{"type":"Unclassified","count":-1}`), `prepare[0].count: must not be negative, got -1`},
		{"unknown kind", `{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"Faults"}`, `kind: "Faults" is not supported`},
		{"unknown type", prepareFaultsSpec(`{"type":"Sometimes"}`), `prepare[0].type: unknown fault type "Sometimes"`},
		{"unknown classification", prepareFaultsSpec(`{"type":"Permanent","reason":"Cosmic"}`), `prepare[0].reason: unknown classification "Cosmic"`},
		{"not JSON", `{"apiVersion":`, `parameters:`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClaim("invalid", []alloc{{"gpu", "dev-2"}}, faultConfig(tc.params, "gpu"))
			h := newHarness(t, c)
			res := h.prepare(c)
			mustContain(t, res.Error,
				"prepare of claim ns/invalid (uid uid-invalid) failed on attempt 1 [permanent/BadConfiguration]",
				"pool=node-a device=dev-2 request=gpu: permanent/BadConfiguration: config[0] (FromClaim): invalid FaultSpec: ",
				tc.want)
			if et, _ := errortype.Get(res); et != errortype.Permanent {
				t.Errorf("invalid spec must be signalled permanent, got %v", et)
			}
			// A broken spec must not block cleanup.
			if e := h.unprepare(c); e != "" {
				t.Errorf("unprepare must succeed despite invalid spec: %q", e)
			}
		})
	}
}

func TestStallHonoursCallerDeadline(t *testing.T) {
	c := newClaim("slow", []alloc{{"gpu", "dev-0"}}, faultConfig(prepareFaultsSpec(`{"type":"Stall","duration":"5m","count":1}`)))
	h := newHarness(t, c)

	ctx, cancel := context.WithTimeout(h.ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := h.dra.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: claimRefs(c)})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("want DeadlineExceeded like the kubelet gets, got %v", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("call took %v", elapsed)
	}
	// The driver notices the caller left and records why.
	h.eventually("the stalled call to be recorded", func() string {
		cs := h.drv.Recorder().Calls(string(c.UID))
		if len(cs) == 0 {
			return "no call yet"
		}
		return ""
	})
	call := h.lastCall(c.UID)
	if call.Outcome != calls.Failed || call.Stalled == "" {
		t.Errorf("recorded %+v", call)
	}
	mustContain(t, call.Error, "[transient]", "pool=node-a device=dev-0 request=gpu: transient/stalled: injected stall of 5m0s interrupted after")

	// count 1: the retry is not stalled.
	if res := h.prepare(c); res.Error != "" {
		t.Errorf("second attempt: %q", res.Error)
	}
}

// A call held by a stall is in the record's InProgress until it ends, and
// then only in Calls: a spec acts while it is in progress.
func TestStalledCallIsInProgress(t *testing.T) {
	c := newClaim("held", []alloc{{"gpu", "dev-0"}}, faultConfig(prepareFaultsSpec(`{"type":"Stall","duration":"5m","count":1}`)))
	h := newHarness(t, c)

	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.dra.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: claimRefs(c)}) //nolint:errcheck // cancelled below
	}()
	h.eventually("the stalled call to be in progress", func() string {
		rep := h.drv.Recorder().Report(string(c.UID))
		if len(rep.InProgress) != 1 || len(rep.Calls) != 0 {
			return fmt.Sprintf("in progress %+v, calls %+v", rep.InProgress, rep.Calls)
		}
		if p := rep.InProgress[0]; p.Method != calls.Prepare || p.Attempt != 1 || p.Outcome != "" || p.Time.IsZero() {
			return fmt.Sprintf("in progress %+v", p)
		}
		return ""
	})
	cancel()
	<-done
	h.eventually("the stalled call to be recorded", func() string {
		rep := h.drv.Recorder().Report(string(c.UID))
		if len(rep.InProgress) != 0 || len(rep.Calls) != 1 || rep.Calls[0].Outcome != calls.Failed {
			return fmt.Sprintf("in progress %+v, calls %+v", rep.InProgress, rep.Calls)
		}
		return ""
	})
}

func TestShortStallThenSuccess(t *testing.T) {
	c := newClaim("sluggish", []alloc{{"gpu", "dev-0"}}, faultConfig(prepareFaultsSpec(`{"type":"Stall","duration":"50ms"}`)))
	h := newHarness(t, c)
	start := time.Now()
	if res := h.prepare(c); res.Error != "" {
		t.Fatalf("prepare: %q", res.Error)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Error("call was not stalled")
	}
	if call := h.lastCall(c.UID); call.Stalled != "50ms" || call.Outcome != calls.Prepared {
		t.Errorf("recorded %+v", call)
	}
}

func TestRepeatedPrepareIsIdempotent(t *testing.T) {
	c := newClaim("twice", []alloc{{"a", "dev-0"}, {"b", "dev-3"}})
	h := newHarness(t, c)
	first, second := h.prepare(c), h.prepare(c)
	if first.Error != "" || second.Error != "" {
		t.Fatalf("errors: %q %q", first.Error, second.Error)
	}
	if fmt.Sprint(first.Devices) != fmt.Sprint(second.Devices) || len(first.Devices) != 2 {
		t.Errorf("devices differ:\n%v\n%v", first.Devices, second.Devices)
	}
	rep := h.drv.Recorder().Report(string(c.UID))
	if rep.Summary.PrepareSucceeded != 1 || rep.Summary.PrepareRepeated != 1 {
		t.Errorf("summary %+v", rep.Summary)
	}
	if rep.Calls[1].Outcome != calls.AlreadyPrepared {
		t.Errorf("second call recorded as %s", rep.Calls[1].Outcome)
	}
	// After unprepare, preparing again is a real preparation.
	if e := h.unprepare(c); e != "" {
		t.Fatal(e)
	}
	h.prepare(c)
	if got := h.lastCall(c.UID).Outcome; got != calls.Prepared {
		t.Errorf("prepare after unprepare recorded as %s", got)
	}
}

// A fault naming a device it cannot apply to would test nothing: the spec
// is invalid, naming the device and the valid ones.
func TestFaultNamingUnallocatedDeviceIsBadConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config resourceapi.DeviceAllocationConfiguration
		want   string
	}{
		{"not allocated", faultConfig(prepareFaultsSpec(`{"type":"Permanent","reason":"DeviceFailed","devices":["dev-3"]}`)),
			`prepare[0].devices[0]: device "dev-3" is not allocated to this claim for requests (all); valid: dev-0, dev-1`},
		{"allocated out of scope", faultConfig(prepareFaultsSpec(`{"type":"Transient","count":1,"devices":["dev-1"]}`), "gpu"),
			`prepare[0].devices[0]: device "dev-1" is not allocated to this claim for requests gpu; valid: dev-0`},
		{"unprepare", faultConfig(unprepareFaultsSpec(`{"type":"Transient","count":1,"devices":["gpu-0"]}`)),
			`unprepare[0].devices[0]: device "gpu-0" is not allocated`},
		{"padded", faultConfig(prepareFaultsSpec(`{"type":"Transient","count":1,"devices":["dev-0 "]}`)),
			`prepare[0].devices[0]: device "dev-0 " has spaces around its name`},
		{"twice", faultConfig(prepareFaultsSpec(`{"type":"Transient","count":1,"devices":["dev-0","dev-0"]}`)),
			`prepare[0].devices[1]: device "dev-0" is named twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClaim("miss", []alloc{{"gpu", "dev-0"}, {"other", "dev-1"}}, tc.config)
			h := newHarness(t, c)
			res := h.prepare(c)
			mustContain(t, res.Error, "[permanent/BadConfiguration]", tc.want)
			call := h.lastCall(c.UID)
			if len(call.Warnings) != 1 {
				t.Fatalf("warnings: %v", call.Warnings)
			}
			mustContain(t, call.Warnings[0], "config[0] (FromClaim) is invalid: prepare fails permanent/BadConfiguration, unprepare runs without its faults", tc.want)
			if e := h.unprepare(c); e != "" {
				t.Errorf("unprepare must succeed despite the invalid spec: %q", e)
			}
		})
	}
}

// A config entry of another driver is none of our business, even if it
// looks like a FaultSpec.
func TestOtherDriversConfigIgnored(t *testing.T) {
	cfg := faultConfig(prepareFaultsSpec(`{"type":"Permanent","reason":"DeviceFailed"}`))
	cfg.Opaque.Driver = "other.example.com"
	c := newClaim("foreign", []alloc{{"gpu", "dev-0"}}, cfg)
	h := newHarness(t, c)
	if res := h.prepare(c); res.Error != "" {
		t.Errorf("prepare: %q", res.Error)
	}
}

func TestBatchOfClaims(t *testing.T) {
	good := newClaim("good", []alloc{{"gpu", "dev-0"}})
	bad := newClaim("bad", []alloc{{"gpu", "dev-1"}}, faultConfig(prepareFaultsSpec(`{"type":"Permanent","reason":"BadConfiguration"}`)))
	h := newHarness(t, good, bad)
	resp, err := h.dra.NodePrepareResources(h.ctx, &drapbv1.NodePrepareResourcesRequest{Claims: claimRefs(good, bad)})
	if err != nil {
		t.Fatal(err)
	}
	if g := resp.Claims[string(good.UID)]; g.Error != "" || len(g.Devices) != 1 {
		t.Errorf("good claim: %v", g)
	}
	if _, found := errortype.Get(resp.Claims[string(good.UID)]); found {
		t.Error("good claim must not carry error_type")
	}
	b := resp.Claims[string(bad.UID)]
	mustContain(t, b.Error, "claim ns/bad (uid uid-bad)")
	if et, _ := errortype.Get(b); et != errortype.Permanent {
		t.Errorf("bad claim error_type %v", et)
	}
}

// A FaultSpec only acts in namespaces the gate allows: a claim elsewhere is
// prepared and unprepared normally, even with an invalid FaultSpec, and its
// call record says why; a claim in an allowed namespace in the same call
// still fails.
func TestFaultSpecOutsideFaultlineNamespacesIgnored(t *testing.T) {
	tenant := func(c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
		c.Namespace = "tenant"
		return c
	}
	broken := tenant(newClaim("broken", []alloc{{"gpu", "dev-0"}},
		faultConfig(prepareFaultsSpec(`{"type":"Permanent","reason":"DeviceFailed"}`)),
		faultConfig(unprepareFaultsSpec(`{"type":"Transient","count":3}`))))
	invalid := tenant(newClaim("invalid", []alloc{{"gpu", "dev-1"}}, faultConfig(`{"kind":"nonsense"}`)))
	ours := newClaim("ours", []alloc{{"gpu", "dev-2"}}, faultConfig(prepareFaultsSpec(`{"type":"Permanent","reason":"BadConfiguration"}`)))
	h := newHarness(t, broken, invalid, ours)

	resp, err := h.dra.NodePrepareResources(h.ctx, &drapbv1.NodePrepareResourcesRequest{Claims: claimRefs(broken, invalid, ours)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*resourceapi.ResourceClaim{broken, invalid} {
		res := resp.Claims[string(c.UID)]
		if res == nil || res.Error != "" || len(res.Devices) != 1 {
			t.Errorf("%s: must be prepared without faults, got %v", c.Name, res)
		}
		call := h.lastCall(c.UID)
		if call.Outcome != calls.Prepared || len(call.Warnings) != 1 {
			t.Fatalf("%s: recorded %+v", c.Name, call)
		}
		mustContain(t, call.Warnings[0], "FaultSpec ignored", `namespace "tenant"`)
		mustContain(t, h.logs(), "Ignoring FaultSpec", `claim="tenant/`+c.Name+`"`, `namespace="tenant"`, `reason="namespace \"tenant\" is not one of [ns]"`)
		if e := h.unprepare(c); e != "" {
			t.Errorf("%s: unprepare faults must be ignored too: %q", c.Name, e)
		}
	}
	if res := resp.Claims[string(ours.UID)]; res == nil || !strings.Contains(res.Error, "[permanent/BadConfiguration]") {
		t.Errorf("the claim in the allowed namespace must still fail: %v", res)
	}
	if taints := h.deviceTaints("dev-0"); len(taints) != 0 {
		t.Errorf("an ignored DeviceFailed must not taint: %v", taints)
	}
	claim, err := h.client.ResourceV1().ResourceClaims("tenant").Get(h.ctx, broken.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(claim.Status.Devices) != 1 || !apimeta.IsStatusConditionTrue(claim.Status.Devices[0].Conditions, ConditionReady) {
		t.Errorf("status.devices: %+v", claim.Status.Devices)
	}
}
