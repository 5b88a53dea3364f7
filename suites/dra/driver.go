package dra

// The suite's glue to the fake DRA drivers (fakes/dra, deployed by
// fixtures/dra): their typed client (fakes/dra/draclient: which pod
// serves a node, its call record, its devices, breaking and repairing a
// device at run time, the claim configuration carrying a FaultSpec) bound
// to the suite's namespace, and the drivers' ResourceSlices.

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/fakes/dra/draclient"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// driverRef is one of the fake drivers of fixtures/dra
// (fakes/dra/instances).
type driverRef = draclient.Driver

var (
	// firstDriver is the driver most specs use.
	firstDriver = draclient.First
	// secondDriver is the healthy one in specs with two drivers, and the
	// one whose health stream health.go drops.
	secondDriver = draclient.Second
	// thirdDriver is unresponsive.go's own: its fault stops the driver's
	// DRA service on a node, and no other spec uses it.
	thirdDriver = draclient.Third
	// drivers are all of them: the fixture set's readiness, the dumps and
	// the kubelet restart's witnesses go through every one.
	drivers = draclient.Drivers
)

// draClient is the client of the suite's driver deployment.
func draClient() *draclient.Client {
	return draclient.New(harness.FakePods(), driverNamespace)
}

// repairDevice repairs a device of driver d on node, and says so.
func repairDevice(ctx context.Context, cs clientset.Interface, d driverRef, node, device string) error {
	_, err := draClient().On(node, d).RepairDevice(ctx, device)
	if err == nil {
		framework.Logf("repaired %s device %s on node %s", d.Name, device, node)
	}
	return err
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
