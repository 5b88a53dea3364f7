package driver

import (
	"github.com/faultline-k8s/faultline/fakes/lib/textcap"

	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
)

// ErrUnknownDevice is returned for a device name this node does not publish.
var ErrUnknownDevice = errors.New("unknown device")

// ErrInvalidEffect is returned for a taint effect other than NoExecute,
// NoSchedule or None.
var ErrInvalidEffect = errors.New("invalid taint effect")

// maxFailMessage bounds the message of POST /devices/fail: the kubelet
// truncates health messages at 1024 bytes and a condition message may hold
// 32768; the message also goes into error strings.
const maxFailMessage = 512

// checkDevice is nil when a node with count devices publishes device.
func checkDevice(device string, count int) error {
	for i := range count {
		if DeviceName(i) == device {
			return nil
		}
	}
	if device == "" {
		return fmt.Errorf("%w: no device given, want device=dev-N, N in 0..%d", ErrUnknownDevice, count-1)
	}
	return fmt.Errorf("%w %s: this node publishes dev-0 .. dev-%d", ErrUnknownDevice, quoteCut(device, 64), count-1)
}

// checkEffect applies the default effect (NoExecute) and rejects unknown ones.
func checkEffect(effect faultspec.TaintEffect) (faultspec.TaintEffect, error) {
	switch effect {
	case "":
		return faultspec.TaintNoExecute, nil
	case faultspec.TaintNoExecute, faultspec.TaintNoSchedule, faultspec.TaintNone:
		return effect, nil
	}
	return "", fmt.Errorf("%w %s: want NoExecute, NoSchedule or None", ErrInvalidEffect, quoteCut(string(effect), 64))
}

// failMessage is the message of a run-time failure: valid UTF-8 within
// maxFailMessage, or the default.
func failMessage(message string) string {
	if message == "" {
		return "device failed (injected through POST /devices/fail)"
	}
	return textcap.Cut(message, maxFailMessage)
}

// ClaimRef names a claim the device was prepared for.
type ClaimRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

func (c ClaimRef) String() string { return fmt.Sprintf("%s/%s (uid %s)", c.Namespace, c.Name, c.UID) }

// FailDevice breaks a device of this node at run time, the way hardware
// fails while a workload uses it (POST /devices/fail). Unlike a FaultSpec
// failure it is not tied to a claim: it lasts until RepairDevice or
// RepairAll. It
//
//   - writes the condition Ready=False, reason DeviceFailed, into
//     status.devices of every claim the device is prepared for right now
//     (first, so that the condition is there before a NoExecute taint
//     gets the pod evicted and its claim deleted);
//   - taints the device in the ResourceSlice (key TaintKey, value
//     TaintValueHTTP, the given effect, default NoExecute);
//   - reports it UNHEALTHY with message in the health stream;
//   - fails every later prepare of a claim that was allocated the device
//     with permanent/DeviceFailed.
//
// It returns the claims the device was prepared for.
func (d *Driver) FailDevice(ctx context.Context, device string, effect faultspec.TaintEffect, message string) ([]ClaimRef, error) {
	if err := checkDevice(device, d.devices.count); err != nil {
		return nil, err
	}
	effect, err := checkEffect(effect)
	if err != nil {
		return nil, err
	}
	message = failMessage(message)

	holders := d.preparedFor(device)
	f := failure{Trigger: TriggerHTTP, Effect: effect, Message: message, Since: time.Now()}
	if len(holders) > 0 {
		f.ClaimNamespace, f.ClaimName, f.ClaimUID = holders[0].Namespace, holders[0].Name, holders[0].UID
	}
	logger := klog.FromContext(ctx)
	if d.cfg.ClaimStatus {
		for _, c := range holders {
			cond := metav1.Condition{
				Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonDeviceFailed,
				Message: "device failed while in use: " + message,
			}
			if err := d.setDeviceCondition(ctx, c, device, cond); err != nil {
				logger.Error(err, "Writing DeviceFailed condition failed", "device", device, "claim", klog.KRef(c.Namespace, c.Name), "claimUID", c.UID)
			}
		}
	}
	if err := d.devices.setFailed(ctx, device, f); err != nil {
		return holders, fmt.Errorf("publish taint of %s: %w", device, err)
	}
	kv := []any{"device", device, "effect", effect, "message", message}
	for _, c := range holders {
		kv = append(kv, "claimUID", c.UID)
	}
	logger.Info("Device failed through HTTP", kv...)
	return holders, nil
}

// RepairDevice clears the failure of one device, whatever triggered it
// (POST /devices/repair), and sets the Ready condition of the claims it is
// still prepared for back to True. repaired is false when the device was
// not failed.
func (d *Driver) RepairDevice(ctx context.Context, device string) (repaired bool, err error) {
	if err := checkDevice(device, d.devices.count); err != nil {
		return false, err
	}
	names, err := d.devices.clear(ctx, func(name string, _ failure) bool { return name == device })
	if len(names) == 0 {
		return false, err
	}
	logger := klog.FromContext(ctx)
	if d.cfg.ClaimStatus {
		for _, c := range d.preparedFor(device) {
			cond := metav1.Condition{
				Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonPrepared,
				Message: "prepared by " + d.cfg.DriverName + "; device repaired",
			}
			if err := d.setDeviceCondition(ctx, c, device, cond); err != nil {
				logger.Error(err, "Writing repaired condition failed", "device", device, "claim", klog.KRef(c.Namespace, c.Name), "claimUID", c.UID)
			}
		}
	}
	logger.Info("Device repaired through HTTP", "device", device)
	return true, err
}

// preparedFor returns the claims that device is prepared for right now.
func (d *Driver) preparedFor(device string) []ClaimRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []ClaimRef
	for uid, st := range d.claims {
		if !st.prepared {
			continue
		}
		if slices.ContainsFunc(st.devices, func(dev kubeletplugin.Device) bool {
			return dev.PoolName == d.devices.pool && dev.DeviceName == device
		}) {
			out = append(out, ClaimRef{Namespace: st.namespace, Name: st.name, UID: string(uid)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out
}

// brokenDeviceFailures fails the targets whose device was broken through
// POST /devices/fail: a broken device cannot be prepared. (A device broken
// by another claim's FaultSpec is not: that fault is scoped to its claim.)
func (d *Driver) brokenDeviceFailures(targets []target) []deviceFailure {
	var out []deviceFailure
	for _, t := range targets {
		if t.Pool != d.devices.pool {
			continue
		}
		f, ok := d.devices.failureOf(t.Device.Device)
		if !ok || f.Trigger != TriggerHTTP {
			continue
		}
		out = append(out, deviceFailure{
			Device: t.Device,
			class:  classPermanent,
			reason: faultspec.DeviceFailed,
			effect: f.Effect,
			label:  "permanent/" + string(faultspec.DeviceFailed),
			detail: fmt.Sprintf("device failed at %s, tainted %s=%s:%s: %s", f.Since.UTC().Format(time.RFC3339), TaintKey, TaintValueHTTP, f.Effect, f.Message),
		})
	}
	return out
}

// setDeviceCondition sets one condition of one of our devices in a claim's
// status.devices, leaving everything else as it is.
func (d *Driver) setDeviceCondition(ctx context.Context, ref ClaimRef, device string, cond metav1.Condition) error {
	ctx, cancel := context.WithTimeout(ctx, sideEffectTimeout)
	defer cancel()
	client := d.cfg.KubeClient.ResourceV1().ResourceClaims(ref.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		claim, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if claim.UID != types.UID(ref.UID) || claim.Status.Allocation == nil {
			return errors.New("claim was replaced or deallocated")
		}
		cond.ObservedGeneration = claim.Generation
		found := false
		for i := range claim.Status.Devices {
			dev := &claim.Status.Devices[i]
			if dev.Driver == d.cfg.DriverName && dev.Pool == d.devices.pool && dev.Device == device {
				apimeta.SetStatusCondition(&dev.Conditions, cond)
				found = true
			}
		}
		if !found {
			dev := resourceapi.AllocatedDeviceStatus{Driver: d.cfg.DriverName, Pool: d.devices.pool, Device: device}
			apimeta.SetStatusCondition(&dev.Conditions, cond)
			claim.Status.Devices = append(claim.Status.Devices, dev)
		}
		_, err = client.UpdateStatus(ctx, claim, metav1.UpdateOptions{FieldManager: d.cfg.DriverName})
		return err
	})
	if err != nil {
		return err
	}
	// The next prepare must write its own view again, even if it equals
	// the one written before this change.
	d.mu.Lock()
	if st := d.claims[types.UID(ref.UID)]; st != nil {
		st.lastStatus = ""
	}
	d.mu.Unlock()
	return nil
}
