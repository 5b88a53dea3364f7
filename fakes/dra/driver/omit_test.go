package driver

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
)

// The deterministic partly failed prepare (kubernetes#140274): one call
// with two claims, one of which an Omit fault leaves out. The gRPC
// response the kubelet reads (kubeletplugin's copy of the driver's result
// map) has the answered claim only, neither devices nor an error for the
// other; nothing is prepared or written for it; the record says so and
// ties both claims to one call. The retry answers both, the answered claim
// with the same devices (a repeat), which is what a kubelet without the
// fix appends a second time.
func TestOmitLeavesTheClaimOutOfTheFirstResponse(t *testing.T) {
	cdi := `"cdi":{"hook":true}`
	answered := newClaim("answered", []alloc{{"dev", "dev-0"}}, faultConfig(cdiSpecConfig(cdi)))
	omitted := newClaim("omitted", []alloc{{"dev", "dev-1"}}, faultConfig(cdiSpecConfig(`"prepare":[{"type":"Omit","count":1}],`+cdi)))
	dir := t.TempDir()
	h := newHarnessWith(t, func(cfg *Config) { cfg.CDIDir = dir }, answered, omitted)
	call := func() *drapbv1.NodePrepareResourcesResponse {
		t.Helper()
		resp, err := h.dra.NodePrepareResources(h.ctx, &drapbv1.NodePrepareResourcesRequest{Claims: claimRefs(answered, omitted)})
		if err != nil {
			t.Fatalf("NodePrepareResources: %v", err)
		}
		return resp
	}
	answeredID := CDIDeviceID(DefaultDriverName, string(answered.UID), "dev-0")

	first := call()
	if len(first.Claims) != 1 {
		t.Fatalf("first response: %d claims, want only the answered one: %v", len(first.Claims), first.Claims)
	}
	a := first.Claims[string(answered.UID)]
	if a == nil || a.Error != "" || len(a.Devices) != 1 || !slices.Equal(a.Devices[0].CdiDeviceIds, []string{answeredID}) {
		t.Fatalf("answered claim in the first response: %v", a)
	}
	if _, err := os.Stat(filepath.Join(dir, "faultline-"+DefaultDriverName+"-"+string(omitted.UID)+".json")); !os.IsNotExist(err) {
		t.Errorf("the omitted claim's CDI spec must not be written: %v", err)
	}
	o := h.lastCall(omitted.UID)
	if o.Outcome != calls.Omitted || o.Attempt != 1 || o.Error != "" || o.Classification != "" {
		t.Errorf("omitted claim recorded as %+v", o)
	}
	if r := h.lastCall(answered.UID); r.Outcome != calls.Prepared || r.Request != o.Request || r.Request == 0 {
		t.Errorf("answered claim recorded as %+v; the omitted one's request is %d", r, o.Request)
	}

	second := call()
	if len(second.Claims) != 2 {
		t.Fatalf("retry: %d claims, want both: %v", len(second.Claims), second.Claims)
	}
	if a := second.Claims[string(answered.UID)]; a.Error != "" || len(a.Devices) != 1 || !slices.Equal(a.Devices[0].CdiDeviceIds, []string{answeredID}) {
		t.Errorf("answered claim on the retry: %v", a)
	}
	if b := second.Claims[string(omitted.UID)]; b.Error != "" || len(b.Devices) != 1 || b.Devices[0].DeviceName != "dev-1" {
		t.Errorf("omitted claim on the retry: %v", b)
	}
	for claim, want := range map[string]calls.Summary{
		string(answered.UID): {PrepareCalls: 2, PrepareSucceeded: 1, PrepareRepeated: 1},
		string(omitted.UID):  {PrepareCalls: 2, PrepareOmitted: 1, PrepareSucceeded: 1},
	} {
		rep := h.drv.Recorder().Report(claim)
		if rep.Summary != want {
			t.Errorf("%s: summary %+v, want %+v", claim, rep.Summary, want)
		}
		if rep.Calls[1].Request != rep.Calls[0].Request+1 {
			t.Errorf("%s: requests %d then %d, want consecutive calls", claim, rep.Calls[0].Request, rep.Calls[1].Request)
		}
	}
}
