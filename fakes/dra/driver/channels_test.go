package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	drapbv1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/dra/errortype"
	"github.com/faultline-k8s/faultline/vocab/fakemodes"
)

// rawCodec hands the client the response bytes exactly as they came over
// the wire, so the test does not depend on any Go type knowing field 3.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return proto.Marshal(v.(proto.Message)) }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// claimsFromWire decodes NodePrepareResourcesResponse by hand:
// field 1 = map<string, NodePrepareResourceResponse>, each entry a message
// with key = 1, value = 2.
func claimsFromWire(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatal("bad tag")
		}
		b = b[n:]
		if num != 1 || typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			b = b[m:]
			continue
		}
		entry, m := protowire.ConsumeBytes(b)
		b = b[m:]
		var key string
		var value []byte
		for len(entry) > 0 {
			num, typ, n := protowire.ConsumeTag(entry)
			entry = entry[n:]
			v, m := protowire.ConsumeBytes(entry)
			if typ != protowire.BytesType || m < 0 {
				t.Fatalf("unexpected map entry field %d type %d", num, typ)
			}
			entry = entry[m:]
			switch num {
			case 1:
				key = string(v)
			case 2:
				value = v
			}
		}
		out[key] = value
	}
	return out
}

func TestKEP5322ErrorTypeOnTheWire(t *testing.T) {
	perm := newClaim("perm", []alloc{{"gpu", "dev-0"}}, faultConfig(prepareFaultsSpec(`{"type":"Permanent","reason":"DeviceFailed"}`)))
	trans := newClaim("trans", []alloc{{"gpu", "dev-1"}}, faultConfig(prepareFaultsSpec(`{"type":"Transient","count":1}`)))
	ok := newClaim("fine", []alloc{{"gpu", "dev-2"}})
	h := newHarness(t, perm, trans, ok)

	for _, service := range []struct{ name, method string }{
		{"v1", drapbv1.DRAPlugin_NodePrepareResources_FullMethodName},
		{"v1beta1", drapbv1beta1.DRAPlugin_NodePrepareResources_FullMethodName},
	} {
		t.Run(service.name, func(t *testing.T) {
			var raw []byte
			req := &drapbv1.NodePrepareResourcesRequest{Claims: claimRefs(perm, trans, ok)}
			if err := h.conn.Invoke(h.ctx, service.method, req, &raw, grpc.ForceCodec(rawCodec{})); err != nil {
				t.Fatal(err)
			}
			got := claimsFromWire(t, raw)
			if len(got) != 3 {
				t.Fatalf("decoded %d claims from the wire", len(got))
			}
			if et, found := errortype.Find(got[string(perm.UID)]); !found || et != errortype.Permanent {
				t.Errorf("permanent claim: field 3 = %d (found %v), want 1", et, found)
			}
			for _, c := range []string{string(trans.UID), string(ok.UID)} {
				if _, found := errortype.Find(got[c]); found {
					t.Errorf("claim %s: field 3 must be absent", c)
				}
			}
			// The standard fields are untouched: the error (field 2) is there.
			var decoded drapbv1.NodePrepareResourceResponse
			if err := proto.Unmarshal(got[string(perm.UID)], &decoded); err != nil || decoded.Error == "" {
				t.Errorf("decode with today's type: %v, error %q", err, decoded.Error)
			}
		})
	}
}

func TestUnprepareFaults(t *testing.T) {
	c := newClaim("teardown", []alloc{{"gpu", "dev-0"}}, faultConfig(unprepareFaultsSpec(`{"type":"Transient","count":1}`)))
	h := newHarness(t, c)
	if res := h.prepare(c); res.Error != "" {
		t.Fatalf("prepare: %q", res.Error)
	}
	e := h.unprepare(c)
	if want := "driver dra.faultline.k8s.io: unprepare of claim ns/teardown (uid uid-teardown) failed on attempt 1 [transient]: " +
		"1 of 1 devices failed: pool=node-a device=dev-0 request=gpu: transient (failing attempt 1 of 1): injected fault"; e != want {
		t.Errorf("\n got %q\nwant %q", e, want)
	}
	if e := h.unprepare(c); e != "" {
		t.Fatalf("second unprepare: %q", e)
	}
	if e := h.unprepare(c); e != "" {
		t.Fatalf("third unprepare: %q", e)
	}
	rep := h.drv.Recorder().Report(string(c.UID))
	want := calls.Summary{PrepareCalls: 1, PrepareSucceeded: 1, UnprepareCalls: 3, UnprepareFailed: 1, UnprepareSucceeded: 1, UnprepareNoop: 1}
	if rep.Summary != want {
		t.Errorf("summary %+v, want %+v", rep.Summary, want)
	}
}

func TestUnprepareStallAndTransient(t *testing.T) {
	c := newClaim("stuck", []alloc{{"a", "dev-0"}, {"b", "dev-1"}}, faultConfig(unprepareFaultsSpec(
		`{"type":"Stall","duration":"5m","count":1,"devices":["dev-0"]}`,
		`{"type":"Transient","count":2,"devices":["dev-1"]}`)))
	h := newHarness(t, c)
	h.prepare(c)

	ctx, cancel := context.WithTimeout(h.ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := h.dra.NodeUnprepareResources(ctx, &drapbv1.NodeUnprepareResourcesRequest{Claims: claimRefs(c)}); err == nil {
		t.Fatal("stalled unprepare must run into the caller's deadline")
	}
	h.eventually("stalled unprepare recorded", func() string {
		for _, call := range h.drv.Recorder().Calls(string(c.UID)) {
			if call.Method == calls.Unprepare {
				return ""
			}
		}
		return "not yet"
	})
	mustContain(t, h.lastCall(c.UID).Error, "[transient]: 2 of 2 devices failed",
		"device=dev-0 request=a: transient/stalled", "device=dev-1 request=b: transient (failing attempt 1 of 2)")

	e := h.unprepare(c) // attempt 2: no stall, still transient
	mustContain(t, e, "unprepare of claim ns/stuck (uid uid-stuck) failed on attempt 2 [transient]: 1 of 2 devices failed")
	if e := h.unprepare(c); e != "" {
		t.Errorf("attempt 3 must succeed: %q", e)
	}
}

// Faults that would keep unprepare failing for ever make the FaultSpec
// invalid: prepare fails BadConfiguration naming them, unprepare succeeds.
func TestEndlessUnprepareFaultsRejected(t *testing.T) {
	for _, tc := range []struct{ fault, want string }{
		{`{"type":"Permanent","reason":"DeviceFailed"}`, `unprepare[0].type: Permanent is not allowed for unprepare`},
		{`{"type":"Unclassified"}`, `unprepare[0].count: required for Unclassified on unprepare`},
		{`{"type":"Stall","duration":"1m"}`, `unprepare[0].count: required for Stall on unprepare`},
		{`{"type":"Stall","duration":"1h","count":1}`, `unprepare[0].duration: "1h" is longer than the cap of 5m0s`},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			c := newClaim("endless", []alloc{{"gpu", "dev-0"}}, faultConfig(unprepareFaultsSpec(tc.fault)))
			h := newHarness(t, c)
			mustContain(t, h.prepare(c).Error, "[permanent/BadConfiguration]", tc.want)
			if e := h.unprepare(c); e != "" {
				t.Errorf("unprepare: %q", e)
			}
		})
	}
}

// The health stream, the ResourceSlice taint, GET /devices and the repair
// paths (claim deleted, POST /reset) for a DeviceFailed fault.
func TestDeviceFailedLifecycle(t *testing.T) {
	c := newClaim("ecc", []alloc{{"gpu", "dev-1"}}, faultConfig(prepareFaultsSpec(`{"type":"Permanent","reason":"DeviceFailed","message":"uncorrectable ECC error"}`)))
	c2 := newClaim("ecc2", []alloc{{"gpu", "dev-2"}}, faultConfig(prepareFaultsSpec(`{"type":"Permanent","reason":"DeviceFailed"}`)))
	h := newHarness(t, c, c2)

	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	stream, err := drahealthv1alpha1.NewDRAResourceHealthClient(h.conn).NodeWatchResources(ctx, &drahealthv1alpha1.NodeWatchResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	health := func() map[string]*drahealthv1alpha1.DeviceHealth {
		t.Helper()
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("health stream: %v", err)
		}
		out := map[string]*drahealthv1alpha1.DeviceHealth{}
		for _, d := range resp.Devices {
			out[d.Device.DeviceName] = d
		}
		return out
	}
	initial := health()
	if len(initial) != 4 || initial["dev-1"].Health != drahealthv1alpha1.HealthStatus_HEALTHY || initial["dev-1"].Device.PoolName != testNode {
		t.Fatalf("initial health %v", initial)
	}

	h.prepare(c)
	h.prepare(c2)
	for {
		hs := health()
		if hs["dev-1"].Health == drahealthv1alpha1.HealthStatus_UNHEALTHY && hs["dev-2"].Health == drahealthv1alpha1.HealthStatus_UNHEALTHY {
			mustContain(t, hs["dev-1"].Message, "permanent/DeviceFailed", "uncorrectable ECC error", "uid-ecc")
			if hs["dev-0"].Health != drahealthv1alpha1.HealthStatus_HEALTHY {
				t.Errorf("dev-0 must stay healthy")
			}
			break
		}
	}

	srv := httptest.NewServer(h.drv.DevicesHandler())
	defer srv.Close()
	var states []DeviceState
	getJSON(t, srv.URL, &states)
	if len(states) != 4 || states[1].Healthy || states[1].Failure == nil || states[1].Failure.ClaimUID != "uid-ecc" || !states[0].Healthy {
		t.Errorf("GET /devices: %+v", states)
	}

	// Deleting the claim repairs its device, and only its device.
	if err := h.client.ResourceV1().ResourceClaims(testNamespace).Delete(h.ctx, c.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if repaired := h.drv.RepairOrphanedDevices(h.ctx); fmt.Sprint(repaired) != "[dev-1]" {
		t.Errorf("repaired %v, want [dev-1]", repaired)
	}
	h.eventually("taint removed from dev-1, kept on dev-2", func() string {
		t1 := h.deviceTaints("dev-1")
		t2 := h.deviceTaints("dev-2")
		if len(t1) != 0 || len(t2) != 1 {
			return fmt.Sprintf("dev-1 %v, dev-2 %v", t1, t2)
		}
		return ""
	})
	for {
		hs := health()
		if hs["dev-1"].Health == drahealthv1alpha1.HealthStatus_HEALTHY {
			if hs["dev-2"].Health != drahealthv1alpha1.HealthStatus_UNHEALTHY {
				t.Error("dev-2 must stay unhealthy")
			}
			break
		}
	}

	// POST /reset repairs everything.
	reset := httptest.NewServer(h.drv.ResetHandler())
	defer reset.Close()
	resp, err := http.Post(reset.URL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string][]string
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || fmt.Sprint(body["repaired"]) != "[dev-2]" {
		t.Errorf("POST /reset: %v %v", body, err)
	}
	_ = resp.Body.Close()
	h.eventually("all taints removed", func() string {
		if t2 := h.deviceTaints("dev-2"); len(t2) != 0 {
			return fmt.Sprint(t2)
		}
		return ""
	})
}

func TestClaimStatusFollowsOutcome(t *testing.T) {
	c := newClaim("status", []alloc{{"a", "dev-0"}, {"b", "dev-1"}}, faultConfig(prepareFaultsSpec(`{"type":"Transient","count":1,"devices":["dev-1"]}`)))
	h := newHarness(t, c)
	conditions := func() map[string]metav1.Condition {
		claim, err := h.client.ResourceV1().ResourceClaims(testNamespace).Get(h.ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]metav1.Condition{}
		for _, d := range claim.Status.Devices {
			if cond := apimeta.FindStatusCondition(d.Conditions, ConditionReady); cond != nil {
				out[d.Device] = *cond
			}
		}
		return out
	}
	h.prepare(c)
	got := conditions()
	if got["dev-1"].Reason != ReasonTransientFailure || got["dev-0"].Reason != ReasonOtherDeviceFailed || got["dev-0"].Status != metav1.ConditionFalse {
		t.Errorf("after failure: %+v", got)
	}
	h.prepare(c)
	got = conditions()
	for _, dev := range []string{"dev-0", "dev-1"} {
		if got[dev].Status != metav1.ConditionTrue || got[dev].Reason != ReasonPrepared {
			t.Errorf("after success %s: %+v", dev, got[dev])
		}
	}
}

func TestCallsOverHTTP(t *testing.T) {
	c := newClaim("http", []alloc{{"gpu", "dev-3"}}, faultConfig(prepareFaultsSpec(`{"type":"Permanent","reason":"BadConfiguration"}`)))
	other := newClaim("other", []alloc{{"gpu", "dev-0"}})
	h := newHarness(t, c, other)
	h.prepare(c)
	h.prepare(other)

	srv := httptest.NewServer(h.drv.Recorder().Handler())
	defer srv.Close()
	var rep calls.Report
	getJSON(t, srv.URL+"/calls?claimUID="+url.QueryEscape(string(c.UID)), &rep)
	if rep.ClaimUID != string(c.UID) || len(rep.Calls) != 1 || rep.Summary.PrepareFailed != 1 {
		t.Fatalf("report %+v", rep)
	}
	call := rep.Calls[0]
	if call.Method != calls.Prepare || call.ClaimNamespace != testNamespace || call.ClaimName != "http" || call.Attempt != 1 ||
		call.Outcome != calls.Failed || call.Classification != "permanent/BadConfiguration" || !call.Permanent ||
		len(call.Devices) != 1 || call.Devices[0] != (calls.Device{Pool: testNode, Device: "dev-3", Request: "gpu"}) || call.Time.IsZero() {
		t.Errorf("call %+v", call)
	}
	mustContain(t, call.Error, "claim ns/http (uid uid-http)")

	var all calls.Report
	getJSON(t, srv.URL+"/calls", &all)
	if len(all.Calls) != 2 || all.Summary.PrepareSucceeded != 1 {
		t.Errorf("all calls %+v", all)
	}
	if resp, err := http.Post(srv.URL+"/calls", "", nil); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /calls: %v %v", resp, err)
	} else {
		_ = resp.Body.Close()
	}
}

func getJSON(t *testing.T, u string, into any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %s %s", u, resp.Status, resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatal(err)
	}
}

// The fake mode FirstFailingDeviceOnly names one failing device of a
// claim, as a driver that stops describing at its first failure would; it
// still counts them all. A normal run names every one (the tests above).
func TestFirstFailingDeviceOnlyNamesOne(t *testing.T) {
	c := newClaim("pair", []alloc{{"a", "dev-0"}, {"b", "dev-1"}}, faultConfig(prepareFaultsSpec(`{"type":"Transient","count":1}`)))
	h := newHarnessWith(t, func(cfg *Config) { cfg.FakeModes = []string{fakemodes.FirstFailingDeviceOnly} }, c)
	e := h.prepare(c).Error
	mustContain(t, e, "[transient]: 2 of 2 devices failed: pool=node-a device=dev-0 request=a: transient")
	if strings.Contains(e, "dev-1") {
		t.Errorf("the second failing device is named: %q", e)
	}
}
