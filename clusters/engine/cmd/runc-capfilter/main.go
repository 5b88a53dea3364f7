// Command runc-capfilter is an OCI runtime wrapper for hosts whose capability
// bounding set is incomplete: it drops the capabilities the host cannot grant from
// the request, then execs the real runc. faultline's engine setup (clusters/engine) registers it with
// dockerd only on such hosts.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/faultline-k8s/faultline/clusters/engine/capfilter"
)

// realRuncCandidates are searched in order; the first that is not this binary wins.
var realRuncCandidates = []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc", "/usr/local/bin/runc"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "runc-capfilter: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	// --print-missing lets the engine setup (clusters/engine) decide whether this wrapper is needed.
	if len(os.Args) == 2 && os.Args[1] == "--print-missing" {
		missing, err := capfilter.HostMissing()
		for _, name := range missing {
			fmt.Println(name)
		}
		return err
	}
	realRunc, err := findRealRunc()
	if err != nil {
		return err
	}
	missing, err := capfilter.HostMissing()
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		wd, _ := os.Getwd()
		for _, file := range capfilter.FilesToRewrite(os.Args[1:], wd) {
			if err := capfilter.RewriteFile(file, missing); err != nil {
				return fmt.Errorf("rewrite %s: %w", file, err)
			}
		}
	}
	return syscall.Exec(realRunc, append([]string{realRunc}, os.Args[1:]...), os.Environ())
}

func findRealRunc() (string, error) {
	if path := os.Getenv("FAULTLINE_REAL_RUNC"); path != "" {
		return path, nil
	}
	self, _ := os.Executable()
	self, _ = filepath.EvalSymlinks(self)
	for _, candidate := range realRuncCandidates {
		resolved, err := filepath.EvalSymlinks(candidate)
		if err == nil && resolved != self {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("no runc found in %v (set FAULTLINE_REAL_RUNC)", realRuncCandidates)
}
