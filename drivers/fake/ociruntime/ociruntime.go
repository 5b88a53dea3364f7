// Package ociruntime is the fault-injecting OCI runtime of faultline's nodes
// (cmd/runc-slow): a wrapper the runtime calls instead of runc for pods of the
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
	"strings"
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

// Invocation is what the wrapper understood of its command line.
type Invocation struct {
	Command string // create, start, kill, delete, state, ...
	ID      string // the container ID, "" for commands without one
	Bundle  string // create only; "" means the working directory
}

// Global runc flags that take a value; the subcommand is the first word that
// is neither a flag nor such a value.
var globalValueFlags = map[string]bool{"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true}

// Subcommand flags that take a value (create, run, exec, kill, delete).
var commandValueFlags = map[string]bool{
	"--bundle": true, "-b": true, "--console-socket": true, "--pid-file": true,
	"--preserve-fds": true, "--process": true, "-p": true, "--cwd": true, "--env": true, "-e": true,
}

// ParseArgs reads runc's command line (without the program name).
func ParseArgs(args []string) Invocation {
	var inv Invocation
	i := 0
	for ; i < len(args); i++ {
		arg := args[i]
		if strings.HasPrefix(arg, "-") {
			if globalValueFlags[arg] {
				i++
			}
			continue
		}
		inv.Command = arg
		i++
		break
	}
	for ; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--bundle" || arg == "-b":
			if i+1 < len(args) {
				inv.Bundle = args[i+1]
			}
			i++
		case strings.HasPrefix(arg, "--bundle="):
			inv.Bundle = strings.TrimPrefix(arg, "--bundle=")
		case commandValueFlags[arg]:
			i++
		case strings.HasPrefix(arg, "-"):
		default:
			if inv.ID == "" {
				inv.ID = arg
			}
		}
	}
	return inv
}

// Spec is what the wrapper reads of a bundle's config.json.
type Spec struct {
	Kind    string        // sandbox, container, or "" when the runtime does not say
	Request string        // RequestAnnotation
	Delay   time.Duration // the delay asked for this kind of object
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
		return spec, fmt.Errorf("annotation %s=%q: want a Go duration between 0 and %s (e.g. 8s)", key, value, MaxDelay)
	}
	spec.Delay = delay
	return spec, nil
}

// Record is one line of the wrapper's log.
type Record struct {
	Time    time.Time `json:"time"`
	Command string    `json:"command"`
	// Phase: "begin" when the wrapper starts, "exec" when it hands over to the
	// real runtime after the delay, "error" when it refused the request.
	Phase   string `json:"phase"`
	ID      string `json:"id"`
	Kind    string `json:"kind,omitempty"`
	Request string `json:"request,omitempty"`
	Delay   string `json:"delay,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Recorded reports whether a command is worth a record: the ones that make or
// end an object, not the runtime's frequent state queries.
func Recorded(command string) bool {
	switch command {
	case "create", "run", "start", "kill", "delete":
		return true
	}
	return false
}

// Append writes one record to the log file, creating its directory. Lines are
// short and written with O_APPEND in one call, so concurrent wrappers do not
// interleave.
func Append(path string, r Record) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}

// ParseLog reads the records of a log, skipping lines it cannot read (a line
// cut short by a node crash).
func ParseLog(data []byte) []Record {
	var out []Record
	for _, line := range strings.Split(string(data), "\n") {
		var r Record
		if line != "" && json.Unmarshal([]byte(line), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}
