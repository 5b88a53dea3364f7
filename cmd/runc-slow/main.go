// Command runc-slow is the OCI runtime of the faultline-slow runtime handler on
// faultline's nodes: it delays "create" by what the bundle's annotations ask
// (drivers/fake/ociruntime), records what it was asked to do, then execs the
// node's real OCI runtime with the same arguments.
//
// The real runtime is the first line of /etc/faultline/runc-slow.delegate
// (runc-restrict on CRI-O nodes), else runc from PATH.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/faultline-k8s/faultline/drivers/fake/ociruntime"
)

const (
	delegateFile = "/etc/faultline/runc-slow.delegate"
	logFile      = "/var/log/faultline/runc-slow.jsonl"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "runc-slow: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	inv := ociruntime.ParseArgs(args)
	if ociruntime.Recorded(inv.Command) {
		record := ociruntime.Record{Time: time.Now(), Command: inv.Command, Phase: "begin", ID: inv.ID}
		if inv.Command == "create" || inv.Command == "run" {
			bundle := inv.Bundle
			if bundle == "" {
				bundle, _ = os.Getwd()
			}
			spec, err := ociruntime.ReadSpec(bundle)
			record.Kind, record.Request = spec.Kind, spec.Request
			if err != nil {
				record.Phase, record.Error = "error", err.Error()
				_ = ociruntime.Append(logFile, record)
				return err
			}
			if spec.Delay > 0 {
				record.Delay = spec.Delay.String()
				// A record the spec cannot read is no reason to fail the creation.
				_ = ociruntime.Append(logFile, record)
				time.Sleep(spec.Delay) // the fault itself: the creation is slow
				record.Time, record.Phase = time.Now(), "exec"
			}
		}
		_ = ociruntime.Append(logFile, record)
	}
	delegate, err := realRuntime()
	if err != nil {
		return err
	}
	return syscall.Exec(delegate, append([]string{delegate}, args...), os.Environ())
}

func realRuntime() (string, error) {
	if data, err := os.ReadFile(delegateFile); err == nil {
		if path := strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0]); path != "" {
			return path, nil
		}
	}
	path, err := exec.LookPath("runc")
	if err != nil {
		return "", fmt.Errorf("no real OCI runtime: %s is missing and runc is not in PATH", delegateFile)
	}
	return path, nil
}
