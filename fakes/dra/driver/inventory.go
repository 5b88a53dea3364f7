package driver

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
)

// TaintKey marks a device that a Permanent/DeviceFailed fault broke. The
// taint value is the UID of the claim whose fault broke it.
const TaintKey = "faultline.k8s.io/device-failed"

// Device attributes published for every device, for CEL selectors such as
// device.attributes["dra.faultline.k8s.io"].index == 1.
const (
	AttrIndex = "index" // int: N of dev-N
	AttrModel = "model" // string: always Model
	AttrNode  = "node"  // string: the node name (also the pool name)
	Model     = "faultline-fake"
)

// DeviceName returns the name of device i.
func DeviceName(i int) string { return fmt.Sprintf("dev-%d", i) }

// Triggers of a device failure.
const (
	// TriggerFaultSpec: a Permanent/DeviceFailed fault in a claim's
	// FaultSpec fired during a call. The failure lasts until that claim is
	// deleted (see gc.go) or POST /reset.
	TriggerFaultSpec = "FaultSpec"
	// TriggerHTTP: POST /devices/fail broke the device, the way hardware
	// fails while in use. The failure lasts until POST /devices/repair or
	// POST /reset, whatever happens to the claims that used the device.
	TriggerHTTP = "HTTP"
)

// TaintValueHTTP is the taint value of a device broken by POST
// /devices/fail (a FaultSpec failure uses the claim UID).
const TaintValueHTTP = "http"

// failure is an injected DeviceFailed failure of one device. A FaultSpec
// failure lasts until the claim that caused it is deleted (see gc.go) or
// /reset is called, so that a spec can observe taint and health after the
// pod was evicted; an HTTP failure lasts until it is repaired.
type failure struct {
	Trigger string                `json:"trigger"`
	Effect  faultspec.TaintEffect `json:"effect"`
	Message string                `json:"message"`
	// The claim whose fault broke the device (FaultSpec), or the first
	// claim the device was prepared for when it broke (HTTP; empty when
	// the device was idle).
	ClaimNamespace string    `json:"claimNamespace,omitempty"`
	ClaimName      string    `json:"claimName,omitempty"`
	ClaimUID       string    `json:"claimUID,omitempty"`
	Since          time.Time `json:"since"`
}

// taintValue is the value of the taint a failure puts on its device.
func (f failure) taintValue() string {
	if f.Trigger == TriggerHTTP {
		return TaintValueHTTP
	}
	return f.ClaimUID
}

// inventory is this node's devices plus their injected failures; it turns
// them into the ResourceSlice and the health stream.
type inventory struct {
	driver, pool string
	count        int

	// pubMu serializes publishing so that an older snapshot can never
	// overwrite a newer one.
	pubMu sync.Mutex

	mu      sync.Mutex
	failed  map[string]failure
	changed chan struct{} // closed and replaced on every change
	publ    func(context.Context) error
}

func newInventory(driver, pool string, count int) *inventory {
	return &inventory{
		driver:  driver,
		pool:    pool,
		count:   count,
		failed:  map[string]failure{},
		changed: make(chan struct{}),
	}
}

// setPublisher installs the function that publishes resources(); it is
// called with pubMu held.
func (inv *inventory) setPublisher(f func(context.Context) error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.publ = f
}

func (inv *inventory) publish(ctx context.Context) error {
	inv.pubMu.Lock()
	defer inv.pubMu.Unlock()
	inv.mu.Lock()
	publ := inv.publ
	inv.mu.Unlock()
	if publ == nil {
		return nil
	}
	return publ(ctx)
}

// resources builds the desired ResourceSlice content: one pool named after
// the node with one slice holding all devices.
func (inv *inventory) resources() resourceslice.DriverResources {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	devices := make([]resourceapi.Device, 0, inv.count)
	for i := 0; i < inv.count; i++ {
		name := DeviceName(i)
		dev := resourceapi.Device{
			Name: name,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				AttrIndex: {IntValue: ptr.To(int64(i))},
				AttrModel: {StringValue: ptr.To(Model)},
				AttrNode:  {StringValue: ptr.To(inv.pool)},
			},
		}
		if f, ok := inv.failed[name]; ok {
			dev.Taints = []resourceapi.DeviceTaint{{
				Key:    TaintKey,
				Value:  f.taintValue(),
				Effect: resourceapi.DeviceTaintEffect(f.Effect),
			}}
		}
		devices = append(devices, dev)
	}
	return resourceslice.DriverResources{
		Pools: map[string]resourceslice.Pool{
			inv.pool: {Slices: []resourceslice.Slice{{Devices: devices}}},
		},
	}
}

// markFailed records a device failure and republishes if that changed
// anything. An already failed device keeps its first failure: the first
// claim to break it owns it.
func (inv *inventory) markFailed(ctx context.Context, device string, f failure) error {
	inv.mu.Lock()
	if _, ok := inv.failed[device]; ok {
		inv.mu.Unlock()
		return nil
	}
	inv.failed[device] = f
	inv.notifyLocked()
	inv.mu.Unlock()
	return inv.publish(ctx)
}

// setFailed records a device failure, replacing an earlier one (an explicit
// POST /devices/fail wins over whatever broke the device before), and
// republishes.
func (inv *inventory) setFailed(ctx context.Context, device string, f failure) error {
	inv.mu.Lock()
	inv.failed[device] = f
	inv.notifyLocked()
	inv.mu.Unlock()
	return inv.publish(ctx)
}

// failureOf returns the current failure of device, if any.
func (inv *inventory) failureOf(device string) (failure, bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	f, ok := inv.failed[device]
	return f, ok
}

// clear removes the failures for which match returns true, republishes if
// any were removed and returns the names of the repaired devices.
func (inv *inventory) clear(ctx context.Context, match func(device string, f failure) bool) ([]string, error) {
	inv.mu.Lock()
	var repaired []string
	for name, f := range inv.failed {
		if match(name, f) {
			delete(inv.failed, name)
			repaired = append(repaired, name)
		}
	}
	if len(repaired) > 0 {
		inv.notifyLocked()
	}
	inv.mu.Unlock()
	sort.Strings(repaired)
	if len(repaired) == 0 {
		return nil, nil
	}
	return repaired, inv.publish(ctx)
}

func (inv *inventory) notifyLocked() {
	close(inv.changed)
	inv.changed = make(chan struct{})
}

// failures returns a copy of the current failures and a channel that is
// closed on the next change.
func (inv *inventory) failures() (map[string]failure, <-chan struct{}) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	out := make(map[string]failure, len(inv.failed))
	for k, v := range inv.failed {
		out[k] = v
	}
	return out, inv.changed
}
