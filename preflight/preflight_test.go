package preflight

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/faultline-k8s/faultline/fakes/lib/scope"
	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/fixtures/access"
	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/vocab/needs"
)

func verdict(t *testing.T, r Report, id string) Verdict {
	t.Helper()
	for _, v := range r.Requirements {
		if v.ID == id {
			return v
		}
	}
	t.Fatalf("no verdict for %s", id)
	return Verdict{}
}

func condition(t *testing.T, r Report, name string) Condition {
	t.Helper()
	c, ok := r.Condition(name)
	if !ok {
		t.Fatalf("no condition %s", name)
	}
	return c
}

func TestFaultlineClusterCanCheckEverything(t *testing.T) {
	r := run(t, kind())
	for _, c := range r.Conditions {
		if c.State != OK && c.Name != needs.GatePermanentFailures {
			t.Errorf("%s: %s (%s), want ok", c.Name, c.State, c.Reason)
		}
	}
	for _, v := range r.Requirements {
		if v.Verdict != CanCheck {
			t.Errorf("%s: %s, want %s", v.ID, v.Line(), CanCheck)
		}
	}
	if got := r.CannotCheck(); len(got) != 0 {
		t.Errorf("cannot check %v", got)
	}
	if n := verdict(t, r, "DRA-PERMANENT-FAILS-POD").Notes; len(n) != 1 || !strings.Contains(n[0], "not implemented") {
		t.Errorf("the KEP-5322 gate must be a note, got %q", n)
	}
	if n := verdict(t, r, "CRI-SANDBOX-RESTART-NO-LEAK").Notes; len(n) != 1 || !strings.HasPrefix(n[0], "Disruptive") {
		t.Errorf("its spec is Disruptive, got notes %q", n)
	}
	if c := condition(t, r, CondNodes); !strings.Contains(c.Reason, "the suites pick kind-worker") || !strings.Contains(c.Reason, "kind-control-plane (taint") {
		t.Errorf("nodes: %s", c.Reason)
	}
	if c := condition(t, r, CondPermissions); !strings.Contains(c.Reason, "as kubernetes-admin") {
		t.Errorf("permissions: %s", c.Reason)
	}
	if c := condition(t, r, needs.ContainerSlowdown); !strings.Contains(c.Reason, "fake NRI plugin") {
		t.Errorf("containerd's CreateContainer is slowed through NRI: %s", c.Reason)
	}
}

// An existing cluster faultline did not make, with no runc-slow handler and
// no nodes/proxy: CRI cannot be checked, NRI and the gates are unknown.
func TestExistingClusterWithoutSlowHandler(t *testing.T) {
	c := kind()
	c.facts = nil
	c.runtime = "cri-o://1.36.2"
	c.handlers = []string{"", "runc", "crun"}
	c.deny = map[string]bool{"get nodes/proxy": true}
	c.endpointsErr = errors.New(`nodes "kind-worker" is forbidden: User "dev" cannot get resource "nodes/proxy"`)
	r := run(t, c)

	for name, want := range map[string]State{
		needs.SlowHandler: Missing, CondPermissions: Missing, needs.NRI: Unknown, needs.NRIValidator: Unknown,
		needs.GateDRA: Unknown, needs.GateDeviceTaints: Unknown, needs.RuntimeRequestTimeout: Unknown,
		needs.ContainerSlowdown: OK, // CRI-O: runc-slow slows its CreateContainer
		CondRuntime:             OK, needs.DRAAPI: OK, CondPodSecurity: OK,
	} {
		if got := condition(t, r, name); got.State != want {
			t.Errorf("%s: %s (%s), want %s", name, got.State, got.Reason, want)
		}
	}
	if c := condition(t, r, needs.SlowHandler); !strings.Contains(c.Reason, "(default), runc, crun") {
		t.Errorf("slow-handler must name the handlers the runtime lists: %s", c.Reason)
	}
	if c := condition(t, r, CondPermissions); !strings.Contains(c.Reason, "get nodes/proxy") {
		t.Errorf("permissions must name what is denied: %s", c.Reason)
	}
	v := verdict(t, r, "CRI-SANDBOX-RETRY-GETS-FIRST")
	if v.Verdict != CannotCheck || !strings.Contains(v.Line(), "slow-handler missing") {
		t.Errorf("CRI: %s", v.Line())
	}
	if v := verdict(t, r, "NRI-ERROR-STOPS-CHAIN"); v.Verdict != CannotCheck { // permissions missing too
		t.Errorf("NRI: %s", v.Line())
	}
}

func TestUnknownStatesWithAllPermissions(t *testing.T) {
	c := kind()
	c.facts = nil
	c.endpointsErr = errors.New("the server could not find the requested resource")
	r := run(t, c)
	for _, id := range []string{"NRI-ERROR-STOPS-CHAIN", "DRA-TRANSIENT-RETRIED", "CRI-CONTAINER-RETRY-GETS-FIRST"} {
		if v := verdict(t, r, id); v.Verdict != Undecided {
			t.Errorf("%s: %s, want unknown", id, v.Line())
		}
	}
	if v := verdict(t, r, "CRI-SANDBOX-RETRY-GETS-FIRST"); v.Verdict != CanCheck {
		t.Errorf("the sandbox stage needs no NRI: %s", v.Line())
	}
	if v := verdict(t, r, "FAULTLINE-CLUSTER-RUNS-PODS"); v.Verdict != CanCheck {
		t.Errorf("smoke: %s", v.Line())
	}
	if c := condition(t, r, needs.NRI); !strings.Contains(c.Reason, "not visible from the API") {
		t.Errorf("nri: %s", c.Reason)
	}
}

func TestMissingPieces(t *testing.T) {
	c := kind()
	c.noDRA = true
	c.kubeletGates = map[string]bool{"DynamicResourceAllocation": true, "ResourceHealthStatus": false}
	c.apiGates = map[string]bool{"DRADeviceTaints": false}
	r := run(t, c)
	for name, want := range map[string]State{
		needs.DRAAPI: Missing, needs.Fixtures("dra"): Missing, needs.GateHealth: Missing, needs.GateDeviceTaints: Missing, needs.Fixtures("cri"): OK,
	} {
		if got := condition(t, r, name); got.State != want {
			t.Errorf("%s: %s (%s), want %s", name, got.State, got.Reason, want)
		}
	}
	if c := condition(t, r, needs.Fixtures("dra")); !strings.Contains(c.Reason, "DeviceClass resource.k8s.io/v1") {
		t.Errorf("the fixture condition must name the kind not served: %s", c.Reason)
	}
	if c := condition(t, r, needs.GateHealth); !strings.Contains(c.Reason, "ResourceHealthStatus=false") || !strings.Contains(c.Reason, "ResourceHealthStatusMessage unknown to the kubelet") {
		t.Errorf("gate-health: %s", c.Reason)
	}
	v := verdict(t, r, "DRA-HEALTH-IN-POD-STATUS")
	if v.Verdict != CannotCheck || !strings.Contains(v.Line(), "gate-health missing") || !strings.Contains(v.Line(), "dra-api missing") {
		t.Errorf("health: %s", v.Line())
	}
}

func TestGAGateGoneFromNewKubelet(t *testing.T) {
	c := kind()
	c.kubelet = "v1.40.0"
	delete(c.kubeletGates, "DynamicResourceAllocation")
	if got := condition(t, run(t, c), needs.GateDRA); got.State != OK || !strings.Contains(got.Reason, "GA") {
		t.Errorf("gate-dra: %s (%s)", got.State, got.Reason)
	}
}

func TestRBACEscalationCheck(t *testing.T) {
	c := kind()
	// May create ClusterRoles but holds nothing they grant, nor escalate.
	c.deny = map[string]bool{"get resource.k8s.io/resourceclaims": true, "escalate rbac.authorization.k8s.io/clusterroles faultline-fake-dra-driver": true}
	r := run(t, c)
	got := condition(t, r, needs.Fixtures("dra"))
	if got.State != Missing || !strings.Contains(got.Reason, "escalate rbac.authorization.k8s.io/clusterroles faultline-fake-dra-driver (or hold every permission it grants)") {
		t.Errorf("fixtures-dra: %s (%s)", got.State, got.Reason)
	}
}

func TestPodSecurityRefusedByWebhook(t *testing.T) {
	c := kind()
	c.nsRefusal = forbiddenByWebhook()
	r := run(t, c)
	got := condition(t, r, CondPodSecurity)
	if got.State != Missing || !strings.Contains(got.Reason, "privileged namespaces are not allowed") {
		t.Errorf("pod-security: %s (%s)", got.State, got.Reason)
	}
	if v := verdict(t, r, "FAULTLINE-CLUSTER-RUNS-PODS"); v.Verdict != CannotCheck {
		t.Errorf("%s", v.Line())
	}
}

func TestUnknownRuntime(t *testing.T) {
	c := kind()
	c.facts = nil
	c.runtime = "docker://27.0.1"
	r := run(t, c)
	if got := condition(t, r, CondRuntime); got.State != Missing || !strings.Contains(got.Reason, "--faultline.runtime") {
		t.Errorf("runtime: %s (%s)", got.State, got.Reason)
	}
	if got := condition(t, r, needs.ContainerSlowdown); got.State != Unknown {
		t.Errorf("cri-container-slowdown: %s", got.State)
	}
}

func TestUnreachableIsAnError(t *testing.T) {
	cs := fake.NewClientset()
	cs.Discovery().(*fakediscovery.FakeDiscovery).PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	})
	if _, err := Run(context.Background(), cs, Options{Endpoints: fakeEndpoints{}, Specs: testSpecs()}); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Run on an unreachable API server: %v", err)
	}
}

// TestExampleText shows the text report of a cluster faultline did not make
// (go test -v -run TestExampleText ./preflight/).
func TestExampleText(t *testing.T) {
	c := kind()
	c.facts = nil
	c.handlers = []string{"", "runc"}
	r := run(t, c)
	var b bytes.Buffer
	if err := Write(&b, r, "text"); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	// Without the slow handler no CRI requirement can be checked.
	cri := 0
	for _, req := range requirements.All() {
		if req.Area == "cri" {
			cri++
		}
	}
	if got := r.CannotCheck(); len(got) != cri || got[0] != "CRI-SANDBOX-RETRY-GETS-FIRST" {
		t.Errorf("cannot check %v, want the %d CRI requirements (--strict exits 1 on these)", got, cri)
	}
	for _, want := range []string{"CONDITION", "slow-handler", "REQUIREMENT", "cannot check: slow-handler missing", fmt.Sprintf("%d requirements:", len(requirements.All()))} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the text report lacks %q", want)
		}
	}
}

func TestNodeSelector(t *testing.T) {
	c := kind()
	cs := fakeClient(t, c)
	r, err := Run(context.Background(), cs, Options{Endpoints: fakeEndpoints{c}, Specs: testSpecs(), NodeSelector: map[string]string{"faultline.k8s.io/pool": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := condition(t, r, CondNodes); got.State != Missing || !strings.Contains(got.Reason, "faultline.k8s.io/pool=true") {
		t.Errorf("nodes with a selector no node matches: %s (%s)", got.State, got.Reason)
	}
	if v := verdict(t, r, "FAULTLINE-CLUSTER-RUNS-PODS"); v.Verdict != CannotCheck {
		t.Errorf("%s", v.Line())
	}
}

// TestFaultsLabel: preflight says who may arm a namespace for faults: the
// fixture sets' policies (not yet in effect before a run, or in effect on
// a kept cluster), and namespaces armed by someone else.
func TestFaultsLabel(t *testing.T) {
	got := condition(t, run(t, kind()), CondFaultsLabel)
	if got.State != OK || !strings.Contains(got.Reason, access.FaultsLabelPolicy("cri")) || !strings.Contains(got.Reason, "none in effect now") ||
		!strings.Contains(got.Reason, "arm faultline.k8s.io/faults") {
		t.Errorf("a fresh cluster: %s (%s)", got.State, got.Reason)
	}

	c := kind()
	name := access.FaultsLabelPolicy("nri")
	c.objects = []runtime.Object{
		&admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "nri-scope-1234", Labels: map[string]string{scope.NamespaceLabel: scope.NamespaceLabelValue},
			Annotations: fixtures.Ownership(fixtures.SpecNamespaces)}},
	}
	got = condition(t, run(t, c), CondFaultsLabel)
	if got.State != OK || !strings.Contains(got.Reason, "in effect now: "+name) || !strings.Contains(got.Reason, "the 1 namespace(s) that carry the label were made by faultline's specs") {
		t.Errorf("a kept cluster mid-run: %s (%s)", got.State, got.Reason)
	}

	c.objects = append(c.objects, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-b", Labels: map[string]string{scope.NamespaceLabel: "yes"}}})
	got = condition(t, run(t, c), CondFaultsLabel)
	if got.State != Missing || !strings.HasSuffix(got.Reason, ": tenant-b") {
		t.Errorf("a namespace a tenant armed: %s (%s)", got.State, got.Reason)
	}

	c = kind()
	c.noVAP = true
	if got := condition(t, run(t, c), CondFaultsLabel); got.State != Missing || !strings.Contains(got.Reason, "does not serve ValidatingAdmissionPolicies") {
		t.Errorf("without ValidatingAdmissionPolicies: %s (%s)", got.State, got.Reason)
	}

	c = kind()
	c.deny = map[string]bool{access.Arm.String(): true}
	if got := condition(t, run(t, c), CondPermissions); got.State != Missing || !strings.Contains(got.Reason, "denied (as kubernetes-admin): arm faultline.k8s.io/faults") {
		t.Errorf("the specs label their namespaces: %s (%s)", got.State, got.Reason)
	}
}
