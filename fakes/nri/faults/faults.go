// Package faults parses the pod annotations that tell one instance of the
// fake NRI plugin which failure to inject into which NRI event.
//
// One annotation selects one fault for one plugin instance and one event:
//
//	nri.faultline.k8s.io/<instance>.<Event>: <mode>[;times=<N>][;container=<name>]
//
// <mode> is one of
//
//	error           the handler returns an error
//	stall=<dur>     the handler blocks for <dur> (Go duration, at most
//	                MaxStall), or until the runtime gives up on the request
//	disconnect      the plugin closes its NRI connection mid-event and reconnects
//	crash           the plugin process exits mid-event (the kubelet restarts it)
//
// times=N fires the fault only for the first N matching events of that
// pod (and container), container=<name> only for that container. Faults are
// keyed by instance so that specs running in parallel, and the instances of
// one plugin pod, never act on each other's annotations.
package faults

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Prefix starts every fault annotation key.
const Prefix = "nri.faultline.k8s.io/"

// Mode is what the plugin does when a fault fires.
type Mode string

// The fault modes.
const (
	Error      Mode = "error"
	Stall      Mode = "stall"
	Disconnect Mode = "disconnect"
	Crash      Mode = "crash"
)

// PodEvents are the NRI events about a pod sandbox, by NRI's name.
var PodEvents = []string{
	"RunPodSandbox",
	"UpdatePodSandbox",
	"PostUpdatePodSandbox",
	"StopPodSandbox",
	"RemovePodSandbox",
}

// ContainerEvents are the NRI events about a container, by NRI's name.
var ContainerEvents = []string{
	"CreateContainer",
	"PostCreateContainer",
	"StartContainer",
	"PostStartContainer",
	"UpdateContainer",
	"PostUpdateContainer",
	"StopContainer",
	"RemoveContainer",
	"ValidateContainerAdjustment",
}

// MaxStall bounds a stall. The runtimes' NRI request timeout is 2 s by
// default and the specs stall for at most 20 s; a stall of hours is a typo
// that would hold the runtime's NRI connection until the runtime gives up.
const MaxStall = 5 * time.Minute

// TeardownEvents end a pod or container. A malformed fault annotation never
// fails them (the plugin logs it): failing StopPodSandbox leaves the
// sandbox running on CRI-O, and every later stop fails the same way.
var TeardownEvents = []string{"StopPodSandbox", "RemovePodSandbox", "StopContainer", "RemoveContainer"}

// IsTeardown tells the events that end a pod or container.
func IsTeardown(event string) bool {
	return slices.Contains(TeardownEvents, event)
}

// maxQuoted bounds a value from an annotation quoted in an error: the error
// goes to the runtime, into events and into the record.
const maxQuoted = 128

// quote is %q of s, cut so that the quoted text stays within maxQuoted
// bytes (invalid bytes quote as \xNN, four bytes each), with the length of
// s when cut.
func quote(s string) string {
	q := strconv.Quote(s)
	if len(q) <= maxQuoted {
		return q
	}
	n := min(len(s), maxQuoted)
	for {
		for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
			n--
		}
		if q = strconv.Quote(s[:n]); len(q) <= maxQuoted || n == 0 {
			return q + fmt.Sprintf("... (%d bytes)", len(s))
		}
		n = n * 3 / 4
	}
}

// maxKey bounds an annotation key in an error; Kubernetes allows 317
// bytes (a 253-byte prefix, "/", a 63-byte name).
const maxKey = 320

// maxNameLen is the limit Kubernetes puts on the name part of an
// annotation key (after the "/").
const maxNameLen = 63

// Fault is one parsed fault annotation.
type Fault struct {
	// Key and Value are the annotation as written, for messages.
	Key, Value string
	Mode       Mode
	// Stall is how long a Stall fault blocks.
	Stall time.Duration
	// Times limits the fault to the first Times matching events; 0 means always.
	Times int
	// Container limits a container event fault to one container; "" means any.
	Container string
}

// MalformedError says why an annotation addressed to this instance cannot
// be used. It names the key so that the spec author finds the typo.
type MalformedError struct {
	Key, Value, Reason string
}

func (e *MalformedError) Error() string {
	key := e.Key
	if len(key) > maxKey {
		key = strings.ToValidUTF8(key[:maxKey], "?") + "..."
	}
	return fmt.Sprintf("annotation %s=%s: %s", key, quote(e.Value), e.Reason)
}

// Key returns the annotation key that addresses event of instance.
func Key(instance, event string) string {
	return Prefix + instance + "." + event
}

// IsContainerEvent tells container events from pod events.
func IsContainerEvent(event string) bool {
	return slices.Contains(ContainerEvents, event)
}

func isEvent(event string) bool {
	return slices.Contains(PodEvents, event) || IsContainerEvent(event)
}

// Annotation key names and container names follow these Kubernetes rules.
var (
	qualifiedName = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	dnsLabel      = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

// ValidateInstance checks at startup that every annotation key for instance
// is a valid Kubernetes annotation key; otherwise no pod could carry it.
func ValidateInstance(instance string) error {
	longest := 0
	for _, e := range append(slices.Clone(PodEvents), ContainerEvents...) {
		longest = max(longest, len(e))
	}
	if !qualifiedName.MatchString(instance) {
		return fmt.Errorf("instance name %q cannot be used in annotation keys: "+
			"use letters, digits, '-', '_' and '.', starting and ending with a letter or digit", instance)
	}
	if n := len(instance) + 1 + longest; n > maxNameLen {
		return fmt.Errorf("instance name %q is too long: annotation key names would be %d characters, "+
			"Kubernetes allows %d", instance, n, maxNameLen)
	}
	return nil
}

// For returns the fault that instance must inject into event for container
// ("" for pod events), or nil if there is none. Every annotation addressed
// to instance is checked, whatever its event, and the first malformed one
// (by key order) is returned as a *MalformedError, together with the
// event's own fault if that one is well-formed: a typo then fails the spec
// loudly instead of silently testing nothing, and the caller decides
// whether the event still gets its fault (teardown events, see IsTeardown).
func For(annotations map[string]string, instance, event, container string) (*Fault, error) {
	prefix := Prefix + instance + "."
	var found *Fault
	var malformed error
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		ev, ok := strings.CutPrefix(key, prefix)
		// A dot in the rest means the key belongs to an instance whose name
		// extends ours (e.g. "a.b" when we are "a"): event names have no dots.
		if !ok || strings.Contains(ev, ".") {
			continue
		}
		value := annotations[key]
		if !isEvent(ev) {
			if malformed == nil {
				malformed = &MalformedError{key, value, fmt.Sprintf("unknown event %s (want one of %s)",
					quote(ev), strings.Join(append(slices.Clone(PodEvents), ContainerEvents...), ", "))}
			}
			continue
		}
		f, err := Parse(value, IsContainerEvent(ev))
		if err != nil {
			if malformed == nil {
				malformed = &MalformedError{key, value, err.Error()}
			}
			continue
		}
		f.Key = key
		if ev == event {
			found = f
		}
	}
	if found != nil && found.Container != "" && found.Container != container {
		found = nil
	}
	return found, malformed
}

// Parse parses an annotation value. containerEvent allows the container=
// option, which makes no sense for pod events.
func Parse(value string, containerEvent bool) (*Fault, error) {
	parts := strings.Split(value, ";")
	f := &Fault{Value: value}

	mode, arg, hasArg := strings.Cut(strings.TrimSpace(parts[0]), "=")
	switch Mode(mode) {
	case Error, Disconnect, Crash:
		if hasArg {
			return nil, fmt.Errorf("%s takes no value", mode)
		}
	case Stall:
		if !hasArg {
			return nil, fmt.Errorf("stall needs a duration, e.g. stall=5s")
		}
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("stall duration %s is not a positive Go duration such as 500ms or 5s", quote(arg))
		}
		if d > MaxStall {
			return nil, fmt.Errorf("stall duration %s is longer than the cap of %s", quote(arg), MaxStall)
		}
		f.Stall = d
	case "":
		return nil, fmt.Errorf("no fault given (want error, stall=<duration>, disconnect or crash)")
	default:
		return nil, fmt.Errorf("unknown fault %s (want error, stall=<duration>, disconnect or crash)", quote(mode))
	}
	f.Mode = Mode(mode)

	seen := map[string]bool{}
	for _, opt := range parts[1:] {
		name, arg, _ := strings.Cut(strings.TrimSpace(opt), "=")
		if seen[name] {
			return nil, fmt.Errorf("option %s given twice", quote(name))
		}
		seen[name] = true
		switch name {
		case "times":
			n, err := strconv.Atoi(arg)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("times=%s is not a positive integer", quote(arg))
			}
			f.Times = n
		case "container":
			if !containerEvent {
				return nil, fmt.Errorf("container= only applies to container events")
			}
			if len(arg) > 63 || !dnsLabel.MatchString(arg) {
				return nil, fmt.Errorf("container=%s is not a valid container name", quote(arg))
			}
			f.Container = arg
		default:
			return nil, fmt.Errorf("unknown option %s (want times=<N> or container=<name>)", quote(opt))
		}
	}
	return f, nil
}
