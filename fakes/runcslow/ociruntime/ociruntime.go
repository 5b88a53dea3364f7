// Package ociruntime is the fault-injecting OCI runtime of faultline's nodes
// (fakes/runcslow/cmd/runc-slow): a wrapper the runtime calls instead of runc for pods of the
// faultline-slow runtime handler. On "create" it reads the bundle's
// annotations and sleeps for the delay they ask, then execs the real runtime,
// so the runtime's RunPodSandbox or CreateContainer outlasts its caller's
// deadline while everything else on the node runs at full speed.
//
// Every create, start, kill and delete is recorded as one JSON line, so a spec
// can tell how many objects the runtime really created for a request and
// whether it removed the ones nobody claimed: a timed-out object is not
// listed over CRI, so the OCI runtime is the only witness.
package ociruntime

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Annotations a sandbox or container config carries to ask for a slow
// creation. CRI-O copies the sandbox's annotations into each container's OCI
// spec; containerd passes those its runtime handler lists in pod_annotations
// and container_annotations.
const (
	// SandboxDelayAnnotation delays the OCI create of the pod's sandbox.
	SandboxDelayAnnotation = "cri.faultline.k8s.io/sandbox-create-delay"
	// ContainerDelayAnnotation delays the OCI create of the pod's containers.
	// containerd runs the OCI create at StartContainer, not CreateContainer.
	ContainerDelayAnnotation = "cri.faultline.k8s.io/container-create-delay"
	// RequestAnnotation is copied into every record of the object, so a spec
	// finds the records of its own requests.
	RequestAnnotation = "cri.faultline.k8s.io/request"
	// MaxDelay bounds a delay, so a typo cannot wedge a node for hours.
	MaxDelay = 10 * time.Minute
)

// Where the runtimes say what an OCI bundle is ("sandbox" or "container").
var containerTypeAnnotations = []string{
	"io.kubernetes.cri.container-type",  // containerd
	"io.kubernetes.cri-o.ContainerType", // CRI-O
}

// Spec is what the wrapper reads of a bundle's config.json.
type Spec struct {
	Kind    string        // sandbox, container, or "" when the runtime does not say
	Request string        // RequestAnnotation
	Delay   time.Duration // the delay asked for this kind of object
	// Hold: the delay is a hold's bound, ended early by a release
	// (HoldAnnotation, gate.go).
	Hold bool
}

// ReadSpec reads the bundle's annotations. A malformed delay is an error that
// names the annotation: the creation then fails with it instead of silently
// testing nothing.
func ReadSpec(bundle string) (Spec, error) {
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return Spec{}, err
	}
	var config struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal(data, &config); err != nil {
		return Spec{}, fmt.Errorf("%s/config.json: %w", bundle, err)
	}
	return SpecFromAnnotations(config.Annotations)
}

// SpecFromAnnotations picks the kind, the request and the delay for that kind.
func SpecFromAnnotations(annotations map[string]string) (Spec, error) {
	spec := Spec{Request: annotations[RequestAnnotation]}
	for _, key := range containerTypeAnnotations {
		if kind := annotations[key]; kind != "" {
			spec.Kind = kind
			break
		}
	}
	key := ""
	switch spec.Kind {
	case "sandbox":
		key = SandboxDelayAnnotation
	case "container":
		key = ContainerDelayAnnotation
	default:
		return spec, nil
	}
	value, ok := annotations[key]
	if !ok {
		return spec, nil
	}
	delay, err := time.ParseDuration(value)
	if err != nil || delay < 0 || delay > MaxDelay {
		return spec, fmt.Errorf("annotation %s=%s: want a Go duration between 0 and %s (e.g. 8s)", key, quote(value), MaxDelay)
	}
	spec.Delay = delay
	switch hold := annotations[HoldAnnotation]; hold {
	case "":
	case "true":
		if err := CheckRequest(spec.Request); err != nil {
			return spec, fmt.Errorf("annotation %s=true needs a request that names a gate (%s): %w", HoldAnnotation, RequestAnnotation, err)
		}
		spec.Hold = true
	default:
		return spec, fmt.Errorf("annotation %s=%s: want true, or no annotation", HoldAnnotation, quote(hold))
	}
	return spec, nil
}
