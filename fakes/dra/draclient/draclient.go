// Package draclient is the typed access to a deployment of the fake DRA driver
// (fakes/dra, deployed by fixtures/dra): its driver instances
// (fakes/dra/instances), each one's call record, devices and health streams per node, breaking,
// repairing and resetting devices at run time, and the claim configuration
// that hands a driver a FaultSpec (package faultspec). Everything goes through the API
// server (port-forwards to the driver's loopback, fakes/lib/podproxy), so it
// works on any cluster, not only kind.
//
//	drivers := client.New(cs, namespace)
//	cfg, err := client.First.Config(client.Faults([]faultspec.Fault{{Type: faultspec.Transient, Count: ptr.To(1)}}, nil))
//	report, err := drivers.On(node, client.First).Calls(ctx, string(claim.UID))
package draclient

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/dra/driver"
	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
	"github.com/faultline-k8s/faultline/fakes/dra/instances"
	"github.com/faultline-k8s/faultline/fakes/dra/podresources"
	"github.com/faultline-k8s/faultline/fakes/lib/podproxy"
)

// Driver is one of the fake drivers of fixtures/dra: its instance (driver
// name, DeviceClass, DaemonSet, devices per node) and the claim
// configuration that hands it a FaultSpec.
type Driver struct {
	instances.Instance
}

var (
	// First is the driver most specs use.
	First = Driver{instances.First}
	// Second is the healthy one in specs with two drivers.
	Second = Driver{instances.Second}
	// Third is the driver of the one spec whose fault stops a driver's DRA
	// service (suites/dra/unresponsive.go); no other spec uses it.
	Third = Driver{instances.Third}
	// Drivers are all the instances fixtures/dra deploys
	// (instances.All).
	Drivers = drivers(instances.All)
)

func drivers(all []instances.Instance) []Driver {
	out := make([]Driver, len(all))
	for i, in := range all {
		out[i] = Driver{in}
	}
	return out
}

// HTTPPort is the drivers' --http-address port.
const HTTPPort = "8080"

// Faults is the FaultSpec that injects prepare faults into
// NodePrepareResources and unprepare faults into NodeUnprepareResources.
func Faults(prepare, unprepare []faultspec.Fault) faultspec.FaultSpec {
	return faultspec.FaultSpec{APIVersion: faultspec.APIVersion, Kind: faultspec.Kind, Prepare: prepare, Unprepare: unprepare}
}

// Parameters is spec as the opaque parameters of a claim's configuration
// (JSON, which faultspec.Parse reads back). It is not validated: a spec may
// hand the driver an invalid FaultSpec on purpose.
func Parameters(spec faultspec.FaultSpec) ([]byte, error) {
	return json.Marshal(spec)
}

// Config is the claim configuration entry that hands spec to the driver,
// for the given requests (none: all of the claim's requests).
func (d Driver) Config(spec faultspec.FaultSpec, requests ...string) (resourceapi.DeviceClaimConfiguration, error) {
	raw, err := Parameters(spec)
	if err != nil {
		return resourceapi.DeviceClaimConfiguration{}, err
	}
	return resourceapi.DeviceClaimConfiguration{
		Requests: requests,
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver: d.Name, Parameters: runtime.RawExtension{Raw: raw},
		}},
	}, nil
}

// Client reaches one deployment of the fake drivers (fixtures/dra in
// namespace).
type Client struct {
	pods      *podproxy.Pods
	cs        kubernetes.Interface
	namespace string
}

// New returns the client of the deployment in namespace.
func New(pods *podproxy.Pods, namespace string) *Client {
	return &Client{pods: pods, cs: pods.ClientSet(), namespace: namespace}
}

// Pods returns the driver's running pods, one per node.
func (c *Client) Pods(ctx context.Context, d Driver) ([]v1.Pod, error) {
	return podproxy.ScheduledPods(ctx, c.cs, c.namespace, d.Selector())
}

// On is the driver d on node.
func (c *Client) On(node string, d Driver) Node {
	return Node{c: c, Name: node, Driver: d}
}

// Node is one driver's pod on one node: its records and controls.
type Node struct {
	c      *Client
	Name   string
	Driver Driver
}

// Pod returns the driver's pod on the node.
func (n Node) Pod(ctx context.Context) (*v1.Pod, error) {
	return podproxy.PodOnNode(ctx, n.c.cs, n.c.namespace, n.Driver.Selector(), n.Name)
}

// Calls returns the driver's call record for one claim (GET /calls).
func (n Node) Calls(ctx context.Context, claimUID string) (calls.Report, error) {
	var rep calls.Report
	err := n.get(ctx, "/calls", map[string]string{"claimUID": claimUID}, &rep)
	return rep, err
}

// Devices returns every device of the driver on the node with its
// injected failure, if any (GET /devices).
func (n Node) Devices(ctx context.Context) ([]driver.DeviceState, error) {
	var out []driver.DeviceState
	err := n.get(ctx, "/devices", nil, &out)
	return out, err
}

// HealthStream returns the record of the kubelet's health streams to the
// driver on the node, oldest first (GET /healthstream): each stream it
// opened, each StreamDrop that ended them, each reconnect refused meanwhile.
func (n Node) HealthStream(ctx context.Context) ([]driver.StreamEvent, error) {
	var out []driver.StreamEvent
	err := n.get(ctx, "/healthstream", nil, &out)
	return out, err
}

// Service returns the state of the driver's DRA service on the node
// (GET /service): whether it answers, when an Unresponsive fault stopped
// it and when it started again.
func (n Node) Service(ctx context.Context) (driver.ServiceState, error) {
	var out driver.ServiceState
	err := n.get(ctx, "/service", nil, &out)
	return out, err
}

// PodResources returns what the kubelet of the node says about a pod in
// faultline's namespaces (GET /podresources: its PodResources API, Get):
// each container's claims with the devices and CDI IDs the kubelet holds
// for them, duplicates included. Only the first driver reads the kubelet's
// socket (instances.Instance.PodResources).
func (n Node) PodResources(ctx context.Context, namespace, pod string) (*podresources.Pod, error) {
	var out podresources.Pod
	if err := n.get(ctx, "/podresources", map[string]string{"namespace": namespace, "pod": pod}, &out); err != nil {
		return nil, fmt.Errorf("%s on %s: %w", n.Driver.Name, n.Name, err)
	}
	return &out, nil
}

// FailDevice breaks a device now (POST /devices/fail): taint with effect
// in the ResourceSlice, Unhealthy in the health stream, condition
// Ready=False/DeviceFailed in the claims it is prepared for. The caller
// must repair it (RepairDevice or Reset).
func (n Node) FailDevice(ctx context.Context, device string, effect faultspec.TaintEffect, message string) (driver.DeviceState, error) {
	var out driver.FailResponse
	err := n.post(ctx, "/devices/fail", map[string]string{"device": device, "effect": string(effect), "message": message}, &out)
	return out.Device, err
}

// RepairDevice repairs a device (POST /devices/repair); it returns the
// device, or nothing when it was not failed.
func (n Node) RepairDevice(ctx context.Context, device string) ([]string, error) {
	var out driver.RepairResponse
	err := n.post(ctx, "/devices/repair", map[string]string{"device": device}, &out)
	return out.Repaired, err
}

// Reset repairs every device of the driver on the node (POST /reset); it
// returns the devices it repaired. Call records are kept.
func (n Node) Reset(ctx context.Context) ([]string, error) {
	var out driver.RepairResponse
	err := n.post(ctx, "/reset", nil, &out)
	return out.Repaired, err
}

func (n Node) get(ctx context.Context, path string, query map[string]string, out any) error {
	pod, err := n.Pod(ctx)
	if err != nil {
		return err
	}
	return n.c.pods.GetJSON(ctx, pod, HTTPPort, path, query, out)
}

func (n Node) post(ctx context.Context, path string, query map[string]string, out any) error {
	pod, err := n.Pod(ctx)
	if err != nil {
		return err
	}
	if err := n.c.pods.PostJSON(ctx, pod, HTTPPort, path, query, out); err != nil {
		return fmt.Errorf("%s on %s: %w", n.Driver.Name, n.Name, err)
	}
	return nil
}
