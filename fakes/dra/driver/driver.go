// Package driver is the fake DRA kubelet plugin: it implements
// kubeletplugin.DRAPlugin (prepare/unprepare with injected faults), publishes
// this node's ResourceSlice (with taints for failed devices), streams device
// health to the kubelet and writes per-device conditions into
// ResourceClaim status.devices.
package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/dra/errortype"
	"github.com/faultline-k8s/faultline/fakes/lib/scope"
)

// DefaultDriverName is the driver name used by the manifests in fixtures/dra.
const DefaultDriverName = "dra.faultline.k8s.io"

// Config is everything the driver needs; the zero values of the optional
// fields are replaced by defaults in Start.
type Config struct {
	DriverName string
	NodeName   string
	KubeClient kubernetes.Interface
	// Gate decides in which namespaces a claim's FaultSpec may act
	// (required): elsewhere the driver ignores it and prepares normally,
	// so that no tenant of a shared cluster can make it fail pods.
	Gate scope.Gate
	// Devices is how many devices (dev-0 .. dev-N-1) this node publishes.
	Devices int
	// PluginDataDir holds dra.sock; RegistrarDir is the kubelet's
	// plugins_registry. Both must exist. Empty: kubeletplugin defaults.
	PluginDataDir string
	RegistrarDir  string
	// Recorder receives every call; a new one is created if nil.
	Recorder *calls.Recorder
	// HealthInterval is how often the full device health list is re-sent to
	// the kubelet even without changes (default 10s).
	HealthInterval time.Duration
	// GCInterval is how often device failures whose claim was deleted are
	// cleared (default 10s). Negative disables the background loop.
	GCInterval time.Duration
	// ClaimStatus enables writing ResourceClaim status.devices conditions.
	ClaimStatus bool
	// CDIDir is the runtime's CDI spec directory (/var/run/cdi), where the
	// driver writes the CDI specs of claims that ask for CDI devices
	// (FaultSpec cdi). Empty: such claims fail to prepare.
	CDIDir string
	// CDIHookPath is the startContainer hook binary as the container sees
	// it (default DefaultCDIHookPath).
	CDIHookPath string
	// OnFatal is called with errors after which the driver cannot go on
	// (e.g. the gRPC server died). Typically cancels the main context.
	OnFatal func(error)
	// FakeModes are documented misbehaviours (vocab/fakemodes) of this
	// fake, for negative controls; none in a normal run.
	FakeModes []string
	// ExtraOptions are appended to the kubeletplugin options (tests).
	ExtraOptions []kubeletplugin.Option
}

// Driver implements kubeletplugin.DRAPlugin and the DRAResourceHealth
// service. kubeletplugin registers the health service automatically because
// Driver implements drahealthv1alpha1.DRAResourceHealthServer.
type Driver struct {
	drahealthv1alpha1.UnimplementedDRAResourceHealthServer

	cfg      Config
	recorder *calls.Recorder
	devices  *inventory
	// registrar registers the driver with the kubelet for the driver's
	// whole life; service serves dra.sock (service.go).
	registrar *kubeletplugin.Helper
	service   *service
	cancel    context.CancelFunc
	reg       registration
	streams   *healthStreams
	wg        sync.WaitGroup

	mu     sync.Mutex
	claims map[types.UID]*claimState
	// requests counts the prepare and unprepare gRPC calls served
	// (calls.Call.Request).
	requests int
}

var (
	_ kubeletplugin.DRAPlugin                   = &Driver{}
	_ drahealthv1alpha1.DRAResourceHealthServer = &Driver{}
)

// claimState is what the driver remembers about one claim between calls.
type claimState struct {
	namespace, name string
	attempts        map[calls.Method]int
	// plan is cached from the last prepare so that unprepare, which only
	// gets the claim's UID and name, still knows the devices and faults.
	plan *plan
	// prepared and devices implement idempotent repeat preparation.
	prepared bool
	devices  []kubeletplugin.Device
	// lastStatus is the status.devices content last written, to skip
	// redundant API writes.
	lastStatus string
}

// Start creates the driver, starts the kubeletplugin helpers (gRPC
// registration; DRA + health services, service.go) and publishes the
// ResourceSlice.
// Stop it with Driver.Stop or by cancelling ctx.
func Start(ctx context.Context, cfg Config) (*Driver, error) {
	if cfg.DriverName == "" {
		cfg.DriverName = DefaultDriverName
	}
	if cfg.NodeName == "" {
		return nil, errors.New("node name is required")
	}
	if cfg.KubeClient == nil {
		return nil, errors.New("kube client is required")
	}
	if cfg.Gate == nil {
		return nil, errors.New("fault scope gate is required")
	}
	if cfg.Devices < 0 {
		return nil, fmt.Errorf("devices must not be negative, got %d", cfg.Devices)
	}
	if cfg.Recorder == nil {
		cfg.Recorder = calls.NewRecorder()
	}
	if cfg.HealthInterval <= 0 {
		cfg.HealthInterval = 10 * time.Second
	}
	if cfg.GCInterval == 0 {
		cfg.GCInterval = 10 * time.Second
	}
	if cfg.CDIHookPath == "" {
		cfg.CDIHookPath = DefaultCDIHookPath
	}
	d := &Driver{
		cfg:      cfg,
		recorder: cfg.Recorder,
		streams:  newHealthStreams(),
		claims:   map[types.UID]*claimState{},
	}
	d.devices = newInventory(cfg.DriverName, cfg.NodeName, cfg.Devices)

	opts := []kubeletplugin.Option{
		kubeletplugin.DriverName(cfg.DriverName),
		kubeletplugin.NodeName(cfg.NodeName),
		kubeletplugin.KubeClient(cfg.KubeClient),
		kubeletplugin.GRPCInterceptor(errortype.UnaryServerInterceptor()),
		kubeletplugin.GRPCInterceptor(d.reg.interceptor()),
		// The helper serializes all calls by default. A Stall fault would
		// then block every other claim on this node for its whole
		// duration and make parallel specs interfere; the driver's own
		// state is protected by d.mu instead, which is never held while
		// stalling.
		kubeletplugin.Serialize(false),
	}
	if cfg.PluginDataDir != "" {
		opts = append(opts, kubeletplugin.PluginDataDirectoryPath(cfg.PluginDataDir))
	}
	if cfg.RegistrarDir != "" {
		opts = append(opts, kubeletplugin.RegistrarDirectoryPath(cfg.RegistrarDir))
	}
	opts = append(opts, cfg.ExtraOptions...)

	// bgCtx ends with Stop: the GC loop and a pending service restart.
	bgCtx, cancel := context.WithCancel(ctx)
	d.cancel = cancel
	d.service = &service{
		ctx: bgCtx,
		start: func(ctx context.Context) (*kubeletplugin.Helper, error) {
			h, err := kubeletplugin.Start(ctx, d, append(opts[:len(opts):len(opts)], kubeletplugin.RegistrationService(false))...)
			if err != nil {
				return nil, fmt.Errorf("start the DRA service: %w", err)
			}
			return h, nil
		},
		startSlices: func(ctx context.Context, res *resourceslice.DriverResources) (*resourceslice.Controller, error) {
			logger := klog.LoggerWithName(klog.FromContext(ctx), "ResourceSlice controller")
			c, err := resourceslice.StartController(klog.NewContext(ctx, logger), resourceslice.Options{
				DriverName: cfg.DriverName,
				KubeClient: cfg.KubeClient,
				// The node owns the slices (the UID is looked up), as the
				// helper's own controller would have it.
				Owner:     &resourceslice.Owner{APIVersion: "v1", Kind: "Node", Name: cfg.NodeName},
				Resources: res,
				// Publishing errors are retried; none ends the driver.
				ErrorHandler: func(ctx context.Context, err error, msg string) {
					utilruntime.HandleErrorWithContext(ctx, err, msg)
				},
				MutationCacheTTL: ptr.To(sliceMutationTTL),
				SyncDelay:        ptr.To(sliceSyncDelay),
			})
			if err != nil {
				return nil, fmt.Errorf("start the ResourceSlice controller: %w", err)
			}
			return c, nil
		},
		republish: d.devices.publish,
	}
	d.devices.setPublisher(func(ctx context.Context) error {
		return d.service.publish(ctx, d.devices.resources())
	})
	// The service first, so that it answers once the kubelet registers
	// the driver.
	if err := d.service.run(); err != nil {
		cancel()
		return nil, err
	}
	registrar, err := kubeletplugin.Start(bgCtx, d, append(opts[:len(opts):len(opts)], kubeletplugin.DRAService(false))...)
	if err != nil {
		d.service.stop()
		cancel()
		return nil, fmt.Errorf("start the registrar: %w", err)
	}
	d.registrar = registrar
	if err := d.devices.publish(ctx); err != nil {
		d.Stop()
		return nil, fmt.Errorf("publish ResourceSlice: %w", err)
	}
	if cfg.GCInterval > 0 {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.gcLoop(bgCtx, cfg.GCInterval)
		}()
	}
	klog.FromContext(ctx).Info("Fake DRA driver started", "driver", cfg.DriverName, "node", cfg.NodeName, "devices", cfg.Devices)
	return d, nil
}

// Stop stops the gRPC servers (removing their sockets) and the
// ResourceSlice controller. Published slices stay: the kubelet removes the
// slices of a driver that stays unregistered.
func (d *Driver) Stop() {
	d.cancel()
	d.registrar.Stop()
	d.service.stop()
	d.wg.Wait()
}

// Recorder returns the call record.
func (d *Driver) Recorder() *calls.Recorder { return d.recorder }

// HandleError implements kubeletplugin.DRAPlugin.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	utilruntime.HandleErrorWithContext(ctx, err, msg)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) && d.cfg.OnFatal != nil {
		d.cfg.OnFatal(fmt.Errorf("%s: %w", msg, err))
	}
}

// state returns the claim's state, creating it. Caller holds d.mu.
func (d *Driver) state(uid types.UID, namespace, name string) *claimState {
	st := d.claims[uid]
	if st == nil {
		st = &claimState{attempts: map[calls.Method]int{}}
		d.claims[uid] = st
	}
	st.namespace, st.name = namespace, name
	return st
}

// ourResults returns the allocation results that belong to this driver.
func (d *Driver) ourResults(claim *resourceapi.ResourceClaim) []resourceapi.DeviceRequestAllocationResult {
	if claim.Status.Allocation == nil {
		return nil
	}
	var out []resourceapi.DeviceRequestAllocationResult
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == d.cfg.DriverName {
			out = append(out, r)
		}
	}
	return out
}
