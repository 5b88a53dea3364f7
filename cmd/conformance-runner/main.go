// Command conformance-runner is the entry point of faultline's conformance
// image (package conformance): it runs the suites as the Kubernetes
// conformance image does, and exits 0 when no verdict is unexpected, 1 when
// one is, 2 on bad settings, 3 when the run could not finish. A run that
// checked less than it selected exits 0 too: its outcome and report say
// "N of M requirements checked" and list the others (faultline e2e exits 4).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/faultline-k8s/faultline/conformance"
	"github.com/faultline-k8s/faultline/judge/verdicts"
)

func main() {
	c, err := conformance.FromEnv(os.LookupEnv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance-runner: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = conformance.Run(ctx, c, os.Stdout)
	stop()
	if err == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "conformance-runner: %v\n", err)
	if errors.Is(err, verdicts.ErrUnexpected) {
		os.Exit(1)
	}
	os.Exit(3)
}
