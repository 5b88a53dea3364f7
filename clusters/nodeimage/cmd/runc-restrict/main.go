// Command runc-restrict is the OCI runtime of faultline's CRI-O nodes: it trims
// each request to what the node container can grant, then execs runc.
//
//   - process.oomScoreAdj is raised to the wrapper's own oom_score_adj. CRI-O asks
//     for -998 for every sandbox (and the kubelet's value for each container); a
//     process may lower its oom_score_adj only with CAP_SYS_RESOURCE, which some
//     hosts cannot grant the node, and runc then fails every sandbox with "can't
//     get final child's PID from pipe: EOF". containerd's restrict_oom_score_adj
//     does the same; CRI-O has no such option.
//   - capabilities outside the node's bounding set are dropped. CRI-O gives a
//     privileged container (kube-proxy) every capability it knows, and runc fails
//     with "unable to apply caps: operation not permitted"; containerd gives such
//     a container only its own bounding set.
//
// On a host with a full bounding set both are no-ops for the capabilities, and
// the oomScoreAdj clamp only matters where the runtime itself runs above -998.
package main

import (
	"fmt"
	"os"
	"syscall"

	"github.com/faultline-k8s/faultline/clusters/engine/capfilter"
)

// realRunc is Debian's runc in the node image.
const realRunc = "/usr/sbin/runc"

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "runc-restrict: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	runc := realRunc
	if path := os.Getenv("FAULTLINE_REAL_RUNC"); path != "" {
		runc = path
	}
	wd, _ := os.Getwd()
	files := capfilter.FilesToRewrite(os.Args[1:], wd)
	if len(files) > 0 {
		own, err := capfilter.OwnOOMScoreAdj()
		if err != nil {
			return err
		}
		missing, err := capfilter.HostMissing()
		if err != nil {
			return err
		}
		for _, file := range files {
			if err := capfilter.ClampOOMScoreAdjFile(file, own); err != nil {
				return fmt.Errorf("clamp oomScoreAdj in %s: %w", file, err)
			}
			if len(missing) > 0 {
				if err := capfilter.RewriteFile(file, missing); err != nil {
					return fmt.Errorf("drop %v from %s: %w", missing, file, err)
				}
			}
		}
	}
	return syscall.Exec(runc, append([]string{runc}, os.Args[1:]...), os.Environ())
}
