package driver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	resourceapi "k8s.io/api/resource/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
)

func streamDropSpec(fault string) string {
	return `{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec","health":[` + fault + `]}`
}

// healthStream opens a NodeWatchResources stream the way the kubelet does.
func (h *harness) healthStream() drahealthv1alpha1.DRAResourceHealth_NodeWatchResourcesClient {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	h.t.Cleanup(cancel)
	stream, err := drahealthv1alpha1.NewDRAResourceHealthClient(h.conn).NodeWatchResources(ctx, &drahealthv1alpha1.NodeWatchResourcesRequest{})
	if err != nil {
		h.t.Fatal(err)
	}
	return stream
}

// recvStatus receives until the stream ends and returns its status.
func recvStatus(stream drahealthv1alpha1.DRAResourceHealth_NodeWatchResourcesClient) *status.Status {
	for {
		if _, err := stream.Recv(); err != nil {
			return status.Convert(err)
		}
	}
}

func (h *harness) streamEvents(kind StreamEventType) []StreamEvent {
	var out []StreamEvent
	for _, e := range h.drv.HealthStreamEvents() {
		if e.Event == kind {
			out = append(out, e)
		}
	}
	return out
}

// A StreamDrop fault fires once, when its claim is first prepared: the
// open stream ends with Unavailable naming the claim, reconnects are
// refused for the fault's duration, then served again; without a duration
// the first reconnect is served. Every step is in the record.
func TestStreamDrop(t *testing.T) {
	down := time.Second
	trigger := newClaim("trigger", []alloc{{"gpu", "dev-0"}}, faultConfig(streamDropSpec(`{"type":"StreamDrop","duration":"`+down.String()+`","message":"cable pulled"}`)))
	once := newClaim("once", []alloc{{"gpu", "dev-1"}}, faultConfig(streamDropSpec(`{"type":"StreamDrop"}`)))
	h := newHarness(t, trigger, once)

	first := h.healthStream()
	if _, err := first.Recv(); err != nil {
		t.Fatal(err)
	}
	dropped := time.Now()
	if res := h.prepare(trigger); res.Error != "" {
		t.Fatalf("prepare: %q", res.Error)
	}
	st := recvStatus(first)
	if st.Code() != codes.Unavailable {
		t.Errorf("the dropped stream ended with %v, want Unavailable", st)
	}
	mustContain(t, st.Message(), "health stream dropped by the StreamDrop fault of claim ns/trigger (uid uid-trigger): cable pulled")

	st = recvStatus(h.healthStream())
	if st.Code() != codes.Unavailable {
		t.Errorf("a reconnect within the drop's duration: %v, want Unavailable", st)
	}
	mustContain(t, st.Message(), "ns/trigger", "reconnects refused until")

	var served drahealthv1alpha1.DRAResourceHealth_NodeWatchResourcesClient
	h.eventually("a reconnect to be served", func() string {
		stream := h.healthStream()
		if _, err := stream.Recv(); err != nil {
			return err.Error()
		}
		served = stream
		return ""
	})
	if waited := time.Since(dropped); waited < down {
		t.Errorf("served again after %s, before the drop's %s", waited, down)
	}
	if res := h.prepare(trigger); res.Error != "" {
		t.Fatalf("repeated prepare: %q", res.Error)
	}
	if n := len(h.streamEvents(StreamDropped)); n != 1 {
		t.Errorf("%d drops after a repeated prepare, want 1: a health fault fires once", n)
	}

	// Without a duration: the stream ends, the next one is served.
	if res := h.prepare(once); res.Error != "" {
		t.Fatalf("prepare: %q", res.Error)
	}
	if st := recvStatus(served); st.Code() != codes.Unavailable {
		t.Errorf("second drop: %v", st)
	}
	if _, err := h.healthStream().Recv(); err != nil {
		t.Errorf("after a drop without duration the first reconnect is served: %v", err)
	}

	drops := h.streamEvents(StreamDropped)
	if len(drops) != 2 || drops[0].ClaimUID != string(trigger.UID) || drops[0].Streams != 1 || drops[0].Until == nil ||
		drops[0].Until.Sub(drops[0].Time) != down || drops[1].ClaimUID != string(once.UID) {
		t.Errorf("drops %+v", drops)
	}
	if refused := h.streamEvents(StreamRefused); len(refused) == 0 || refused[0].ClaimUID != string(trigger.UID) {
		t.Errorf("refused %+v", refused)
	}
	if opened := h.streamEvents(StreamOpened); len(opened) != 3 {
		t.Errorf("%d streams opened, want 3: %+v", len(opened), h.drv.HealthStreamEvents())
	}

	srv := httptest.NewServer(h.drv.HealthStreamHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var events []StreamEvent
	if err := json.NewDecoder(resp.Body).Decode(&events); err != nil || len(events) != len(h.drv.HealthStreamEvents()) {
		t.Errorf("GET /healthstream: %d events, %v", len(events), err)
	}
	bad, err := http.Get(srv.URL + "?claimUID=x")
	if err != nil {
		t.Fatal(err)
	}
	_ = bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown parameter: status %d", bad.StatusCode)
	}
}

// Like every FaultSpec, a StreamDrop acts only in faultline's namespaces:
// a tenant's claim cannot drop the node's health stream.
func TestStreamDropOutsideFaultlineNamespacesIgnored(t *testing.T) {
	c := newClaim("tenant", []alloc{{"gpu", "dev-0"}}, faultConfig(streamDropSpec(`{"type":"StreamDrop","duration":"1m"}`)))
	c.Namespace = "tenant"
	failing := newClaim("failing", []alloc{{"gpu", "dev-1"}}, faultConfig(`{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec",`+
		`"prepare":[{"type":"Transient","count":1}],"health":[{"type":"StreamDrop","duration":"1m"}]}`))
	h := newHarnessWith(t, func(cfg *Config) { cfg.HealthInterval = 100 * time.Millisecond }, c, failing)
	stream := h.healthStream()
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	for _, claim := range []*resourceapi.ResourceClaim{c, failing} {
		// The tenant's claim is prepared without faults; the failing one
		// is not prepared, so its drop does not fire (yet).
		h.prepare(claim)
	}
	if drops := h.streamEvents(StreamDropped); len(drops) != 0 {
		t.Errorf("drops %+v", drops)
	}
	if _, err := stream.Recv(); err != nil {
		t.Errorf("the stream must stay open: %v", err)
	}
}
