// Command runc-slow is the OCI runtime of the faultline-slow runtime handler on
// faultline's nodes: it delays "create" by what the bundle's annotations ask,
// or holds it until the spec releases it (fakes/runcslow/ociruntime, gate.go),
// records what it was asked to do, then execs the node's real OCI runtime
// with the same arguments.
//
// The real runtime is the first line of /etc/faultline/runc-slow.delegate
// (runc-restrict on CRI-O nodes), else runc from PATH.
//
// The record is the witness of what the runtime created and removed, so it
// comes first: a create, run, start, kill or delete whose record cannot be
// written durably fails (exit 1, the reason on stderr and in the runtime's
// --log) without running, because a verdict without the record would be
// worthless.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/faultline-k8s/faultline/fakes/runcslow/ociruntime"
)

const (
	delegateFile = "/etc/faultline/runc-slow.delegate"
	logFile      = "/var/log/faultline/runc-slow.jsonl"
)

func main() {
	w := wrapper{logFile: logFile, delegateFile: delegateFile, gateDir: ociruntime.GateDir, exec: syscall.Exec, sleep: time.Sleep, hold: ociruntime.Hold}
	if err := w.run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "runc-slow: %v\n", err)
		os.Exit(1)
	}
}

// wrapper is runc-slow with its paths and side effects, for tests.
type wrapper struct {
	logFile, delegateFile string
	// gateDir holds the releases of held creations (ociruntime.Release).
	gateDir string
	exec    func(path string, argv, env []string) error
	sleep   func(time.Duration)
	hold    func(bound time.Duration, released func() bool) bool
}

func (w wrapper) run(args []string) error {
	inv := ociruntime.ParseArgs(args)
	delegate, err := w.realRuntime()
	if err != nil {
		return w.refuse(inv, err)
	}
	if ociruntime.Recorded(inv.Command) {
		if err := w.witness(inv); err != nil {
			return w.refuse(inv, err)
		}
	}
	// exec returns only when it failed (or in tests).
	err = w.exec(delegate, append([]string{delegate}, args...), os.Environ())
	if err == nil {
		return nil
	}
	if ociruntime.Recorded(inv.Command) {
		// The record says the command ran; say that it did not.
		_ = ociruntime.Append(w.logFile, ociruntime.Record{Time: time.Now(), Command: inv.Command, Phase: "error", ID: inv.ID,
			Error: fmt.Sprintf("exec %s: %v", delegate, err)})
	}
	return fmt.Errorf("exec %s: %w", delegate, err)
}

// errFailedAtRelease is the create a spec failed through its gate
// (ociruntime.ReleaseFailing): the runtime sees its OCI create fail.
var errFailedAtRelease = errors.New("faultline: the held create failed, as the spec asked when it released it")

// refuse reports err to the runtime: runc's log (where containerd's shim
// looks) and, by returning it, stderr.
func (w wrapper) refuse(inv ociruntime.Invocation, err error) error {
	_ = ociruntime.RuntimeLogError(inv, "runc-slow: "+err.Error())
	return err
}

// witness records the command, and sleeps for the delay a create asks.
func (w wrapper) witness(inv ociruntime.Invocation) error {
	record := ociruntime.Record{Time: time.Now(), Command: inv.Command, Phase: "begin", ID: inv.ID}
	var delay time.Duration
	var hold bool
	if inv.Command == "create" || inv.Command == "run" {
		spec, err := w.readSpec(inv.Bundle)
		record.Kind, record.Request = spec.Kind, spec.Request
		if err != nil {
			record.Phase, record.Error = "error", err.Error()
			if werr := w.append(record); werr != nil {
				return errors.Join(err, werr)
			}
			return err
		}
		if spec.Delay > 0 {
			delay, hold = spec.Delay, spec.Hold
			record.Delay = delay.String()
		}
	}
	if err := w.append(record); err != nil {
		return err
	}
	if delay > 0 {
		// The fault itself: the creation is slow, or held until the spec
		// releases it.
		if hold {
			request := record.Request
			record.Released = w.hold(delay, func() bool { return ociruntime.Released(w.gateDir, request) })
			record.Failed = record.Released && ociruntime.TakeFailure(w.gateDir, request)
		} else {
			w.sleep(delay)
		}
		record.Time, record.Phase = time.Now(), "exec"
		if record.Failed {
			record.Phase, record.Error = "error", errFailedAtRelease.Error()
		}
		if err := w.append(record); err != nil {
			return err
		}
		if record.Failed {
			return errFailedAtRelease
		}
	}
	return nil
}

func (w wrapper) readSpec(bundle string) (ociruntime.Spec, error) {
	if bundle == "" {
		wd, err := os.Getwd()
		if err != nil {
			return ociruntime.Spec{}, fmt.Errorf("no --bundle and no working directory: %w", err)
		}
		bundle = wd
	}
	return ociruntime.ReadSpec(bundle)
}

func (w wrapper) append(r ociruntime.Record) error {
	if err := ociruntime.Append(w.logFile, r); err != nil {
		return fmt.Errorf("cannot record %s %s of %q in %s, the witness of what the runtime created, so it is refused: %w",
			r.Command, r.Phase, r.ID, w.logFile, err)
	}
	return nil
}

func (w wrapper) realRuntime() (string, error) {
	if data, err := os.ReadFile(w.delegateFile); err == nil {
		if path := strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0]); path != "" {
			return path, nil
		}
	}
	path, err := exec.LookPath("runc")
	if err != nil {
		return "", fmt.Errorf("no real OCI runtime: %s is missing and runc is not in PATH", w.delegateFile)
	}
	return path, nil
}
