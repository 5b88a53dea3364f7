package nriclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline-k8s/faultline/fakes/lib/control"
	"github.com/faultline-k8s/faultline/fakes/lib/podproxy"

	"github.com/faultline-k8s/faultline/fakes/nri/faults"
	"github.com/faultline-k8s/faultline/fakes/nri/nriclient"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/fakes/nri/runtimestate"
)

// pods answers what the client asks: the plugin's pod on node-1 (from a
// fake clientset), and its instances' and runtime-state's HTTP servers
// (through a stand-in for the port-forward, which maps each port to a test
// server).
func pods(t *testing.T) *podproxy.Pods {
	t.Helper()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "nri", Name: "plugin-x", UID: "uid-x",
		Labels: labelsOf(t, nriclient.Selector)}, Spec: v1.PodSpec{NodeName: "node-1"}}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	servers := map[int]*httptest.Server{
		8081: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/events" {
				http.NotFound(w, r)
				return
			}
			reply(w, []record.Event{{Seq: 1, Plugin: nriclient.B.Name, Event: "RunPodSandbox", PodUID: r.URL.Query().Get("podUID"), Result: record.Error}})
		})),
		8083: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/runtime" {
				http.NotFound(w, r)
				return
			}
			reply(w, runtimestate.State{Runtime: "containerd " + r.URL.Query().Get("podUID")})
		})),
	}
	for _, s := range servers {
		t.Cleanup(s.Close)
	}
	return podproxy.NewPodsWith(fake.NewClientset(pod), func(_ context.Context, p *v1.Pod, port int) (string, func(), <-chan struct{}, error) {
		s, ok := servers[port]
		if !ok || p.Name != "plugin-x" {
			return "", nil, nil, fmt.Errorf("nothing listens on %s:%d", p.Name, port)
		}
		return s.Listener.Addr().String(), func() {}, nil, nil
	}, control.Token{})
}

func labelsOf(t *testing.T, selector string) map[string]string {
	t.Helper()
	set, err := labels.ConvertSelectorToLabelsMap(selector)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestReadsThroughPortForwards(t *testing.T) {
	ctx := context.Background()
	plugins := nriclient.New(pods(t), "nri")

	events, err := plugins.On("node-1", nriclient.B).Events(ctx, "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].PodUID != "uid-1" || events[0].Result != record.Error {
		t.Errorf("events: %+v", events)
	}
	if got := nriclient.Results(events, "RunPodSandbox"); len(got) != 1 || got[0] != record.Error {
		t.Errorf("results: %v", got)
	}

	s, err := plugins.RuntimeState(ctx, "node-1", "uid-2")
	if err != nil || s.Runtime != "containerd uid-2" {
		t.Errorf("runtime state: %+v, %v", s, err)
	}

	if _, err := plugins.On("node-2", nriclient.A).Events(ctx, "uid-1"); err == nil {
		t.Error("no plugin pod on node-2: want an error")
	}
}

// The annotations the client builds are the ones the plugin acts on.
func TestFaultAnnotations(t *testing.T) {
	f := faults.Fault{Mode: faults.Stall, Stall: 1500 * time.Millisecond, Times: 1, Container: "direct"}
	a := nriclient.A.Fault("CreateContainer", f)
	if a.Key != "nri.faultline.k8s.io/faultline-a.CreateContainer" || a.Value != "stall=1.5s;times=1;container=direct" {
		t.Errorf("annotation %+v", a)
	}
	m := nriclient.Annotations(a, nriclient.Annotation{Key: "other", Value: "x"})
	got, err := faults.For(m, nriclient.A.Name, "CreateContainer", "direct")
	if err != nil || got == nil || got.Mode != f.Mode || got.Stall != f.Stall || got.Times != f.Times || got.Container != f.Container {
		t.Errorf("For: %+v, %v; want %+v", got, err, f)
	}
	if got, _ := faults.For(m, nriclient.B.Name, "CreateContainer", "direct"); got != nil {
		t.Errorf("instance b must not act on instance a's fault: %+v", got)
	}
	if nriclient.Annotations() != nil {
		t.Error("no annotations: nil")
	}
}
