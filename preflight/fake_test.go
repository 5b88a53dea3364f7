package preflight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/faultline-k8s/faultline/fixtures/access"
	"github.com/faultline-k8s/faultline/vocab/facts"
)

// cluster describes a fake cluster for Run.
type cluster struct {
	kubelet  string // kubelet version of every node
	runtime  string // containerRuntimeVersion of every node
	handlers []string
	// deny are SelfSubjectAccessReviews answered no (access.String()).
	deny map[string]bool
	// noDRA: resource.k8s.io/v1 not served.
	noDRA bool
	// facts: the faultline-cluster ConfigMap, nil for none.
	facts *facts.Facts
	// nsRefusal refuses namespace creation with this error.
	nsRefusal error
	// kubeletGates, apiGates: the kubernetes_feature_enabled samples.
	kubeletGates, apiGates map[string]bool
	endpointsErr           error
	// noVAP: ValidatingAdmissionPolicies not served.
	noVAP bool
	// objects are more objects in the cluster.
	objects []runtime.Object
}

// kind is a faultline-made kind cluster on containerd: everything there.
func kind() cluster {
	f := facts.Facts{Cluster: "faultline-containerd", Runtime: "containerd", RuntimeVersion: "2.4.2", KubernetesVersion: "v1.36.3",
		RuntimeRequestTimeout: facts.Duration(facts.DefaultRuntimeRequestTimeout), NRIRequestTimeout: facts.Duration(facts.DefaultNRIRequestTimeout),
		CreatedBy: facts.CreatedByFaultline}
	return cluster{
		kubelet: "v1.36.3", runtime: "containerd://2.4.2", handlers: []string{"", "runc", SlowHandler},
		facts:        &f,
		kubeletGates: map[string]bool{"DynamicResourceAllocation": true, "ResourceHealthStatus": true, "ResourceHealthStatusMessage": true, "DRADeviceTaints": true},
		apiGates:     map[string]bool{"DynamicResourceAllocation": true, "DRADeviceTaints": true},
	}
}

func node(name string, c cluster, taints ...v1.Taint) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelOSStable: "linux"}},
		Spec:       v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
			NodeInfo:   v1.NodeSystemInfo{KubeletVersion: c.kubelet, ContainerRuntimeVersion: c.runtime, OperatingSystem: "linux"},
		},
	}
	for _, h := range c.handlers {
		n.Status.RuntimeHandlers = append(n.Status.RuntimeHandlers, v1.NodeRuntimeHandler{Name: h})
	}
	return n
}

func res(name, kind string, namespaced bool) metav1.APIResource {
	return metav1.APIResource{Name: name, Kind: kind, Namespaced: namespaced}
}

func discovery(noDRA bool) []*metav1.APIResourceList {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{res("namespaces", "Namespace", false), res("nodes", "Node", false), res("nodes/proxy", "NodeProxyOptions", false),
			res("pods", "Pod", true), res("pods/portforward", "PodPortForwardOptions", true), res("serviceaccounts", "ServiceAccount", true),
			res("configmaps", "ConfigMap", true), res("events", "Event", true)}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{res("daemonsets", "DaemonSet", true), res("deployments", "Deployment", true)}},
		{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{res("clusterroles", "ClusterRole", false), res("clusterrolebindings", "ClusterRoleBinding", false)}},
		{GroupVersion: "node.k8s.io/v1", APIResources: []metav1.APIResource{res("runtimeclasses", "RuntimeClass", false)}},
		{GroupVersion: "networking.k8s.io/v1", APIResources: []metav1.APIResource{res("networkpolicies", "NetworkPolicy", true)}},
		{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{res("validatingadmissionpolicies", "ValidatingAdmissionPolicy", false),
			res("validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false)}},
	}
	if !noDRA {
		lists = append(lists, &metav1.APIResourceList{GroupVersion: "resource.k8s.io/v1", APIResources: []metav1.APIResource{
			res("deviceclasses", "DeviceClass", false), res("resourceslices", "ResourceSlice", false),
			res("resourceclaims", "ResourceClaim", true), res("resourceclaimtemplates", "ResourceClaimTemplate", true)}})
	}
	return lists
}

// fakeEndpoints answers the kubelet and API server reads from the cluster.
type fakeEndpoints struct{ c cluster }

func metrics(gates map[string]bool) []byte {
	var b strings.Builder
	b.WriteString("# TYPE kubernetes_feature_enabled gauge\n")
	for g, on := range gates {
		v := 0
		if on {
			v = 1
		}
		fmt.Fprintf(&b, "kubernetes_feature_enabled{name=%q,stage=\"BETA\"} %d\n", g, v)
	}
	return []byte(b.String())
}

func (f fakeEndpoints) KubeletConfigz(_ context.Context, node string) ([]byte, error) {
	if f.c.endpointsErr != nil {
		return nil, f.c.endpointsErr
	}
	return []byte(`{"kubeletconfig":{"containerRuntimeEndpoint":"unix:///run/containerd/containerd.sock","runtimeRequestTimeout":"30s","featureGates":{"DRADeviceTaintRules":true}}}`), nil
}

func (f fakeEndpoints) KubeletMetrics(_ context.Context, node string) ([]byte, error) {
	if f.c.endpointsErr != nil {
		return nil, f.c.endpointsErr
	}
	return metrics(f.c.kubeletGates), nil
}

func (f fakeEndpoints) APIServerMetrics(context.Context) ([]byte, error) {
	if f.c.endpointsErr != nil {
		return nil, f.c.endpointsErr
	}
	return metrics(f.c.apiGates), nil
}

// fakeClient builds the clientset: two nodes (a tainted control plane, a
// worker), discovery, and reactors for the reviews and the dry runs.
func fakeClient(t *testing.T, c cluster) *fake.Clientset {
	t.Helper()
	objects := []runtime.Object{
		node("kind-control-plane", c, v1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: v1.TaintEffectNoSchedule}),
		node("kind-worker", c),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
	}
	if c.facts != nil {
		raw, err := json.Marshal(c.facts)
		if err != nil {
			t.Fatal(err)
		}
		objects = append(objects, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: facts.Namespace, Name: facts.Name}, Data: map[string]string{facts.Key: string(raw)}})
	}
	cs := fake.NewClientset(append(objects, c.objects...)...)
	disco := cs.Discovery().(*fakediscovery.FakeDiscovery)
	disco.FakedServerVersion = &version.Info{GitVersion: "v1.36.3", Platform: "linux/amd64"}
	disco.Resources = discovery(c.noDRA)
	if c.noVAP {
		for _, l := range disco.Resources {
			if l.GroupVersion == "admissionregistration.k8s.io/v1" {
				l.APIResources = nil
			}
		}
	}
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview).DeepCopy()
		ra := r.Spec.ResourceAttributes
		key := access.Access{Verb: ra.Verb, Group: ra.Group, Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name}.String()
		r.Status.Allowed = !c.deny[key]
		return true, r, nil
	})
	cs.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{UserInfo: authnv1.UserInfo{Username: "kubernetes-admin"}}}, nil
	})
	cs.PrependReactor("create", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		create := a.(k8stesting.CreateActionImpl)
		if len(create.CreateOptions.DryRun) == 0 {
			t.Errorf("a namespace create without dry run")
			return true, nil, errors.New("preflight must not persist anything")
		}
		if c.nsRefusal != nil {
			return true, nil, c.nsRefusal
		}
		ns := create.GetObject().(*v1.Namespace).DeepCopy()
		ns.Name = ns.GenerateName + "x7k2p"
		return true, ns, nil
	})
	return cs
}

func run(t *testing.T, c cluster) Report {
	t.Helper()
	cs := fakeClient(t, c)
	r, err := Run(context.Background(), cs, Options{Endpoints: fakeEndpoints{c}, Specs: testSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	// Reads only: GETs and lists, reviews, and dry-run creates.
	for _, a := range cs.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		case "create":
			res := a.GetResource().Resource
			if res == "selfsubjectaccessreviews" || res == "selfsubjectreviews" || len(a.(k8stesting.CreateActionImpl).CreateOptions.DryRun) > 0 {
				continue
			}
		}
		t.Errorf("preflight did %s %s: it must only read", a.GetVerb(), a.GetResource())
	}
	return r
}

func forbiddenByWebhook() error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "faultline-preflight-x7k2p",
		errors.New(`admission webhook "validation.gatekeeper.sh" denied the request: [psa-privileged] privileged namespaces are not allowed`))
}
