package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/dra/errortype"
	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
)

// sideEffectTimeout bounds API writes (taints, claim status) done on behalf
// of one call; they must not eat the kubelet's 45s call deadline.
const sideEffectTimeout = 5 * time.Second

func prepareFaults(t target) []faultspec.Fault   { return t.prepare }
func unprepareFaults(t target) []faultspec.Fault { return t.unprepare }

// PrepareResourceClaims implements kubeletplugin.DRAPlugin. The kubelet
// batches all claims of a pod for this driver into one call; each claim gets
// its own result and its own call record. A claim an Omit fault leaves out
// gets no result: kubeletplugin (v0.36.3, NodePrepareResources) copies the
// result map into the gRPC response as it is, adding nothing for a claim
// that is missing.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	type work struct {
		claim   *resourceapi.ResourceClaim
		st      *claimState
		attempt int
		plan    *plan
		stalled []calls.Device
		end     func(calls.Call)
	}
	// Plans first, without d.mu: the fault scope gate may ask the API
	// server about a claim's namespace.
	plans := make([]*plan, len(claims))
	for i, claim := range claims {
		plans[i] = d.planFor(ctx, claim)
	}
	works := make([]*work, 0, len(claims))
	d.mu.Lock()
	d.requests++
	request := d.requests
	for i, claim := range claims {
		st := d.state(claim.UID, claim.Namespace, claim.Name)
		st.attempts[calls.Prepare]++
		st.plan = plans[i]
		works = append(works, &work{claim: claim, st: st, attempt: st.attempts[calls.Prepare], plan: st.plan})
	}
	d.mu.Unlock()
	for _, w := range works {
		w.end = d.begin(calls.Prepare, w.claim.Namespace, w.claim.Name, w.claim.UID, w.attempt, request)
	}

	// Service faults fire at a claim's first prepare, before anything
	// else: the call is left unanswered, for every claim in it.
	for _, w := range works {
		if w.attempt != 1 || len(w.plan.service) == 0 {
			continue
		}
		text, fired := d.unresponsive(ctx, w.claim.Namespace, w.claim.Name, w.claim.UID, w.plan.service)
		if !fired {
			break
		}
		for _, w := range works {
			rec := newCallRecord(calls.Prepare, w.claim.Namespace, w.claim.Name, w.claim.UID, w.attempt, request, w.plan, 0, 0)
			rec.Outcome, rec.Classification, rec.Error = calls.Failed, "unanswered", text
			d.record(ctx, rec, w.end)
		}
		return nil, status.Error(codes.Unavailable, "faultline: "+text)
	}

	// One gRPC call stalls as a whole, for the longest stall any claim in
	// it asked for: that is what the kubelet experiences.
	var longest time.Duration
	for _, w := range works {
		var dur time.Duration
		dur, w.stalled = stallFor(w.plan.targets, prepareFaults, w.attempt)
		longest = max(longest, dur)
	}
	stalled, interrupted := stall(ctx, longest)

	sideCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sideEffectTimeout)
	defer cancel()
	results := make(map[types.UID]kubeletplugin.PrepareResult, len(works))
	for _, w := range works {
		rec := newCallRecord(calls.Prepare, w.claim.Namespace, w.claim.Name, w.claim.UID, w.attempt, request, w.plan, longest, stalled)
		if omits(w.plan.targets, w.attempt) {
			// No result at all for the claim: the kubelet takes in the
			// other claims' results and fails the attempt. Nothing is
			// prepared, written or published for it.
			rec.Outcome = calls.Omitted
			d.record(ctx, rec, w.end)
			continue
		}
		failures := failuresFor(w.plan.targets, prepareFaults, w.attempt, true)
		failures = append(failures, d.brokenDeviceFailures(w.plan.targets)...)
		if interrupted && len(w.stalled) > 0 {
			failures = append(failures, stallFailures(ctx, w.stalled, stalled, longest)...)
		}
		if len(failures) == 0 && w.plan.wantsCDI() {
			// Before the kubelet gets the CDI IDs: the runtime resolves
			// them when it creates the container.
			if err := d.writeCDISpec(w.claim.UID, w.plan); err != nil {
				failures = append(failures, cdiFailures(w.plan, err)...)
			}
		}

		if len(failures) > 0 {
			text := d.errorText(calls.Prepare, w.claim.Namespace, w.claim.Name, string(w.claim.UID), w.attempt, len(w.plan.targets), failures)
			label, permanent := overall(failures)
			if permanent {
				errortype.MarkPermanent(ctx, w.claim.UID)
			}
			d.breakDevices(sideCtx, w.claim.Namespace, w.claim.Name, w.claim.UID, failures)
			results[w.claim.UID] = kubeletplugin.PrepareResult{Err: errors.New(text)}
			rec.Outcome, rec.Classification, rec.Permanent, rec.Error = calls.Failed, label, permanent, text
		} else {
			devices, repeat := d.markPrepared(w.claim.UID, w.st, w.plan)
			results[w.claim.UID] = kubeletplugin.PrepareResult{Devices: devices}
			rec.Outcome = calls.Prepared
			if repeat {
				rec.Outcome = calls.AlreadyPrepared
			}
		}
		if d.cfg.ClaimStatus {
			d.writeClaimStatus(sideCtx, w.claim, w.st, w.plan, failures)
		}
		d.record(ctx, rec, w.end)
		// Health faults fire once, when the claim is first prepared.
		if rec.Outcome == calls.Prepared && len(w.plan.health) > 0 {
			d.dropHealthStreams(ctx, w.claim.Namespace, w.claim.Name, w.claim.UID, w.plan.health)
		}
	}
	return results, nil
}

// cdiFailures fails the devices that asked for CDI when their spec could
// not be written.
func cdiFailures(p *plan, err error) []deviceFailure {
	var out []deviceFailure
	for _, t := range p.targets {
		if t.cdi != nil {
			out = append(out, deviceFailure{Device: t.Device, class: classUnclassified, label: "cdi", detail: err.Error()})
		}
	}
	return out
}

// markPrepared makes repeated preparation idempotent: the first success
// stores the devices, later ones return exactly those. A device that asked
// for CDI carries its CDI ID (cdi.go).
func (d *Driver) markPrepared(uid types.UID, st *claimState, p *plan) (devices []kubeletplugin.Device, repeat bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st.prepared {
		return st.devices, true
	}
	devices = make([]kubeletplugin.Device, 0, len(p.targets))
	for _, t := range p.targets {
		dev := kubeletplugin.Device{
			Requests:   []string{t.Request},
			PoolName:   t.Pool,
			DeviceName: t.Device.Device,
		}
		if t.cdi != nil {
			dev.CDIDeviceIDs = []string{CDIDeviceID(d.cfg.DriverName, string(uid), t.Device.Device)}
		}
		devices = append(devices, dev)
	}
	st.prepared, st.devices = true, devices
	return devices, false
}

// stall blocks for dur or until the caller gives up (the kubelet's call
// deadline, 45s in 1.36, or a driver shutdown), whichever is first.
func stall(ctx context.Context, dur time.Duration) (stalled time.Duration, interrupted bool) {
	if dur <= 0 {
		return 0, false
	}
	start := time.Now()
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
		return dur, false
	case <-ctx.Done():
		return time.Since(start), true
	}
}

func stallFailures(ctx context.Context, who []calls.Device, stalled, planned time.Duration) []deviceFailure {
	out := make([]deviceFailure, 0, len(who))
	for _, dev := range who {
		out = append(out, deviceFailure{
			Device: dev,
			class:  classTransient,
			label:  "transient/stalled",
			detail: fmt.Sprintf("injected stall of %s interrupted after %s because the caller gave up (%v)", planned, stalled.Round(time.Millisecond), context.Cause(ctx)),
		})
	}
	return out
}

// breakDevices applies the DeviceFailed side effects: taint in the
// ResourceSlice and unhealthy in the health stream.
func (d *Driver) breakDevices(ctx context.Context, namespace, name string, uid types.UID, failures []deviceFailure) {
	for _, f := range failures {
		if f.class != classPermanent || f.reason != faultspec.DeviceFailed {
			continue
		}
		if f.Pool != d.cfg.NodeName {
			// Not a device of this node's pool; nothing to taint.
			continue
		}
		err := d.devices.markFailed(ctx, f.Device.Device, failure{
			Trigger:        TriggerFaultSpec,
			Effect:         f.effect,
			Message:        fmt.Sprintf("%s: %s (claim %s/%s uid %s)", f.label, f.detail, namespace, name, uid),
			ClaimNamespace: namespace,
			ClaimName:      name,
			ClaimUID:       string(uid),
			Since:          time.Now(),
		})
		if err != nil {
			klog.FromContext(ctx).Error(err, "Publishing taint failed", "device", f.Device.Device, "claimUID", uid)
		}
	}
}

// begin notes a call for one claim as in progress in the record (GET
// /calls: inProgress) until the returned end records its outcome.
func (d *Driver) begin(method calls.Method, namespace, name string, uid types.UID, attempt, request int) func(calls.Call) {
	return d.recorder.Begin(calls.Call{
		Time: time.Now(), Method: method, ClaimNamespace: namespace, ClaimName: name, ClaimUID: string(uid), Attempt: attempt, Request: request,
	})
}

// record stores the call in place of its in-progress entry (end, from
// begin) and logs it with the claim UID, so that a failing spec can grep
// the driver log for one object.
func (d *Driver) record(ctx context.Context, c calls.Call, end func(calls.Call)) {
	end(c)
	devs := make([]string, 0, len(c.Devices))
	for _, dev := range c.Devices {
		devs = append(devs, fmt.Sprintf("%s/%s(request %s)", dev.Pool, dev.Device, dev.Request))
	}
	kv := []any{
		"method", c.Method, "claim", klog.KRef(c.ClaimNamespace, c.ClaimName), "claimUID", c.ClaimUID,
		"attempt", c.Attempt, "request", c.Request, "devices", strings.Join(devs, ","), "outcome", c.Outcome,
	}
	if c.Stalled != "" {
		kv = append(kv, "stalled", c.Stalled)
	}
	if len(c.Warnings) > 0 {
		kv = append(kv, "warnings", c.Warnings)
	}
	logger := klog.FromContext(ctx)
	if c.Outcome == calls.Failed {
		kv = append(kv, "classification", c.Classification, "permanent", c.Permanent)
		logger.Info("DRA call failed", append(kv, "err", c.Error)...)
		return
	}
	logger.Info("DRA call succeeded", kv...)
}
