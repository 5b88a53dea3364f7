package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
)

func unresponsiveSpec(duration string) string {
	return `{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec","service":[{"type":"Unresponsive","duration":"` + duration + `"}]}`
}

// deleteSlices deletes every published slice, as the kubelet does.
func (h *harness) deleteSlices() {
	h.t.Helper()
	list, err := h.client.ResourceV1().ResourceSlices().List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, s := range list.Items {
		if err := h.client.ResourceV1().ResourceSlices().Delete(h.ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *harness) slices() int {
	h.t.Helper()
	list, err := h.client.ResourceV1().ResourceSlices().List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return len(list.Items)
}

// An Unresponsive fault fires at its claim's first prepare: that call is
// left unanswered, dra.sock goes away while the registration socket stays,
// the driver publishes nothing (slices the kubelet removes stay removed),
// and after the fault's duration the service answers again, the slices
// are back and the claim's next prepare succeeds.
func TestUnresponsive(t *testing.T) {
	down := 2 * time.Second
	hang := newClaim("hang", []alloc{{"gpu", "dev-0"}}, faultConfig(unresponsiveSpec(down.String())))
	other := newClaim("other", []alloc{{"gpu", "dev-1"}})
	h := newHarness(t, hang, other)
	draSock := filepath.Join(h.drv.cfg.PluginDataDir, "dra.sock")
	regSock := filepath.Join(h.drv.cfg.RegistrarDir, DefaultDriverName+"-reg.sock")
	h.eventually("the published slice", func() string {
		if h.slices() == 0 {
			return "none yet"
		}
		return ""
	})

	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	stopped := time.Now()
	_, err := h.dra.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: claimRefs(hang)})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("the call that fired the fault: %v, want Unavailable", err)
	}
	// The caller sees the socket close before the unanswered handler
	// returns and records the call: wait for the record.
	h.eventually("the unanswered call's record", func() string {
		if len(h.drv.Recorder().Calls(string(hang.UID))) == 0 {
			return "none yet"
		}
		return ""
	})
	if c := h.lastCall(hang.UID); c.Outcome != calls.Failed || c.Classification != "unanswered" {
		t.Errorf("recorded call: %+v, want Failed/unanswered", c)
	}
	h.eventually("the service stopped", func() string {
		st := h.drv.service.state()
		if st.Answering || len(st.Events) != 2 || st.Events[1].Event != ServiceStopped || st.Events[1].ClaimName != "hang" {
			return fmt.Sprintf("%+v", st)
		}
		return ""
	})
	if _, err := os.Stat(draSock); !os.IsNotExist(err) {
		t.Errorf("dra.sock must be gone while stopped: %v", err)
	}
	if _, err := os.Stat(regSock); err != nil {
		t.Errorf("the registration socket must stay: %v", err)
	}
	// The kubelet removes the slices; a stopped driver does not put them back.
	h.deleteSlices()
	if n := h.slices(); n != 0 {
		t.Fatalf("%d slices after the deletion", n)
	}

	h.eventually("the service answering again", func() string {
		if !h.drv.service.state().Answering {
			return "still stopped"
		}
		return ""
	})
	if since := time.Since(stopped); since < down {
		t.Errorf("the service answered again after %s, before the fault's %s", since, down)
	}
	if n := h.slices(); n != 0 && time.Since(stopped) < down {
		t.Errorf("%d slices published while stopped", n)
	}
	h.eventually("the slices published again", func() string {
		if h.slices() == 0 {
			return "none"
		}
		return ""
	})
	for _, c := range []struct {
		claim   string
		refs    []*drapbv1.Claim
		attempt int
	}{{"other", claimRefs(other), 1}, {"hang", claimRefs(hang), 2}} {
		resp, err := h.dra.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: c.refs}, grpc.WaitForReady(true))
		if err != nil {
			t.Fatalf("prepare %s after the restart: %v", c.claim, err)
		}
		if res := resp.Claims[c.refs[0].Uid]; res == nil || res.Error != "" {
			t.Errorf("prepare %s after the restart: %v", c.claim, res)
		}
	}
	if c := h.lastCall(hang.UID); c.Outcome != calls.Prepared || c.Attempt != 2 {
		t.Errorf("the faulty claim's second prepare: %+v, want Prepared (the fault fires once)", c)
	}

	srv := httptest.NewServer(h.drv.ServiceHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var st ServiceState
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || !st.Answering || len(st.Events) != 3 || st.Events[2].Event != ServiceStarted {
		t.Errorf("GET /service: %+v, %v", st, err)
	}
	post, err := http.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /service: status %d", post.StatusCode)
	}
}

// The kubelet deletes every slice of its node when it restarts. A slice the
// driver changed shortly before (a device failed and repaired: its taint
// came and went) must be published again within the controller's sync
// delay. On a real API server the library's default timers left such a
// slice unpublished for good (kubernetes#140063; faultline's CI saw it
// after DRA-KUBELET-RESTART-UNPREPARE). The fake clientset replaces a
// changed slice by delete and create, which the library handles, so this
// test holds the bound; the e2e runs hold the race.
func TestSlicesBackAfterAQuickDelete(t *testing.T) {
	h := newHarness(t)
	h.eventually("the published slice", func() string {
		if h.slices() == 0 {
			return "none yet"
		}
		return ""
	})
	if _, err := h.drv.FailDevice(h.ctx, "dev-1", "NoExecute", "faultline test"); err != nil {
		t.Fatal(err)
	}
	h.eventually("dev-1 tainted", func() string {
		if len(h.deviceTaints("dev-1")) == 0 {
			return "no taint yet"
		}
		return ""
	})
	if _, err := h.drv.RepairDevice(h.ctx, "dev-1"); err != nil {
		t.Fatal(err)
	}
	h.eventually("dev-1 repaired", func() string {
		if n := len(h.deviceTaints("dev-1")); n != 0 {
			return fmt.Sprintf("%d taints", n)
		}
		return ""
	})
	h.deleteSlices()
	deleted := time.Now()
	if n := h.slices(); n != 0 {
		t.Fatalf("%d slices after the deletion", n)
	}
	// eventually's own bound is longer than a sync delay plus the cache's
	// lifetime; the time it took is checked against the delay.
	h.eventually("the slices published again", func() string {
		if h.slices() == 0 {
			return "none"
		}
		return ""
	})
	if took, bound := time.Since(deleted), sliceSyncDelay+sliceMutationTTL+2*time.Second; took > bound {
		t.Errorf("the slices came back %s after their deletion, want within %s", took.Round(time.Millisecond), bound)
	}
}
