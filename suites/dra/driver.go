package dra

// Access to the fake DRA drivers (drivers/fake/dra) from the specs: which
// pod serves a node, its call record, its devices, and breaking and
// repairing a device at run time. Everything goes through the API server
// (pod proxy), so it works on any cluster, not only kind.

import (
	"context"
	"encoding/json"
	"fmt"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/drivers/fake/dra/calls"
	"github.com/faultline-k8s/faultline/drivers/fake/dra/driver"
	"github.com/faultline-k8s/faultline/drivers/fake/dra/faultspec"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// driverRef is one of the two fake drivers of fixtures/dra.
type driverRef struct {
	// Name is the DRA driver name, DeviceClass the class selecting all its
	// devices, Selector the label selector of its DaemonSet's pods.
	Name, DeviceClass, Selector string
	// Devices is how many devices it publishes per node (--devices).
	Devices int
}

var (
	// firstDriver is the driver most specs use (daemonset.yaml.tmpl).
	firstDriver = driverRef{
		Name: driver.DefaultDriverName, DeviceClass: "faultline.k8s.io",
		Selector: "app.kubernetes.io/name=fake-dra-driver", Devices: 8,
	}
	// secondDriver is the healthy one in specs with two drivers
	// (daemonset-second.yaml.tmpl).
	secondDriver = driverRef{
		Name: "second.dra.faultline.k8s.io", DeviceClass: "second.faultline.k8s.io",
		Selector: "app.kubernetes.io/name=fake-dra-driver-second", Devices: 4,
	}
	drivers = []driverRef{firstDriver, secondDriver}
)

// httpPort is the driver's --http-address port.
const httpPort = "8080"

// pods returns the driver's running pods, one per node.
func (d driverRef) pods(ctx context.Context, cs clientset.Interface) ([]v1.Pod, error) {
	list, err := cs.CoreV1().Pods(driverNamespace).List(ctx, metav1.ListOptions{LabelSelector: d.Selector})
	if err != nil {
		return nil, err
	}
	var out []v1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// pod returns the driver's pod on node.
func (d driverRef) pod(ctx context.Context, cs clientset.Interface, node string) (*v1.Pod, error) {
	return harness.PodOnNode(ctx, cs, driverNamespace, d.Selector, node)
}

// calls returns the driver's call record on node for one claim.
func (d driverRef) calls(ctx context.Context, cs clientset.Interface, node, claimUID string) (calls.Report, error) {
	var rep calls.Report
	pod, err := d.pod(ctx, cs, node)
	if err != nil {
		return rep, err
	}
	raw, err := harness.ProxyGet(ctx, cs, pod, httpPort, "/calls", map[string]string{"claimUID": claimUID})
	if err != nil {
		return rep, fmt.Errorf("GET /calls from %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return rep, fmt.Errorf("GET /calls from %s/%s: %w: %s", pod.Namespace, pod.Name, err, raw)
	}
	return rep, nil
}

// devices returns GET /devices of the driver on node.
func (d driverRef) devices(ctx context.Context, cs clientset.Interface, node string) ([]driver.DeviceState, error) {
	pod, err := d.pod(ctx, cs, node)
	if err != nil {
		return nil, err
	}
	raw, err := harness.ProxyGet(ctx, cs, pod, httpPort, "/devices", nil)
	if err != nil {
		return nil, fmt.Errorf("GET /devices from %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	var out []driver.DeviceState
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("GET /devices from %s/%s: %w: %s", pod.Namespace, pod.Name, err, raw)
	}
	return out, nil
}

// failDevice breaks a device of node now (POST /devices/fail): taint with
// effect in the ResourceSlice, Unhealthy in the health stream, condition
// Ready=False/DeviceFailed in the claims it is prepared for. The caller
// must repair it (DeferCleanup(d.repairDevice, ...)).
func (d driverRef) failDevice(ctx context.Context, cs clientset.Interface, node, device string, effect faultspec.TaintEffect, message string) (driver.DeviceState, error) {
	var out driver.FailResponse
	raw, err := d.post(ctx, cs, node, "/devices/fail", map[string]string{"device": device, "effect": string(effect), "message": message})
	if err != nil {
		return out.Device, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out.Device, fmt.Errorf("POST /devices/fail: %w: %s", err, raw)
	}
	return out.Device, nil
}

// repairDevice repairs a device of node (POST /devices/repair).
func (d driverRef) repairDevice(ctx context.Context, cs clientset.Interface, node, device string) error {
	_, err := d.post(ctx, cs, node, "/devices/repair", map[string]string{"device": device})
	if err == nil {
		framework.Logf("repaired %s device %s on node %s", d.Name, device, node)
	}
	return err
}

// post is ProxyGet's POST twin.
func (d driverRef) post(ctx context.Context, cs clientset.Interface, node, path string, query map[string]string) ([]byte, error) {
	pod, err := d.pod(ctx, cs, node)
	if err != nil {
		return nil, err
	}
	req := cs.CoreV1().RESTClient().Post().Namespace(pod.Namespace).Resource("pods").
		SubResource("proxy").Name(utilnet.JoinSchemeNamePort("http", pod.Name, httpPort)).Suffix(path)
	for k, v := range query {
		req = req.Param(k, v)
	}
	raw, err := req.DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("POST %s to %s/%s: %w: %s", path, pod.Namespace, pod.Name, err, raw)
	}
	return raw, nil
}

// publishedDevices returns the devices the driver published for node's pool.
func publishedDevices(ctx context.Context, cs clientset.Interface, driverName, node string) (map[string]resourceDevice, error) {
	slices, err := cs.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
		FieldSelector: "spec.driver=" + driverName + ",spec.nodeName=" + node,
	})
	if err != nil {
		return nil, err
	}
	out := map[string]resourceDevice{}
	for _, s := range slices.Items {
		if s.Spec.Pool.Name != node {
			continue
		}
		for _, dev := range s.Spec.Devices {
			out[dev.Name] = resourceDevice{Device: dev, Slice: s.Name}
		}
	}
	return out, nil
}
