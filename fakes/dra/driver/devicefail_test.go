package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"

	"github.com/faultline-k8s/faultline/fakes/dra/errortype"
)

// post sends POST path?query to handler and decodes a 200 answer into out.
func post(t *testing.T, handler http.Handler, query url.Values, out any) int {
	t.Helper()
	srv := httptest.NewServer(handler)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"?"+query.Encode(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Logf("POST %s: %s: %s", query.Encode(), resp.Status, body)
		return resp.StatusCode
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func (h *harness) readyCondition(claim, device string) *metav1.Condition {
	h.t.Helper()
	c, err := h.client.ResourceV1().ResourceClaims(testNamespace).Get(h.ctx, claim, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, d := range c.Status.Devices {
		if d.Device == device && d.Driver == DefaultDriverName {
			return apimeta.FindStatusCondition(d.Conditions, ConditionReady)
		}
	}
	return nil
}

// healthWatcher reads the health stream until want holds.
func (h *harness) healthWatcher() func(what string, want func(map[string]*drahealthv1alpha1.DeviceHealth) bool) map[string]*drahealthv1alpha1.DeviceHealth {
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	h.t.Cleanup(cancel)
	stream, err := drahealthv1alpha1.NewDRAResourceHealthClient(h.conn).NodeWatchResources(ctx, &drahealthv1alpha1.NodeWatchResourcesRequest{})
	if err != nil {
		h.t.Fatal(err)
	}
	return func(what string, want func(map[string]*drahealthv1alpha1.DeviceHealth) bool) map[string]*drahealthv1alpha1.DeviceHealth {
		h.t.Helper()
		for {
			resp, err := stream.Recv()
			if err != nil {
				h.t.Fatalf("health stream, waiting for %s: %v", what, err)
			}
			out := map[string]*drahealthv1alpha1.DeviceHealth{}
			for _, d := range resp.Devices {
				out[d.Device.DeviceName] = d
			}
			if want(out) {
				return out
			}
		}
	}
}

// A device that breaks while in use (POST /devices/fail): taint, health,
// claim condition, later prepares fail, deleting the claim does not repair
// it, POST /devices/repair does.
func TestDeviceFailsWhileInUse(t *testing.T) {
	inUse := newClaim("inuse", []alloc{{"gpu", "dev-1"}})
	next := newClaim("next", []alloc{{"gpu", "dev-1"}})
	other := newClaim("other", []alloc{{"gpu", "dev-2"}})
	h := newHarness(t, inUse, next, other)
	waitHealth := h.healthWatcher()
	waitHealth("all healthy", func(hs map[string]*drahealthv1alpha1.DeviceHealth) bool {
		return len(hs) == 4 && hs["dev-1"].Health == drahealthv1alpha1.HealthStatus_HEALTHY
	})
	if res := h.prepare(inUse); res.Error != "" {
		t.Fatalf("prepare: %q", res.Error)
	}

	var failed FailResponse
	if code := post(t, h.drv.FailHandler(), url.Values{"device": {"dev-1"}, "effect": {"NoExecute"}, "message": {"Xid 79: GPU has fallen off the bus"}}, &failed); code != http.StatusOK {
		t.Fatalf("POST /devices/fail: %d", code)
	}
	st := failed.Device
	if st.Device != "dev-1" || st.Healthy || st.Failure == nil || st.Failure.Trigger != TriggerHTTP || st.Failure.Effect != "NoExecute" ||
		st.Failure.Message != "Xid 79: GPU has fallen off the bus" || st.Failure.ClaimUID != string(inUse.UID) ||
		len(st.PreparedFor) != 1 || st.PreparedFor[0] != (ClaimRef{Namespace: testNamespace, Name: "inuse", UID: string(inUse.UID)}) {
		t.Errorf("POST /devices/fail answered %+v (failure %+v)", st, st.Failure)
	}

	h.eventually("NoExecute taint on dev-1", func() string {
		taints := h.deviceTaints("dev-1")
		if len(taints) != 1 || taints[0].Key != TaintKey || taints[0].Value != TaintValueHTTP || taints[0].Effect != resourceapi.DeviceTaintEffectNoExecute {
			return fmt.Sprint(taints)
		}
		return ""
	})
	hs := waitHealth("dev-1 unhealthy", func(hs map[string]*drahealthv1alpha1.DeviceHealth) bool {
		return hs["dev-1"].Health == drahealthv1alpha1.HealthStatus_UNHEALTHY
	})
	mustContain(t, hs["dev-1"].Message, "Xid 79: GPU has fallen off the bus")
	if hs["dev-2"].Health != drahealthv1alpha1.HealthStatus_HEALTHY {
		t.Error("dev-2 must stay healthy")
	}
	if c := h.readyCondition("inuse", "dev-1"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonDeviceFailed {
		t.Errorf("condition of the claim in use: %+v", c)
	} else {
		mustContain(t, c.Message, "device failed while in use: Xid 79")
	}

	// The failure outlives the claim that used the device.
	if err := h.client.ResourceV1().ResourceClaims(testNamespace).Delete(h.ctx, inUse.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if repaired := h.drv.RepairOrphanedDevices(h.ctx); len(repaired) != 0 {
		t.Errorf("GC repaired %v; a device broken through HTTP stays broken until repaired", repaired)
	}

	// A broken device cannot be prepared for anybody; other devices can.
	res := h.prepare(next)
	mustContain(t, res.Error, "prepare of claim ns/next (uid uid-next) failed on attempt 1 [permanent/DeviceFailed]",
		"pool=node-a device=dev-1 request=gpu: permanent/DeviceFailed: device failed at ", "tainted faultline.k8s.io/device-failed=http:NoExecute: Xid 79")
	if et, found := errortype.Get(res); !found || et != errortype.Permanent {
		t.Errorf("error_type %v (found %v), want Permanent", et, found)
	}
	if res := h.prepare(other); res.Error != "" {
		t.Errorf("dev-2 is fine, got %q", res.Error)
	}

	var repaired RepairResponse
	if code := post(t, h.drv.RepairHandler(), url.Values{"device": {"dev-1"}}, &repaired); code != http.StatusOK || fmt.Sprint(repaired.Repaired) != "[dev-1]" {
		t.Fatalf("POST /devices/repair: %d %+v", code, repaired)
	}
	h.eventually("taint removed", func() string {
		if taints := h.deviceTaints("dev-1"); len(taints) != 0 {
			return fmt.Sprint(taints)
		}
		return ""
	})
	waitHealth("dev-1 healthy again", func(hs map[string]*drahealthv1alpha1.DeviceHealth) bool {
		return hs["dev-1"].Health == drahealthv1alpha1.HealthStatus_HEALTHY
	})
	if res := h.prepare(next); res.Error != "" {
		t.Errorf("after repair: %q", res.Error)
	}
	if code := post(t, h.drv.RepairHandler(), url.Values{"device": {"dev-1"}}, &repaired); code != http.StatusOK || len(repaired.Repaired) != 0 {
		t.Errorf("repairing a healthy device: %d %+v", code, repaired)
	}
}

// Repair while the device is still prepared restores the claim's condition;
// effect None taints without consequences for scheduling; /reset repairs
// HTTP failures too.
func TestDeviceFailRepairAndReset(t *testing.T) {
	c := newClaim("kept", []alloc{{"gpu", "dev-0"}})
	h := newHarness(t, c)
	if res := h.prepare(c); res.Error != "" {
		t.Fatal(res.Error)
	}
	if code := post(t, h.drv.FailHandler(), url.Values{"device": {"dev-0"}, "effect": {"None"}}, nil); code != http.StatusOK {
		t.Fatalf("fail: %d", code)
	}
	h.eventually("taint with effect None on dev-0", func() string {
		if taints := h.deviceTaints("dev-0"); len(taints) != 1 || taints[0].Effect != resourceapi.DeviceTaintEffectNone {
			return fmt.Sprint(taints)
		}
		return ""
	})
	if cond := h.readyCondition("kept", "dev-0"); cond == nil || cond.Reason != ReasonDeviceFailed {
		t.Errorf("condition after failure %+v", cond)
	} else {
		mustContain(t, cond.Message, "device failed (injected through POST /devices/fail)")
	}
	var repaired RepairResponse
	post(t, h.drv.RepairHandler(), url.Values{"device": {"dev-0"}}, &repaired)
	if cond := h.readyCondition("kept", "dev-0"); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != ReasonPrepared {
		t.Errorf("condition after repair %+v", cond)
	}

	post(t, h.drv.FailHandler(), url.Values{"device": {"dev-3"}, "effect": {"NoSchedule"}}, nil)
	post(t, h.drv.ResetHandler(), nil, &repaired)
	if fmt.Sprint(repaired.Repaired) != "[dev-3]" {
		t.Errorf("POST /reset repaired %v", repaired.Repaired)
	}

	for _, tc := range []struct {
		handler http.Handler
		query   url.Values
		want    int
	}{
		{h.drv.FailHandler(), url.Values{"device": {"dev-9"}}, http.StatusBadRequest},
		{h.drv.FailHandler(), url.Values{}, http.StatusBadRequest},
		{h.drv.FailHandler(), url.Values{"device": {"dev-1"}, "effect": {"Evict"}}, http.StatusBadRequest},
		{h.drv.RepairHandler(), url.Values{"device": {"gpu-0"}}, http.StatusBadRequest},
	} {
		if got := post(t, tc.handler, tc.query, nil); got != tc.want {
			t.Errorf("POST ?%s: %d, want %d", tc.query.Encode(), got, tc.want)
		}
	}
	srv := httptest.NewServer(h.drv.FailHandler())
	defer srv.Close()
	if resp, err := http.Get(srv.URL + "?device=dev-1"); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /devices/fail: %v %v", resp, err)
	} else {
		_ = resp.Body.Close()
	}
	if _, ok := h.drv.devices.failureOf("dev-1"); ok {
		t.Error("GET must not break anything")
	}
}
