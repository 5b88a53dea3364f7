package driver

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// gcLoop repairs devices whose breaking claim is gone, so that a suite
// running many specs does not run out of devices. A failure outlives the
// pod (NoExecute evicts it at once) on purpose: the spec must still be able
// to observe taint and health afterwards; it lasts as long as its claim.
func (d *Driver) gcLoop(ctx context.Context, every time.Duration) {
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			d.RepairOrphanedDevices(ctx)
		}
	}
}

// RepairOrphanedDevices clears device failures whose claim no longer exists
// (deleted, or replaced by a claim with the same name) and returns the
// repaired device names.
func (d *Driver) RepairOrphanedDevices(ctx context.Context) []string {
	failed, _ := d.devices.failures()
	gone := map[string]bool{}
	for _, f := range failed {
		if f.Trigger != TriggerFaultSpec {
			// Broken through POST /devices/fail: stays until repaired.
			continue
		}
		claim, err := d.cfg.KubeClient.ResourceV1().ResourceClaims(f.ClaimNamespace).Get(ctx, f.ClaimName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone[f.ClaimUID] = true
		case err != nil:
			klog.FromContext(ctx).V(2).Info("Checking claim of failed device", "claim", klog.KRef(f.ClaimNamespace, f.ClaimName), "claimUID", f.ClaimUID, "err", err)
		case string(claim.UID) != f.ClaimUID:
			gone[f.ClaimUID] = true
		}
	}
	if len(gone) == 0 {
		return nil
	}
	repaired, err := d.devices.clear(ctx, func(_ string, f failure) bool { return f.Trigger == TriggerFaultSpec && gone[f.ClaimUID] })
	logger := klog.FromContext(ctx)
	if err != nil {
		logger.Error(err, "Republishing ResourceSlice after repair failed")
	}
	logger.Info("Repaired devices of deleted claims", "devices", repaired)
	return repaired
}

// RepairAll clears every injected device failure (POST /reset), whatever
// triggered it.
func (d *Driver) RepairAll(ctx context.Context) ([]string, error) {
	return d.devices.clear(ctx, func(string, failure) bool { return true })
}
