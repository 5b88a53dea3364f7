package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/faultline-k8s/faultline/drivers/fake/nri/client"
	"github.com/faultline-k8s/faultline/drivers/fake/nri/faults"
	"github.com/faultline-k8s/faultline/drivers/fake/nri/record"
	"github.com/faultline-k8s/faultline/drivers/fake/nri/runtimestate"
)

// apiServer answers what the client asks the API server: the plugin's pod
// on node-1, and the pod proxy to its instances and runtime-state ports.
func apiServer(t *testing.T) kubernetes.Interface {
	t.Helper()
	pod := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "nri", Name: "plugin-x"}, Spec: v1.PodSpec{NodeName: "node-1"}}
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /api/v1/namespaces/nri/pods", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("labelSelector") != client.Selector || r.URL.Query().Get("fieldSelector") != "spec.nodeName=node-1" {
			reply(w, v1.PodList{})
			return
		}
		reply(w, v1.PodList{Items: []v1.Pod{pod}})
	})
	mux.HandleFunc("GET /api/v1/namespaces/nri/pods/http:plugin-x:8081/proxy/events", func(w http.ResponseWriter, r *http.Request) {
		reply(w, []record.Event{{Seq: 1, Plugin: client.B.Name, Event: "RunPodSandbox", PodUID: r.URL.Query().Get("podUID"), Result: record.Error}})
	})
	mux.HandleFunc("GET /api/v1/namespaces/nri/pods/http:plugin-x:8083/proxy/runtime", func(w http.ResponseWriter, r *http.Request) {
		reply(w, runtimestate.State{Runtime: "containerd " + r.URL.Query().Get("podUID")})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestReadsThroughThePodProxy(t *testing.T) {
	ctx := context.Background()
	plugins := client.New(apiServer(t), "nri")

	events, err := plugins.On("node-1", client.B).Events(ctx, "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].PodUID != "uid-1" || events[0].Result != record.Error {
		t.Errorf("events: %+v", events)
	}
	if got := client.Results(events, "RunPodSandbox"); len(got) != 1 || got[0] != record.Error {
		t.Errorf("results: %v", got)
	}

	s, err := plugins.RuntimeState(ctx, "node-1", "uid-2")
	if err != nil || s.Runtime != "containerd uid-2" {
		t.Errorf("runtime state: %+v, %v", s, err)
	}

	if _, err := plugins.On("node-2", client.A).Events(ctx, "uid-1"); err == nil {
		t.Error("no plugin pod on node-2: want an error")
	}
}

// The annotations the client builds are the ones the plugin acts on.
func TestFaultAnnotations(t *testing.T) {
	f := faults.Fault{Mode: faults.Stall, Stall: 1500 * time.Millisecond, Times: 1, Container: "direct"}
	a := client.A.Fault("CreateContainer", f)
	if a.Key != "nri.faultline.k8s.io/faultline-a.CreateContainer" || a.Value != "stall=1.5s;times=1;container=direct" {
		t.Errorf("annotation %+v", a)
	}
	m := client.Annotations(a, client.Annotation{Key: "other", Value: "x"})
	got, err := faults.For(m, client.A.Name, "CreateContainer", "direct")
	if err != nil || got == nil || got.Mode != f.Mode || got.Stall != f.Stall || got.Times != f.Times || got.Container != f.Container {
		t.Errorf("For: %+v, %v; want %+v", got, err, f)
	}
	if got, _ := faults.For(m, client.B.Name, "CreateContainer", "direct"); got != nil {
		t.Errorf("instance b must not act on instance a's fault: %+v", got)
	}
	if client.Annotations() != nil {
		t.Error("no annotations: nil")
	}
}
