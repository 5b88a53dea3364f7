package plugin_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/nri/pkg/api"

	"github.com/faultline-k8s/faultline/fakes/lib/scope"
	"github.com/faultline-k8s/faultline/fakes/nri/plugin"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
)

// countingGate is scope.Static that counts the questions per namespace.
type countingGate struct {
	scope.Static
	mu    sync.Mutex
	asked map[string]int
}

func (g *countingGate) Allows(ctx context.Context, namespace string) (bool, string) {
	g.mu.Lock()
	g.asked[namespace]++
	g.mu.Unlock()
	return g.Static.Allows(ctx, namespace)
}

func (g *countingGate) count(namespace string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.asked[namespace]
}

// Fault annotations act only in namespaces the gate allows; elsewhere the
// events pass as for a pod without faults (recorded as usual), the plugin
// logs why once per pod, and a malformed annotation fails nothing either.
func TestFaultsOnlyInAllowedNamespaces(t *testing.T) {
	rt := startRuntime(t, socketPath(t))
	gate := &countingGate{Static: scope.Static{"faultline-spec"}, asked: map[string]int{}}
	a := startInstance(t, rt.socket, "faultline-a", "10", instanceOptions{config: func(c *plugin.Config) { c.Gate = gate }})
	a.waitReady(t)
	rt.waitRegistered(t, 1)

	podIn := func(namespace, uid string, annotations map[string]string) *api.PodSandbox {
		pod := newPod(uid, annotations)
		pod.Namespace = namespace
		return pod
	}
	faulty := func() map[string]string {
		return map[string]string{
			a.key("RunPodSandbox"):   "error",
			a.key("CreateContainer"): "error",
			a.key("StartContainer"):  "stal=5s", // malformed
		}
	}

	tenant := podIn("tenant", "uid-tenant", faulty())
	ctr := newContainer(tenant, "app")
	for _, ev := range []string{"RunPodSandbox", "CreateContainer", "StartContainer"} {
		if err := rt.send(ev, tenant, ctr); err != nil {
			t.Errorf("%s in an unlabelled namespace: %v, want the fault ignored", ev, err)
		}
	}
	want := []string{"RunPodSandbox:ok", "CreateContainer:ok", "StartContainer:ok"}
	if got := a.results(tenant.Uid); !equal(got, want) {
		t.Errorf("tenant records %v, want %v", got, want)
	}
	for _, e := range a.rec.List(tenant.Uid) {
		if e.Fault != "" || e.Message != "" {
			t.Errorf("tenant %s record mentions a fault: %+v", e.Event, e)
		}
	}
	if n := gate.count("tenant"); n != 1 {
		t.Errorf("gate asked %d times about the tenant's pod, want once", n)
	}
	logs := a.logs.String()
	if !strings.Contains(logs, "fault annotations ignored") || !strings.Contains(logs, tenant.Name) ||
		!strings.Contains(logs, `namespace=tenant`) || !strings.Contains(logs, `not one of`) {
		t.Errorf("no log line naming the pod, its namespace and the reason:\n%s", logs)
	}

	// A fault acts in an allowed namespace.
	ours := podIn("faultline-spec", "uid-ours", map[string]string{a.key("RunPodSandbox"): "error"})
	if err := rt.send("RunPodSandbox", ours, nil); err == nil || !strings.Contains(err.Error(), plugin.InjectedError) {
		t.Errorf("RunPodSandbox in an allowed namespace: %v, want the injected error", err)
	}
	if e := a.last(t, ours.Uid, "RunPodSandbox"); e.Result != record.Error || e.Fault != "error" {
		t.Errorf("allowed pod record %+v", e)
	}

	// Pods without fault annotations never cost a question.
	plain := podIn("other", "uid-plain", map[string]string{"example.com/x": "y"})
	if err := rt.send("RunPodSandbox", plain, nil); err != nil {
		t.Fatal(err)
	}
	if n := gate.count("other"); n != 0 {
		t.Errorf("gate asked %d times about a pod without fault annotations", n)
	}

	// A new sandbox of the tenant's pod asks again (the answer is per
	// sandbox, forgotten with RemovePodSandbox).
	if err := rt.send("RemovePodSandbox", tenant, nil); err != nil {
		t.Fatal(err)
	}
	again := podIn("tenant", "uid-tenant", faulty())
	again.Id = "sandbox-uid-tenant-2"
	if err := rt.send("RunPodSandbox", again, nil); err != nil {
		t.Errorf("new tenant sandbox: %v", err)
	}
	if n := gate.count("tenant"); n != 2 {
		t.Errorf("gate asked %d times, want 2 (one per sandbox)", n)
	}
}
