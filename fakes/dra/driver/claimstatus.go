package driver

import (
	"context"
	"fmt"
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
)

// maxConditionMessage is the API's limit of a condition message.
const maxConditionMessage = 32768

// ConditionReady is the per-device condition the driver maintains in
// ResourceClaim status.devices[].conditions.
const ConditionReady = "Ready"

// Reasons of the Ready condition.
const (
	ReasonPrepared          = "Prepared"
	ReasonDeviceFailed      = string(faultspec.DeviceFailed)     // permanent
	ReasonBadConfiguration  = string(faultspec.BadConfiguration) // permanent
	ReasonTransientFailure  = "TransientFailure"
	ReasonUnclassified      = "UnclassifiedFailure"
	ReasonOtherDeviceFailed = "OtherDeviceFailed" // healthy, but the claim failed
)

// writeClaimStatus mirrors the outcome of a prepare call into
// status.devices, one Ready condition per device of this driver. Writing
// needs the DRAResourceClaimDeviceStatus feature (on by default since 1.33)
// and, with DRAResourceClaimGranularStatusAuthorization (beta in 1.36),
// the "associated-node:update" verb on resourceclaims/driver. Failures are
// only logged: status is a secondary channel and must not change the
// result the kubelet gets.
func (d *Driver) writeClaimStatus(ctx context.Context, claim *resourceapi.ResourceClaim, st *claimState, p *plan, failures []deviceFailure) {
	if len(p.targets) == 0 {
		return
	}
	conds := make(map[string]metav1.Condition, len(p.targets))
	for _, t := range p.targets {
		conds[t.Pool+"/"+t.Device.Device] = metav1.Condition{
			Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonPrepared,
			Message:            "prepared by " + d.cfg.DriverName,
			ObservedGeneration: claim.Generation,
		}
	}
	if len(failures) > 0 {
		msgs := map[string][]string{}
		reasons := map[string]string{}
		for _, f := range failures {
			key := f.Pool + "/" + f.Device.Device
			msgs[key] = append(msgs[key], f.label+": "+f.detail)
			if r := reasonOf(f); reasons[key] == "" || rank(r) > rank(reasons[key]) {
				reasons[key] = r
			}
		}
		for key := range conds {
			c := conds[key]
			c.Status = metav1.ConditionFalse
			if r, ok := reasons[key]; ok {
				c.Reason, c.Message = r, protoString(strings.Join(msgs[key], "; "), maxConditionMessage)
			} else {
				c.Reason, c.Message = ReasonOtherDeviceFailed, "device is fine, another device of the claim failed"
			}
			conds[key] = c
		}
	}

	fingerprint := conditionsFingerprint(conds)
	d.mu.Lock()
	unchanged := st.lastStatus == fingerprint
	d.mu.Unlock()
	if unchanged {
		return
	}

	client := d.cfg.KubeClient.ResourceV1().ResourceClaims(claim.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := client.Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if current.UID != claim.UID || current.Status.Allocation == nil {
			return fmt.Errorf("claim was replaced or deallocated")
		}
		var devices []resourceapi.AllocatedDeviceStatus
		seen := map[string]bool{}
		for _, dev := range current.Status.Devices {
			key := dev.Pool + "/" + dev.Device
			c, ours := conds[key]
			if dev.Driver != d.cfg.DriverName || !ours {
				devices = append(devices, dev)
				continue
			}
			apimeta.SetStatusCondition(&dev.Conditions, c)
			devices = append(devices, dev)
			seen[key] = true
		}
		for _, t := range p.targets {
			key := t.Pool + "/" + t.Device.Device
			if seen[key] {
				continue
			}
			dev := resourceapi.AllocatedDeviceStatus{Driver: d.cfg.DriverName, Pool: t.Pool, Device: t.Device.Device}
			apimeta.SetStatusCondition(&dev.Conditions, conds[key])
			devices = append(devices, dev)
			seen[key] = true
		}
		current.Status.Devices = devices
		_, err = client.UpdateStatus(ctx, current, metav1.UpdateOptions{FieldManager: d.cfg.DriverName})
		return err
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Writing ResourceClaim status.devices failed", "claim", klog.KObj(claim), "claimUID", claim.UID)
		return
	}
	d.mu.Lock()
	st.lastStatus = fingerprint
	d.mu.Unlock()
}

func reasonOf(f deviceFailure) string {
	switch f.class {
	case classPermanent:
		return string(f.reason)
	case classTransient:
		return ReasonTransientFailure
	default:
		return ReasonUnclassified
	}
}

// rank picks the reason shown when several faults hit one device.
func rank(reason string) int {
	switch reason {
	case ReasonDeviceFailed:
		return 4
	case ReasonBadConfiguration:
		return 3
	case ReasonTransientFailure:
		return 2
	case ReasonUnclassified:
		return 1
	}
	return 0
}

func conditionsFingerprint(conds map[string]metav1.Condition) string {
	keys := make([]string, 0, len(conds))
	for k := range conds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		c := conds[k]
		fmt.Fprintf(&b, "%s|%s|%s|%s\n", k, c.Status, c.Reason, c.Message)
	}
	return b.String()
}
