package driver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/lib/scope"
)

const (
	testNode = "node-a"
	// testNamespace is the one namespace the harness's fault scope gate
	// allows, as if faultline's specs had labelled it.
	testNamespace = "ns"
)

// harness runs the real driver (kubeletplugin gRPC servers on Unix sockets
// in a temp dir, fake API server) and talks to it like the kubelet does.
type harness struct {
	t      *testing.T
	ctx    context.Context
	client *fake.Clientset
	drv    *Driver
	logger klog.Logger
	conn   *grpc.ClientConn
	dra    drapbv1.DRAPluginClient
}

func newHarness(t *testing.T, claims ...*resourceapi.ResourceClaim) *harness {
	t.Helper()
	return newHarnessWith(t, nil, claims...)
}

// newHarnessWith is newHarness with a change to the driver's Config.
func newHarnessWith(t *testing.T, change func(*Config), claims ...*resourceapi.ResourceClaim) *harness {
	t.Helper()
	t.Parallel() // each harness waits ~1s for the ResourceSlice informer
	// Buffered too, so that tests can check what the driver logged.
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))

	objs := []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}}
	for _, c := range claims {
		objs = append(objs, c)
	}
	client := fake.NewClientset(objs...)

	// Not t.TempDir(): its name includes the test name, and the registrar
	// socket <dir>/r/dra.faultline.k8s.io-reg.sock must fit into the
	// 108-byte limit of a Unix socket path.
	dir, err := os.MkdirTemp("", "fdra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	pluginDir, regDir := filepath.Join(dir, "p"), filepath.Join(dir, "r")
	for _, d := range []string{pluginDir, regDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{
		NodeName:      testNode,
		KubeClient:    client,
		Gate:          scope.Static{testNamespace},
		Devices:       4,
		PluginDataDir: pluginDir,
		RegistrarDir:  regDir,
		GCInterval:    -1, // tests call RepairOrphanedDevices themselves
		ClaimStatus:   true,
		OnFatal:       func(err error) { t.Errorf("fatal driver error: %v", err) },
	}
	if change != nil {
		change(&cfg)
	}
	drv, err := Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("Start: %v", err)
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(pluginDir, "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		drv.Stop()
		cancel()
		for _, sock := range []string{filepath.Join(pluginDir, "dra.sock"), filepath.Join(regDir, DefaultDriverName+"-reg.sock")} {
			if _, err := os.Stat(sock); !os.IsNotExist(err) {
				t.Errorf("%s not removed on stop: %v", sock, err)
			}
		}
	})
	return &harness{t: t, ctx: ctx, client: client, drv: drv, logger: logger, conn: conn, dra: drapbv1.NewDRAPluginClient(conn)}
}

// logs is what the driver logged so far.
func (h *harness) logs() string {
	return h.logger.GetSink().(ktesting.Underlier).GetBuffer().String()
}

func claimRefs(claims ...*resourceapi.ResourceClaim) []*drapbv1.Claim {
	refs := make([]*drapbv1.Claim, 0, len(claims))
	for _, c := range claims {
		refs = append(refs, &drapbv1.Claim{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)})
	}
	return refs
}

// prepare calls NodePrepareResources for one claim and returns its result.
func (h *harness) prepare(c *resourceapi.ResourceClaim) *drapbv1.NodePrepareResourceResponse {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	resp, err := h.dra.NodePrepareResources(ctx, &drapbv1.NodePrepareResourcesRequest{Claims: claimRefs(c)})
	if err != nil {
		h.t.Fatalf("NodePrepareResources: %v", err)
	}
	res := resp.Claims[string(c.UID)]
	if res == nil {
		h.t.Fatalf("no result for claim %s in %v", c.UID, resp)
	}
	return res
}

func (h *harness) unprepare(c *resourceapi.ResourceClaim) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	resp, err := h.dra.NodeUnprepareResources(ctx, &drapbv1.NodeUnprepareResourcesRequest{Claims: claimRefs(c)})
	if err != nil {
		h.t.Fatalf("NodeUnprepareResources: %v", err)
	}
	res := resp.Claims[string(c.UID)]
	if res == nil {
		h.t.Fatalf("no result for claim %s in %v", c.UID, resp)
	}
	return res.Error
}

// eventually polls cond until it returns "" or the deadline passes; cond
// returns a description of what is still missing.
func (h *harness) eventually(what string, cond func() string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		missing := cond()
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s: %s", what, missing)
		}
		<-tick.C
	}
}

// deviceTaints returns the taints of a device in the published slice. The
// slice controller replaces a changed slice by delete and create on the fake
// clientset, so a device can be missing for a moment: wait until it is back.
func (h *harness) deviceTaints(device string) []resourceapi.DeviceTaint {
	h.t.Helper()
	var taints []resourceapi.DeviceTaint
	h.eventually("device "+device+" in a published ResourceSlice", func() string {
		slices, err := h.client.ResourceV1().ResourceSlices().List(h.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		for _, s := range slices.Items {
			for _, d := range s.Spec.Devices {
				if d.Name == device {
					taints = d.Taints
					return ""
				}
			}
		}
		return "not published"
	})
	return taints
}

func (h *harness) lastCall(uid types.UID) calls.Call {
	h.t.Helper()
	cs := h.drv.Recorder().Calls(string(uid))
	if len(cs) == 0 {
		h.t.Fatalf("no calls recorded for %s", uid)
	}
	return cs[len(cs)-1]
}

// alloc is one allocated device: request name and device name in our pool.
type alloc struct{ request, device string }

// newClaim returns an allocated claim in testNamespace.
func newClaim(name string, allocs []alloc, configs ...resourceapi.DeviceAllocationConfiguration) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name, UID: types.UID("uid-" + name)}}
	result := resourceapi.DeviceAllocationResult{Config: configs}
	for _, a := range allocs {
		result.Results = append(result.Results, resourceapi.DeviceRequestAllocationResult{
			Request: a.request, Driver: DefaultDriverName, Pool: testNode, Device: a.device,
		})
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: a.request})
	}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: result}
	return c
}

// faultConfig is an opaque config entry for our driver, scoped to requests.
func faultConfig(parameters string, requests ...string) resourceapi.DeviceAllocationConfiguration {
	return resourceapi.DeviceAllocationConfiguration{
		Source:   resourceapi.AllocationConfigSourceClaim,
		Requests: requests,
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
			Driver:     DefaultDriverName,
			Parameters: runtime.RawExtension{Raw: []byte(parameters)},
		}},
	}
}

// prepareFaultsSpec builds a FaultSpec with the given prepare faults (JSON objects).
func prepareFaultsSpec(faults ...string) string {
	return fmt.Sprintf(`{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec","prepare":[%s]}`, strings.Join(faults, ","))
}

func unprepareFaultsSpec(faults ...string) string {
	return fmt.Sprintf(`{"apiVersion":"faultline.k8s.io/v1alpha1","kind":"FaultSpec","unprepare":[%s]}`, strings.Join(faults, ","))
}

func mustContain(t *testing.T, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%q\n  does not contain %q", s, w)
		}
	}
}
