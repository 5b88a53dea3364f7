// Package faultspec defines the FaultSpec that a ResourceClaim carries in its
// opaque driver config to tell the fake DRA driver which failures to inject,
// and parses it strictly: a typo in a fault spec must fail loudly instead of
// silently injecting nothing.
package faultspec

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/json"
)

const (
	// APIVersion and Kind identify a FaultSpec inside opaque parameters.
	APIVersion = "faultline.k8s.io/v1alpha1"
	Kind       = "FaultSpec"
)

const (
	// MaxStall bounds a Stall's duration. The kubelet gives up on a call
	// after 45 s (the specs stall for at most twice that); a longer stall
	// only holds a driver goroutine, and an unbounded one is a typo.
	MaxStall = 5 * time.Minute
	// MaxCount bounds count: a fault that fires more often is as good as
	// one that never stops, which unprepare must not have.
	MaxCount = 1000
	// MaxStreamDown bounds how long a StreamDrop keeps the health stream
	// down: every pod with a device of that driver on the node shows its
	// health Unknown meanwhile.
	MaxStreamDown = 10 * time.Minute
	// MaxUnresponsive bounds how long an Unresponsive service fault keeps
	// the driver's DRA service down on a node: every claim of that driver
	// there fails to prepare meanwhile, and the kubelet removes the
	// driver's ResourceSlices after 30 s.
	MaxUnresponsive = 5 * time.Minute
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
	// Health faults act on the driver's DRAResourceHealth stream
	// (NodeWatchResources) on the claim's node, once, when the claim is
	// first prepared. The stream is the driver's, not the claim's: every
	// device of the driver on that node is affected.
	Health []HealthFault `json:"health,omitempty"`
	// Service faults act on the driver's DRA service (its gRPC socket,
	// dra.sock) on the claim's node, once, at the claim's first
	// NodePrepareResources call, which they leave unanswered. Like the
	// health stream, the service is the driver's, not the claim's.
	Service []ServiceFault `json:"service,omitempty"`
	// CDI, when set, makes the driver hand the kubelet a CDI device for
	// each of the claim's devices in the config entry's scope (none
	// otherwise). Not a fault: a witness the runtime writes (see CDI).
	CDI *CDI `json:"cdi,omitempty"`
}

// HealthFaultType says what a health fault does.
type HealthFaultType string

const (
	// StreamDrop ends every open NodeWatchResources stream of the driver
	// on the claim's node with the gRPC status Unavailable, and refuses
	// (Unavailable) the kubelet's reconnects for Duration; the first
	// reconnect after that is served again.
	StreamDrop HealthFaultType = "StreamDrop"
)

// HealthFault is one injected failure of the health stream.
type HealthFault struct {
	Type HealthFaultType `json:"type"`
	// Duration: how long after the drop reconnects are refused, a Go
	// duration of at most MaxStreamDown. Empty: the first reconnect is
	// served.
	Duration string `json:"duration,omitempty"`
	// Message is appended to the status the stream ends with.
	Message string `json:"message,omitempty"`
}

// DownDuration returns the parsed Duration (0 when empty); only valid
// after Parse.
func (h HealthFault) DownDuration() time.Duration {
	d, _ := time.ParseDuration(h.Duration)
	return d
}

// ServiceFaultType says what a service fault does.
type ServiceFaultType string

const (
	// Unresponsive stops the driver's DRA service on the claim's node for
	// Duration, the way a driver that hangs after registration looks to
	// the kubelet: its socket and every connection to it are closed (the
	// call in progress and every later one fail as unavailable), and it
	// publishes nothing. Its registration stays, so the kubelet keeps the
	// driver registered. After Duration it serves and publishes again.
	Unresponsive ServiceFaultType = "Unresponsive"
)

// ServiceFault is one injected failure of the driver's DRA service.
type ServiceFault struct {
	Type ServiceFaultType `json:"type"`
	// Duration (required): how long the service stays down, a Go
	// duration of at most MaxUnresponsive.
	Duration string `json:"duration"`
}

// DownDuration returns the parsed Duration; only valid after Parse.
func (f ServiceFault) DownDuration() time.Duration {
	d, _ := time.ParseDuration(f.Duration)
	return d
}

// CDI shapes the CDI devices of a claim. Each device's CDI spec sets one
// environment variable in the container, named after driver, claim and
// device, whose value is the device's CDI ID (driver.CDIEnvKey).
type CDI struct {
	// Hook adds an OCI startContainer hook to each device: the runtime
	// runs it inside the container, before the container's command, once
	// for every time it injected the device, and it appends the device's
	// CDI ID to a file in the container's /dev/shm. It counts injections,
	// which environment variables cannot (a second copy of a variable
	// replaces the first). The container's image must hold the hook
	// binary (faultline's fakes image does).
	Hook bool `json:"hook,omitempty"`
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
	// Omit leaves the claim out of the NodePrepareResources response for
	// the first Count calls (required, >= 1): no result at all, neither
	// devices nor an error, as a driver that lost track of a claim would
	// answer. The kubelet then fails the attempt for the pod ("skipped N
	// ResourceClaims") after taking in the results of the other claims of
	// the call, and retries; that is how a partly failed prepare is made
	// deterministically (kubernetes#140274). Prepare only. The claim as a
	// whole is left out, so devices and message are not allowed; the
	// claim's other faults do not act on a call that omits it, but a
	// Stall still holds the call as a whole. An omitting call counts as an
	// attempt.
	Omit Type = "Omit"
)

// deviceName is what Kubernetes allows as a device name: a DNS label.
var deviceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

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
	// Count: Transient: how many calls fail (required, 1..MaxCount). Omit:
	// how many calls leave the claim out (required, 1..MaxCount). Stall
	// and Unclassified: only the first Count calls (0: every call; on
	// unprepare required, >= 1). Not allowed for Permanent, which fails
	// every call.
	Count *int `json:"count,omitempty"`
	// Reason is required for Permanent and not allowed otherwise.
	Reason Reason `json:"reason,omitempty"`
	// TaintEffect is for Permanent/DeviceFailed only; default NoExecute.
	TaintEffect TaintEffect `json:"taintEffect,omitempty"`
	// Duration is required for Stall: a Go duration such as "60s", at most
	// MaxStall.
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
	spec.normalize()
	return &spec, nil
}

// normalize makes empty lists nil, so that a parsed spec equals what its
// JSON parses to again.
func (s *FaultSpec) normalize() {
	if len(s.Prepare) == 0 {
		s.Prepare = nil
	}
	if len(s.Unprepare) == 0 {
		s.Unprepare = nil
	}
	if len(s.Health) == 0 {
		s.Health = nil
	}
	if len(s.Service) == 0 {
		s.Service = nil
	}
	for _, faults := range [][]Fault{s.Prepare, s.Unprepare} {
		for i := range faults {
			if len(faults[i].Devices) == 0 {
				faults[i].Devices = nil
			}
		}
	}
}

// CheckDevices checks the device names of s against the devices its faults
// can apply to (those allocated to the claim in the config entry's scope,
// described by scope): a name that is none of them would test nothing.
// The error is an *InvalidError naming the device and the valid ones.
func (s *FaultSpec) CheckDevices(valid []string, scope string) error {
	var problems []string
	check := func(which string, faults []Fault) {
		for i, f := range faults {
			for j, name := range f.Devices {
				if !slices.Contains(valid, name) {
					problems = append(problems, fmt.Sprintf("%s[%d].devices[%d]: device %q is not allocated to this claim for %s; valid: %s",
						which, i, j, name, scope, validList(valid)))
				}
			}
		}
	}
	check("prepare", s.Prepare)
	check("unprepare", s.Unprepare)
	if len(problems) > 0 {
		return &InvalidError{Problems: problems}
	}
	return nil
}

func validList(valid []string) string {
	if len(valid) == 0 {
		return "none (no device of this driver is allocated in scope)"
	}
	return strings.Join(valid, ", ")
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
		problems = append(problems, f.validate(fmt.Sprintf("prepare[%d]", i), false)...)
	}
	for i, f := range s.Unprepare {
		problems = append(problems, f.validate(fmt.Sprintf("unprepare[%d]", i), true)...)
	}
	for i, h := range s.Health {
		problems = append(problems, h.validate(fmt.Sprintf("health[%d]", i))...)
	}
	for i, f := range s.Service {
		problems = append(problems, f.validate(fmt.Sprintf("service[%d]", i))...)
	}
	return problems
}

// validate checks one service fault.
func (f ServiceFault) validate(path string) []string {
	var problems []string
	switch f.Type {
	case Unresponsive:
	case "":
		problems = append(problems, path+".type: required, one of Unresponsive")
	default:
		problems = append(problems, fmt.Sprintf("%s.type: unknown service fault type %q, want Unresponsive", path, f.Type))
	}
	if f.Duration == "" {
		problems = append(problems, path+".duration: required, a Go duration such as \"90s\" (the service must come back)")
	} else if p := durationProblem(f.Duration, MaxUnresponsive, "90s", "the service must come back"); p != "" {
		problems = append(problems, path+".duration: "+p)
	}
	return problems
}

// durationProblem says what is wrong with a fault's duration, "" when it
// is a positive Go duration of at most limit; hint, what the field is for,
// ends each problem.
func durationProblem(raw string, limit time.Duration, example, hint string) string {
	d, err := time.ParseDuration(raw)
	var problem string
	switch {
	case err != nil:
		problem = fmt.Sprintf("invalid duration %q: want a Go duration such as %q", raw, example)
	case d <= 0:
		problem = fmt.Sprintf("must be positive, got %q", raw)
	case d > limit:
		problem = fmt.Sprintf("%q is longer than the cap of %s", raw, limit)
	default:
		return ""
	}
	return problem + " (" + hint + ")"
}

// validate checks one health fault.
func (h HealthFault) validate(path string) []string {
	var problems []string
	switch h.Type {
	case StreamDrop:
	case "":
		problems = append(problems, path+".type: required, one of StreamDrop")
	default:
		problems = append(problems, fmt.Sprintf("%s.type: unknown health fault type %q, want StreamDrop", path, h.Type))
	}
	if h.Duration != "" {
		if p := durationProblem(h.Duration, MaxStreamDown, "90s", "leave it out to serve the first reconnect"); p != "" {
			problems = append(problems, path+".duration: "+p)
		}
	}
	return problems
}

// validate checks one fault; unprepare faults must end, because the
// kubelet retries a failing unprepare until it succeeds and the pod stays
// Terminating until then.
func (f Fault) validate(path string, unprepare bool) []string {
	var problems []string
	add := func(field, format string, args ...any) {
		problems = append(problems, path+"."+field+": "+fmt.Sprintf(format, args...))
	}

	switch f.Type {
	case Transient, Permanent, Unclassified, Stall, Omit:
	case "":
		add("type", "required, one of Transient, Permanent, Unclassified, Stall, Omit")
	default:
		add("type", "unknown fault type %q, want one of Transient, Permanent, Unclassified, Stall, Omit", f.Type)
	}

	if f.Count != nil && *f.Count < 0 {
		add("count", "must not be negative, got %d", *f.Count)
	}
	if f.Count != nil && *f.Count > MaxCount {
		add("count", "%d is more than the cap of %d", *f.Count, MaxCount)
	}
	switch f.Type {
	case Transient:
		if f.Count == nil || *f.Count == 0 {
			add("count", "required for Transient: how many calls fail before one succeeds (>= 1)")
		}
	case Permanent:
		if unprepare {
			add("type", "Permanent is not allowed for unprepare: the kubelet retries a failing unprepare until it succeeds, "+
				"so the pod would stay Terminating for ever; use Transient with a count")
		} else if f.Count != nil {
			add("count", "not allowed for Permanent, which fails every call")
		}
	case Omit:
		switch {
		case unprepare:
			add("type", "Omit is only for prepare")
		case f.Count == nil || *f.Count == 0:
			add("count", "required for Omit: how many calls leave the claim out of the response before one answers it (>= 1)")
		}
		// The claim is left out as a whole, and nothing is said to the
		// kubelet about it.
		if len(f.Devices) > 0 {
			add("devices", "not allowed for Omit, which leaves the whole claim out of the response")
		}
		if f.Message != "" {
			add("message", "not allowed for Omit, which returns nothing for the claim")
		}
	case Unclassified, Stall:
		if unprepare && (f.Count == nil || *f.Count == 0) {
			add("count", "required for %s on unprepare (>= 1): a fault on every unprepare call would keep the pod Terminating for ever", f.Type)
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
		if p := durationProblem(f.Duration, MaxStall, "60s", "the kubelet gives up on a call after 45s"); p != "" {
			add("duration", "%s", p)
		} else if f.Type != Stall {
			add("duration", "only allowed for Stall")
		}
	} else if f.Type == Stall {
		add("duration", "required for Stall, e.g. \"60s\"")
	}

	for i, name := range f.Devices {
		field := fmt.Sprintf("devices[%d]", i)
		switch {
		case strings.TrimSpace(name) == "":
			add(field, "must not be empty")
		case strings.TrimSpace(name) != name:
			add(field, "device %q has spaces around its name", name)
		case slices.Index(f.Devices, name) < i:
			add(field, "device %q is named twice", name)
		case !deviceName.MatchString(name):
			add(field, "device %q is not a device name (a DNS label such as dev-1)", name)
		}
	}
	return problems
}
