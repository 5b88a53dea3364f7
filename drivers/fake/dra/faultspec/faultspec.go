// Package faultspec defines the FaultSpec that a ResourceClaim carries in its
// opaque driver config to tell the fake DRA driver which failures to inject,
// and parses it strictly: a typo in a fault spec must fail loudly instead of
// silently injecting nothing.
package faultspec

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/json"
)

const (
	// APIVersion and Kind identify a FaultSpec inside opaque parameters.
	APIVersion = "faultline.k8s.io/v1alpha1"
	Kind       = "FaultSpec"
)

// FaultSpec is the JSON object in ResourceClaim
// spec.devices.config[].opaque.parameters for our driver.
type FaultSpec struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Prepare faults apply to NodePrepareResources calls.
	Prepare []Fault `json:"prepare,omitempty"`
	// Unprepare faults apply to NodeUnprepareResources calls.
	Unprepare []Fault `json:"unprepare,omitempty"`
}

// Type says how a fault behaves.
type Type string

const (
	// Transient fails the first Count calls, then lets calls succeed.
	Transient Type = "Transient"
	// Permanent fails every call and classifies the failure as permanent.
	Permanent Type = "Permanent"
	// Unclassified fails without saying whether retrying helps; Count limits
	// it to the first Count calls (0 or absent: every call).
	Unclassified Type = "Unclassified"
	// Stall blocks the call for Duration (or until the caller gives up);
	// Count limits it to the first Count calls (0 or absent: every call).
	// A call that survives the stall continues with the other faults.
	Stall Type = "Stall"
)

// Reason sub-classifies a permanent failure (asked for in the KEP-5322 review).
type Reason string

const (
	// BadConfiguration: the claim asks for something the driver can never do.
	BadConfiguration Reason = "BadConfiguration"
	// DeviceFailed: the hardware is broken; the device gets tainted and
	// reported unhealthy.
	DeviceFailed Reason = "DeviceFailed"
)

// TaintEffect is the effect of the taint put on a DeviceFailed device.
// The values are those of resource.k8s.io/v1 DeviceTaintEffect.
type TaintEffect string

const (
	TaintNoExecute  TaintEffect = "NoExecute"
	TaintNoSchedule TaintEffect = "NoSchedule"
	TaintNone       TaintEffect = "None"
)

// Fault is one injected failure.
type Fault struct {
	Type Type `json:"type"`
	// Devices limits the fault to these device names (e.g. dev-1). Empty:
	// every device of the requests the config entry is scoped to.
	Devices []string `json:"devices,omitempty"`
	// Count: Transient: how many calls fail (required, >= 1). Stall and
	// Unclassified: only the first Count calls (0: every call). Not allowed
	// for Permanent, which fails every call.
	Count *int `json:"count,omitempty"`
	// Reason is required for Permanent and not allowed otherwise.
	Reason Reason `json:"reason,omitempty"`
	// TaintEffect is for Permanent/DeviceFailed only; default NoExecute.
	TaintEffect TaintEffect `json:"taintEffect,omitempty"`
	// Duration is required for Stall: a Go duration such as "60s".
	Duration string `json:"duration,omitempty"`
	// Message is appended to the error text, to tell specs apart.
	Message string `json:"message,omitempty"`
}

// StallDuration returns the parsed Duration; only valid after Parse.
func (f Fault) StallDuration() time.Duration {
	d, _ := time.ParseDuration(f.Duration)
	return d
}

// CountOrZero returns Count, or 0 when absent.
func (f Fault) CountOrZero() int {
	if f.Count == nil {
		return 0
	}
	return *f.Count
}

// Effect returns the taint effect with its default applied.
func (f Fault) Effect() TaintEffect {
	if f.TaintEffect == "" {
		return TaintNoExecute
	}
	return f.TaintEffect
}

// InvalidError lists every problem found in one fault spec. Each problem
// starts with the JSON path of the offending field.
type InvalidError struct {
	Problems []string
}

func (e *InvalidError) Error() string {
	return "invalid " + Kind + ": " + strings.Join(e.Problems, "; ")
}

// IsInvalid reports whether err came from a spec that failed to parse or
// validate, which the driver turns into permanent/BadConfiguration.
func IsInvalid(err error) bool {
	var inv *InvalidError
	return errors.As(err, &inv)
}

// Parse decodes raw (JSON, as the API server stores opaque parameters)
// strictly, rejecting unknown and duplicate fields, and validates it.
func Parse(raw []byte) (*FaultSpec, error) {
	if len(raw) == 0 {
		return nil, &InvalidError{Problems: []string{"parameters: empty, want a " + Kind + " object"}}
	}
	var spec FaultSpec
	strictErrs, err := json.UnmarshalStrict(raw, &spec)
	if err != nil {
		return nil, &InvalidError{Problems: []string{"parameters: " + err.Error()}}
	}
	var problems []string
	for _, e := range strictErrs {
		problems = append(problems, e.Error())
	}
	problems = append(problems, spec.validate()...)
	if len(problems) > 0 {
		return nil, &InvalidError{Problems: problems}
	}
	return &spec, nil
}

func (s *FaultSpec) validate() []string {
	var problems []string
	if s.APIVersion != APIVersion {
		problems = append(problems, fmt.Sprintf("apiVersion: %q is not supported, want %q", s.APIVersion, APIVersion))
	}
	if s.Kind != Kind {
		problems = append(problems, fmt.Sprintf("kind: %q is not supported, want %q", s.Kind, Kind))
	}
	for i, f := range s.Prepare {
		problems = append(problems, f.validate(fmt.Sprintf("prepare[%d]", i))...)
	}
	for i, f := range s.Unprepare {
		problems = append(problems, f.validate(fmt.Sprintf("unprepare[%d]", i))...)
	}
	return problems
}

func (f Fault) validate(path string) []string {
	var problems []string
	add := func(field, format string, args ...any) {
		problems = append(problems, path+"."+field+": "+fmt.Sprintf(format, args...))
	}

	switch f.Type {
	case Transient, Permanent, Unclassified, Stall:
	case "":
		add("type", "required, one of Transient, Permanent, Unclassified, Stall")
	default:
		add("type", "unknown fault type %q, want one of Transient, Permanent, Unclassified, Stall", f.Type)
	}

	if f.Count != nil && *f.Count < 0 {
		add("count", "must not be negative, got %d", *f.Count)
	}
	switch f.Type {
	case Transient:
		if f.Count == nil || *f.Count == 0 {
			add("count", "required for Transient: how many calls fail before one succeeds (>= 1)")
		}
	case Permanent:
		if f.Count != nil {
			add("count", "not allowed for Permanent, which fails every call")
		}
	}

	switch f.Reason {
	case "":
		if f.Type == Permanent {
			add("reason", "required for Permanent, one of BadConfiguration, DeviceFailed")
		}
	case BadConfiguration, DeviceFailed:
		if f.Type != Permanent {
			add("reason", "only allowed for Permanent, got type %q", f.Type)
		}
	default:
		add("reason", "unknown classification %q, want BadConfiguration or DeviceFailed", f.Reason)
	}

	switch f.TaintEffect {
	case "":
	case TaintNoExecute, TaintNoSchedule, TaintNone:
		if f.Type != Permanent || f.Reason != DeviceFailed {
			add("taintEffect", "only allowed for Permanent with reason DeviceFailed")
		}
	default:
		add("taintEffect", "unknown effect %q, want NoExecute, NoSchedule or None", f.TaintEffect)
	}

	if f.Duration != "" {
		d, err := time.ParseDuration(f.Duration)
		switch {
		case err != nil:
			add("duration", "invalid duration %q: want a Go duration such as \"60s\"", f.Duration)
		case d <= 0:
			add("duration", "must be positive, got %q", f.Duration)
		case f.Type != Stall:
			add("duration", "only allowed for Stall")
		}
	} else if f.Type == Stall {
		add("duration", "required for Stall, e.g. \"60s\"")
	}

	for i, name := range f.Devices {
		if strings.TrimSpace(name) == "" {
			add(fmt.Sprintf("devices[%d]", i), "must not be empty")
		}
	}
	return problems
}
