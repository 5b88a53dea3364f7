package driver

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
)

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin. The kubelet
// only passes UID, namespace and name; devices and faults come from the
// plan cached at prepare time or, after a driver restart, from the claim
// if it still exists.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	type work struct {
		ref     kubeletplugin.NamespacedObject
		st      *claimState
		attempt int
		plan    *plan
		stalled []calls.Device
		end     func(calls.Call)
	}
	works := make([]*work, 0, len(claims))
	d.mu.Lock()
	d.requests++
	request := d.requests
	for _, ref := range claims {
		st := d.state(ref.UID, ref.Namespace, ref.Name)
		st.attempts[calls.Unprepare]++
		works = append(works, &work{ref: ref, st: st, attempt: st.attempts[calls.Unprepare], plan: st.plan})
	}
	d.mu.Unlock()
	for _, w := range works {
		w.end = d.begin(calls.Unprepare, w.ref.Namespace, w.ref.Name, w.ref.UID, w.attempt, request)
	}

	for _, w := range works {
		if w.plan == nil {
			w.plan = d.planFromAPI(ctx, w.ref)
		}
	}

	var longest time.Duration
	for _, w := range works {
		var dur time.Duration
		dur, w.stalled = stallFor(w.plan.targets, unprepareFaults, w.attempt)
		longest = max(longest, dur)
	}
	stalled, interrupted := stall(ctx, longest)

	sideCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sideEffectTimeout)
	defer cancel()
	results := make(map[types.UID]error, len(works))
	for _, w := range works {
		rec := newCallRecord(calls.Unprepare, w.ref.Namespace, w.ref.Name, w.ref.UID, w.attempt, request, w.plan, longest, stalled)
		// An invalid spec only fails prepare: failing unprepare too would
		// leave the pod stuck in Terminating for ever.
		failures := failuresFor(w.plan.targets, unprepareFaults, w.attempt, false)
		if interrupted && len(w.stalled) > 0 {
			failures = append(failures, stallFailures(ctx, w.stalled, stalled, longest)...)
		}
		if len(failures) > 0 {
			text := d.errorText(calls.Unprepare, w.ref.Namespace, w.ref.Name, string(w.ref.UID), w.attempt, len(w.plan.targets), failures)
			label, permanent := overall(failures)
			// No wire channel here: the KEP-5322 draft only extends
			// NodePrepareResourceResponse.
			d.breakDevices(sideCtx, w.ref.Namespace, w.ref.Name, w.ref.UID, failures)
			results[w.ref.UID] = errors.New(text)
			rec.Outcome, rec.Classification, rec.Permanent, rec.Error = calls.Failed, label, permanent, text
		} else {
			rec.Outcome = calls.NotPrepared
			if d.markUnprepared(w.st) {
				rec.Outcome = calls.Unprepared
			}
			d.removeCDISpec(ctx, w.ref.UID)
			results[w.ref.UID] = nil
		}
		d.record(ctx, rec, w.end)
	}
	return results, nil
}

func (d *Driver) markUnprepared(st *claimState) (wasPrepared bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	wasPrepared = st.prepared
	st.prepared, st.devices = false, nil
	return wasPrepared
}

// planFromAPI recovers the plan of a claim this process never prepared
// (e.g. after a restart). Without the claim there is nothing to inject.
func (d *Driver) planFromAPI(ctx context.Context, ref kubeletplugin.NamespacedObject) *plan {
	claim, err := d.cfg.KubeClient.ResourceV1().ResourceClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil || claim.UID != ref.UID {
		klog.FromContext(ctx).V(2).Info("Claim unknown and not retrievable, unprepare without faults", "claim", klog.KRef(ref.Namespace, ref.Name), "claimUID", ref.UID, "err", err)
		return &plan{}
	}
	p := d.planFor(ctx, claim)
	d.mu.Lock()
	defer d.mu.Unlock()
	if st := d.claims[ref.UID]; st != nil && st.plan == nil {
		st.plan = p
	}
	return p
}
