package draclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/dra/draclient"
	"github.com/faultline-k8s/faultline/fakes/dra/driver"
	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
	"github.com/faultline-k8s/faultline/fakes/dra/podresources"
	"github.com/faultline-k8s/faultline/fakes/lib/control"
	"github.com/faultline-k8s/faultline/fakes/lib/podproxy"
)

// What the client hands a driver in a claim's configuration, the driver's
// parser must read back as the same FaultSpec.
func TestFaultSpecRoundTrip(t *testing.T) {
	for _, spec := range []faultspec.FaultSpec{
		draclient.Faults([]faultspec.Fault{{Type: faultspec.Transient, Count: ptr.To(2), Message: "faultline: transient failure"}}, nil),
		draclient.Faults([]faultspec.Fault{{Type: faultspec.Unclassified, Message: "faultline: never works"}}, nil),
		draclient.Faults([]faultspec.Fault{{Type: faultspec.Permanent, Reason: faultspec.DeviceFailed, TaintEffect: faultspec.TaintNoSchedule, Devices: []string{"dev-1"}}}, nil),
		draclient.Faults([]faultspec.Fault{{Type: faultspec.Stall, Duration: "1m30s", Count: ptr.To(1)}}, nil),
		draclient.Faults(nil, []faultspec.Fault{{Type: faultspec.Transient, Count: ptr.To(3), Message: "faultline: transient unprepare failure"}}),
		withCDI(draclient.Faults([]faultspec.Fault{{Type: faultspec.Transient, Count: ptr.To(1), Message: "faultline: transient failure"}}, nil)),
		withCDI(draclient.Faults(nil, nil)),
		{APIVersion: faultspec.APIVersion, Kind: faultspec.Kind, Health: []faultspec.HealthFault{{Type: faultspec.StreamDrop, Duration: "2m30s", Message: "faultline: health stream dropped"}}},
	} {
		cfg, err := draclient.Second.Config(spec, "a", "b")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Opaque == nil || cfg.Opaque.Driver != draclient.Second.Name || !reflect.DeepEqual(cfg.Requests, []string{"a", "b"}) {
			t.Errorf("config %+v", cfg)
			continue
		}
		parsed, err := faultspec.Parse(cfg.Opaque.Parameters.Raw)
		if err != nil {
			t.Errorf("the driver rejects what the client built: %v\n%s", err, cfg.Opaque.Parameters.Raw)
			continue
		}
		if !reflect.DeepEqual(*parsed, spec) {
			t.Errorf("round trip: got %+v, want %+v", *parsed, spec)
		}
	}
}

func withCDI(spec faultspec.FaultSpec) faultspec.FaultSpec {
	spec.CDI = &faultspec.CDI{Hook: true}
	return spec
}

// An invalid FaultSpec is written as given (a spec checks that the driver
// names the bad field), in the exact JSON the suite wrote by hand before.
func TestInvalidFaultSpecIsWrittenAsGiven(t *testing.T) {
	raw, err := draclient.Parameters(draclient.Faults([]faultspec.Fault{{Type: faultspec.Stall, Duration: "5x"}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec","prepare":[{"type":"Stall","duration":"5x"}]}`; string(raw) != want {
		t.Errorf("got %s, want %s", raw, want)
	}
	if _, err := faultspec.Parse(raw); err == nil || !strings.Contains(err.Error(), `prepare[0].duration: invalid duration "5x"`) {
		t.Errorf("the driver must reject it naming the field: %v", err)
	}
}

func TestControlsThroughPortForwards(t *testing.T) {
	sel, err := labels.ConvertSelectorToLabelsMap(draclient.First.Selector())
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "dra", Name: "driver-x", UID: "uid-x", Labels: sel}, Spec: v1.PodSpec{NodeName: "node-1"}}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	var failQuery string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, r *http.Request) {
		reply(w, calls.Report{ClaimUID: r.URL.Query().Get("claimUID"), Summary: calls.Summary{PrepareCalls: 1}})
	})
	mux.HandleFunc("POST /devices/fail", func(w http.ResponseWriter, r *http.Request) {
		failQuery = r.URL.RawQuery
		reply(w, driver.FailResponse{Device: driver.DeviceState{Device: r.URL.Query().Get("device")}})
	})
	mux.HandleFunc("POST /devices/repair", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unknown device", http.StatusBadRequest)
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		reply(w, driver.RepairResponse{Repaired: []string{"dev-1"}})
	})
	mux.HandleFunc("GET /healthstream", func(w http.ResponseWriter, r *http.Request) {
		reply(w, []driver.StreamEvent{{Event: driver.StreamOpened}, {Event: driver.StreamDropped, ClaimUID: "uid-1", Streams: 1}})
	})
	mux.HandleFunc("GET /podresources", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("namespace") != "ns" {
			http.Error(w, "only pods in faultline's namespaces", http.StatusForbidden)
			return
		}
		reply(w, podresources.Pod{Namespace: "ns", Name: r.URL.Query().Get("pod")})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	pods := podproxy.NewPodsWith(fake.NewClientset(pod), func(_ context.Context, p *v1.Pod, port int) (string, func(), <-chan struct{}, error) {
		if p.Name != "driver-x" || port != 8080 {
			return "", nil, nil, fmt.Errorf("nothing listens on %s:%d", p.Name, port)
		}
		return srv.Listener.Addr().String(), func() {}, nil, nil
	}, control.Token{})
	ctx := context.Background()
	drivers := draclient.New(pods, "dra")
	node := drivers.On("node-1", draclient.First)

	rep, err := node.Calls(ctx, "uid-1")
	if err != nil || rep.ClaimUID != "uid-1" || rep.Summary.PrepareCalls != 1 {
		t.Errorf("calls: %+v, %v", rep, err)
	}
	dev, err := node.FailDevice(ctx, "dev-3", faultspec.TaintNoExecute, "broken")
	if err != nil || dev.Device != "dev-3" {
		t.Errorf("fail: %+v, %v", dev, err)
	}
	if failQuery != "device=dev-3&effect=NoExecute&message=broken" {
		t.Errorf("POST /devices/fail query %q", failQuery)
	}
	if _, err := node.RepairDevice(ctx, "dev-9"); err == nil || !strings.Contains(err.Error(), "unknown device") {
		t.Errorf("a refused repair must say why: %v", err)
	}
	if repaired, err := node.Reset(ctx); err != nil || !reflect.DeepEqual(repaired, []string{"dev-1"}) {
		t.Errorf("reset: %v, %v", repaired, err)
	}
	if events, err := node.HealthStream(ctx); err != nil || len(events) != 2 || events[1].Event != driver.StreamDropped || events[1].ClaimUID != "uid-1" {
		t.Errorf("health stream: %+v, %v", events, err)
	}
	if p, err := node.PodResources(ctx, "ns", "p"); err != nil || p.Namespace != "ns" || p.Name != "p" {
		t.Errorf("pod resources: %+v, %v", p, err)
	}
	if _, err := node.PodResources(ctx, "other", "p"); err == nil || !strings.Contains(err.Error(), "faultline's namespaces") || !strings.Contains(err.Error(), draclient.First.Name) {
		t.Errorf("a refused pod resources read must say why and which driver: %v", err)
	}
	if pods, err := drivers.Pods(ctx, draclient.First); err != nil || len(pods) != 1 {
		t.Errorf("pods: %v, %v", pods, err)
	}
}
