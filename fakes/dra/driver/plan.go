package driver

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
)

// plan is, for one claim, each device allocated by this driver with the
// faults that apply to it. It is derived from the allocation (not the spec)
// because status.allocation.devices.config is what was in force when the
// scheduler allocated: the claim's config plus its DeviceClass's config.
type plan struct {
	targets  []target
	warnings []string
	// health are the health faults of config entries whose scope covers
	// at least one of the claim's devices of this driver.
	health []faultspec.HealthFault
	// service are the service faults of such config entries.
	service []faultspec.ServiceFault
}

type target struct {
	calls.Device
	prepare   []faultspec.Fault
	unprepare []faultspec.Fault
	// badConfig is set when a FaultSpec scoped to this device is invalid;
	// every prepare then fails permanent/BadConfiguration with this text.
	badConfig string
	// cdi is set when a FaultSpec scoped to this device asks for a CDI
	// device (cdi.go); several entries merge (a hook if any asks).
	cdi *faultspec.CDI
}

func (p *plan) devices() []calls.Device {
	out := make([]calls.Device, 0, len(p.targets))
	for _, t := range p.targets {
		out = append(out, t.Device)
	}
	return out
}

// planFor resolves the claim's FaultSpecs onto its allocated devices. The
// FaultSpecs only act in namespaces the fault scope gate allows (faultline's
// own); in any other namespace the claim gets its devices without faults,
// whatever its config says (valid or not), and a warning says why.
func (d *Driver) planFor(ctx context.Context, claim *resourceapi.ResourceClaim) *plan {
	p := &plan{}
	for _, r := range d.ourResults(claim) {
		p.targets = append(p.targets, target{Device: calls.Device{Pool: r.Pool, Device: r.Device, Request: r.Request}})
	}
	if claim.Status.Allocation == nil {
		return p
	}
	configs := claim.Status.Allocation.Devices.Config
	ours := slices.ContainsFunc(configs, func(cfg resourceapi.DeviceAllocationConfiguration) bool {
		return cfg.Opaque != nil && cfg.Opaque.Driver == d.cfg.DriverName
	})
	if !ours {
		// Nothing to inject: no need to ask the gate (and the API server).
		return p
	}
	// Asked for every claim with a config of ours, whatever its source: a
	// DeviceClass's config acts in every namespace that uses the class.
	if allowed, reason := d.cfg.Gate.Allows(ctx, claim.Namespace); !allowed {
		klog.FromContext(ctx).Info("Ignoring FaultSpec: faults only act in faultline's namespaces, the claim gets none",
			"claim", klog.KObj(claim), "claimUID", claim.UID, "namespace", claim.Namespace, "reason", reason)
		p.warnings = append(p.warnings, "FaultSpec ignored, faults only act in faultline's namespaces: "+reason)
		return p
	}
	for i, cfg := range configs {
		if cfg.Opaque == nil || cfg.Opaque.Driver != d.cfg.DriverName {
			continue
		}
		where := fmt.Sprintf("config[%d] (%s)", i, cfg.Source)
		inScope := func(t target) bool { return requestInScope(t.Request, cfg.Requests) }
		spec, err := faultspec.Parse(cfg.Opaque.Parameters.Raw)
		if err == nil {
			// A fault naming a device it cannot apply to would test nothing.
			var valid []string
			for _, t := range p.targets {
				if inScope(t) {
					valid = append(valid, t.Device.Device)
				}
			}
			slices.Sort(valid)
			err = spec.CheckDevices(slices.Compact(valid), "requests "+scopeText(cfg.Requests))
		}
		if err != nil {
			for j := range p.targets {
				if inScope(p.targets[j]) {
					p.targets[j].badConfig = where + ": " + err.Error()
				}
			}
			p.warnings = append(p.warnings, where+" is invalid: prepare fails permanent/BadConfiguration, unprepare runs without its faults: "+err.Error())
			continue
		}
		apply := func(faults []faultspec.Fault, add func(*target, faultspec.Fault)) {
			for _, f := range faults {
				for j := range p.targets {
					t := &p.targets[j]
					if !inScope(*t) {
						continue
					}
					if len(f.Devices) > 0 && !slices.Contains(f.Devices, t.Device.Device) {
						continue
					}
					add(t, f)
				}
			}
		}
		apply(spec.Prepare, func(t *target, f faultspec.Fault) { t.prepare = append(t.prepare, f) })
		apply(spec.Unprepare, func(t *target, f faultspec.Fault) { t.unprepare = append(t.unprepare, f) })
		if slices.ContainsFunc(p.targets, inScope) {
			p.health = append(p.health, spec.Health...)
			p.service = append(p.service, spec.Service...)
		}
		if spec.CDI != nil {
			for j := range p.targets {
				if t := &p.targets[j]; inScope(*t) {
					t.cdi = &faultspec.CDI{Hook: spec.CDI.Hook || (t.cdi != nil && t.cdi.Hook)}
				}
			}
		}
	}
	return p
}

// requestInScope implements the DeviceConfiguration scoping rule: no
// requests means all; a main request name also covers its subrequests.
func requestInScope(request string, scope []string) bool {
	if len(scope) == 0 {
		return true
	}
	return slices.Contains(scope, request) || slices.Contains(scope, resourceclaim.BaseRequestRef(request))
}

func scopeText(scope []string) string {
	if len(scope) == 0 {
		return "(all)"
	}
	return strings.Join(scope, ",")
}

// class is how a failure is classified.
type class int

const (
	classUnclassified class = iota
	classTransient
	classPermanent
)

// deviceFailure is one fault that fired for one device in one call.
type deviceFailure struct {
	calls.Device
	class  class
	reason faultspec.Reason      // permanent only
	effect faultspec.TaintEffect // DeviceFailed only
	label  string                // e.g. "transient (failing attempt 2 of 3)"
	detail string
}

// stallFor returns how long this call must stall and which devices asked
// for it.
func stallFor(targets []target, faultsOf func(target) []faultspec.Fault, attempt int) (time.Duration, []calls.Device) {
	var longest time.Duration
	var who []calls.Device
	for _, t := range targets {
		for _, f := range faultsOf(t) {
			if f.Type != faultspec.Stall || !firesOn(f, attempt) {
				continue
			}
			who = append(who, t.Device)
			longest = max(longest, f.StallDuration())
		}
	}
	return longest, who
}

// firesOn applies Count: 0 means every attempt, N the first N attempts.
func firesOn(f faultspec.Fault, attempt int) bool {
	n := f.CountOrZero()
	return n == 0 || attempt <= n
}

// omits reports whether an Omit fault of any target leaves the claim out
// of the response to attempt.
func omits(targets []target, attempt int) bool {
	for _, t := range targets {
		for _, f := range t.prepare {
			if f.Type == faultspec.Omit && attempt <= f.CountOrZero() {
				return true
			}
		}
	}
	return false
}

// failuresFor evaluates the non-stall faults of every target for attempt.
func failuresFor(targets []target, faultsOf func(target) []faultspec.Fault, attempt int, withBadConfig bool) []deviceFailure {
	var out []deviceFailure
	for _, t := range targets {
		if withBadConfig && t.badConfig != "" {
			out = append(out, deviceFailure{
				Device: t.Device, class: classPermanent, reason: faultspec.BadConfiguration,
				label:  "permanent/" + string(faultspec.BadConfiguration),
				detail: t.badConfig,
			})
		}
		for _, f := range faultsOf(t) {
			df := deviceFailure{Device: t.Device, detail: "injected fault"}
			switch f.Type {
			case faultspec.Permanent:
				df.class, df.reason = classPermanent, f.Reason
				df.label = "permanent/" + string(f.Reason)
				if f.Reason == faultspec.DeviceFailed {
					df.effect = f.Effect()
					df.detail = fmt.Sprintf("injected device failure, device tainted %s=<claim uid>:%s", TaintKey, df.effect)
				}
			case faultspec.Transient:
				if attempt > f.CountOrZero() {
					continue
				}
				df.class = classTransient
				df.label = fmt.Sprintf("transient (failing attempt %d of %d)", attempt, f.CountOrZero())
			case faultspec.Unclassified:
				if !firesOn(f, attempt) {
					continue
				}
				df.class, df.label = classUnclassified, "unclassified"
			default:
				continue
			}
			if f.Message != "" {
				df.detail += ": " + f.Message
			}
			out = append(out, df)
		}
	}
	return out
}

// overall classifies a whole claim: permanent wins over transient, which
// wins over unclassified; several permanent reasons are joined with "+".
func overall(failures []deviceFailure) (label string, permanent bool) {
	reasons := map[string]bool{}
	worst := classUnclassified
	for _, f := range failures {
		worst = max(worst, f.class)
		if f.class == classPermanent {
			reasons[string(f.reason)] = true
		}
	}
	switch worst {
	case classPermanent:
		names := make([]string, 0, len(reasons))
		for r := range reasons {
			names = append(names, r)
		}
		sort.Strings(names)
		return "permanent/" + strings.Join(names, "+"), true
	case classTransient:
		return "transient", false
	default:
		return "unclassified", false
	}
}

// newCallRecord starts the call record of one claim in a prepare or unprepare
// call; stalled is how long the call stalled when a fault asked for longest.
func newCallRecord(method calls.Method, namespace, name string, uid types.UID, attempt, request int, p *plan, longest, stalled time.Duration) calls.Call {
	rec := calls.Call{
		Time:           time.Now(),
		Method:         method,
		ClaimNamespace: namespace,
		ClaimName:      name,
		ClaimUID:       string(uid),
		Attempt:        attempt,
		Request:        request,
		Devices:        p.devices(),
		Warnings:       p.warnings,
	}
	if longest > 0 {
		rec.Stalled = stalled.Round(time.Millisecond).String()
	}
	return rec
}
