// Package podresources reads what the kubelet itself says a pod's
// containers got: its PodResources API (Get, k8s.io/kubelet
// podresources/v1, on the node's /var/lib/kubelet/pod-resources/kubelet.sock),
// served by the fake DRA driver as GET /podresources. The dynamic resources
// come from the kubelet's claim cache, the same list it hands the runtime
// as the container's CDI devices, so a CDI device the kubelet holds twice
// is listed twice here whatever the runtime then does with it (containerd
// drops duplicate CDI IDs). The lists are passed on as the kubelet gives
// them: nothing is merged, sorted or de-duplicated.
package podresources

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/faultline-k8s/faultline/fakes/lib/httpjson"
	"github.com/faultline-k8s/faultline/fakes/lib/query"
	"github.com/faultline-k8s/faultline/fakes/lib/scope"
)

// DefaultSocket is the kubelet's PodResources socket (its root directory
// /var/lib/kubelet).
const DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// callTimeout bounds one Get: the kubelet answers from memory.
const callTimeout = 10 * time.Second

// Pod is the body of GET /podresources: the kubelet's PodResources Get for
// one pod, its containers' dynamic resources (DRA) only.
type Pod struct {
	Namespace  string      `json:"namespace"`
	Name       string      `json:"name"`
	Containers []Container `json:"containers"`
}

// Container is one container of the pod (and restartable init container,
// which the kubelet lists first).
type Container struct {
	Name string `json:"name"`
	// DynamicResources has one entry per claim the container uses.
	DynamicResources []Claim `json:"dynamicResources"`
}

// Claim is one ResourceClaim of a container as the kubelet holds it.
type Claim struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Resources has one entry per device the kubelet holds for the claim,
	// in its order; a device held twice is here twice.
	Resources []Resource `json:"resources"`
}

// Resource is one device of a claim.
type Resource struct {
	Driver  string `json:"driver"`
	Pool    string `json:"pool"`
	Device  string `json:"device"`
	ShareID string `json:"shareID,omitempty"`
	// CDIDevices are the CDI IDs the kubelet lists with the device.
	CDIDevices []string `json:"cdiDevices"`
}

// Get asks the kubelet at socket for pod namespace/name.
func Get(ctx context.Context, socket, namespace, name string) (*Pod, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("kubelet PodResources at %s: %w", socket, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := podresourcesv1.NewPodResourcesListerClient(conn).Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodNamespace: namespace, PodName: name})
	if err != nil {
		return nil, fmt.Errorf("kubelet PodResources Get %s/%s at %s: %w", namespace, name, socket, err)
	}
	return fromAPI(resp.GetPodResources()), nil
}

// fromAPI keeps the kubelet's lists as they are.
func fromAPI(p *podresourcesv1.PodResources) *Pod {
	out := &Pod{Namespace: p.GetNamespace(), Name: p.GetName(), Containers: []Container{}}
	for _, c := range p.GetContainers() {
		oc := Container{Name: c.GetName(), DynamicResources: []Claim{}}
		for _, d := range c.GetDynamicResources() {
			claim := Claim{Namespace: d.GetClaimNamespace(), Name: d.GetClaimName(), Resources: []Resource{}}
			for _, r := range d.GetClaimResources() {
				res := Resource{Driver: r.GetDriverName(), Pool: r.GetPoolName(), Device: r.GetDeviceName(), ShareID: r.GetShareId(), CDIDevices: []string{}}
				for _, cdi := range r.GetCdiDevices() {
					res.CDIDevices = append(res.CDIDevices, cdi.GetName())
				}
				claim.Resources = append(claim.Resources, res)
			}
			oc.DynamicResources = append(oc.DynamicResources, claim)
		}
		out.Containers = append(out.Containers, oc)
	}
	return out
}

// errNoSocket is what a driver started without a socket answers.
var errNoSocket = errors.New("this driver reads no PodResources socket (--pod-resources-socket is empty)")

// Handler serves GET /podresources?namespace=NS&pod=NAME: Get for that
// pod, as JSON (Pod). Only pods in namespaces gate allows (faultline's
// own): the driver reads the kubelet's view of no one else's pods. 400 for
// a missing or unknown parameter, 403 for another namespace, 501 without a
// socket, 502 when the kubelet does not answer or does not know the pod.
func Handler(socket string, gate scope.Gate) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet {
			http.Error(w, "only GET is supported", http.StatusMethodNotAllowed)
			return
		}
		q, ok := query.Request(w, req, "namespace", "pod")
		if !ok {
			return
		}
		namespace, name := q.Get("namespace"), q.Get("pod")
		if namespace == "" || name == "" {
			http.Error(w, "namespace and pod are required", http.StatusBadRequest)
			return
		}
		if socket == "" {
			http.Error(w, errNoSocket.Error(), http.StatusNotImplemented)
			return
		}
		if allowed, why := gate.Allows(req.Context(), namespace); !allowed {
			http.Error(w, "only pods in faultline's namespaces: "+why, http.StatusForbidden)
			return
		}
		pod, err := Get(req.Context(), socket, namespace, name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		httpjson.Write(w, pod)
	})
}
