package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/preflight"
	"github.com/faultline-k8s/faultline/suites/all"
)

func init() {
	register("preflight", "before installing anything: which requirements this cluster can check, and if not, why (reads only)",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			kubeconfig := fs.String("kubeconfig", "", "the cluster's kubeconfig (default: $KUBECONFIG or ~/.kube/config and its current context, as kubectl)")
			format := fs.String("o", "text", "output: "+strings.Join(preflight.Formats, ", "))
			strict := fs.Bool("strict", false, "exit 1 when a requirement cannot be checked (default: the report is the answer, exit 0)")
			var nodeSelector map[string]string
			fs.Func("node-selector", "judge only nodes with these labels (`k=v,k2=v2`), as the run's --faultline.node-selector", func(v string) error {
				sel, err := fixtures.ParseNodeSelector(v)
				nodeSelector = sel
				return err
			})
			timeout := fs.Duration("timeout", 20*time.Second, "bound on each request (a kubelet behind the node proxy may hang)")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usageError{fmt.Errorf("unexpected arguments %q", args)}
				}
				if !slices.Contains(preflight.Formats, *format) {
					return usageError{fmt.Errorf("-o %q: want %s", *format, strings.Join(preflight.Formats, ", "))}
				}
				if *timeout <= 0 {
					return usageError{fmt.Errorf("--timeout must be positive, got %s", *timeout)}
				}
				config, where, err := loadKubeconfig(*kubeconfig)
				if err != nil {
					return err
				}
				// Some 80 access reviews: client-go's default 5 requests/s
				// would take a while. Discovery takes no context: the
				// client's timeout bounds an unreachable server.
				config.QPS, config.Burst = 50, 100
				config.Timeout = *timeout
				cs, err := kubernetes.NewForConfig(config)
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "preflight of %s\n", where)
				rep, err := preflight.Run(ctx, cs, preflight.Options{Timeout: *timeout, NodeSelector: nodeSelector, Specs: specsOfTheSuites()})
				if err != nil {
					return err
				}
				if err := preflight.Write(os.Stdout, rep, *format); err != nil {
					return err
				}
				if ids := rep.CannotCheck(); *strict && len(ids) > 0 {
					return fmt.Errorf("--strict: %d requirement(s) cannot be checked on this cluster (%w)", len(ids), verdicts.ErrUnexpected)
				}
				return nil
			}
		})
}

// specsOfTheSuites is the test binary's spec tree as preflight reads it: the
// suites are linked here too (suites/all), so what a requirement needs is
// read from its specs' labels, never from a table kept beside them.
func specsOfTheSuites() []preflight.Spec {
	var specs []preflight.Spec
	for _, s := range all.Preview() {
		specs = append(specs, preflight.Spec{Labels: s.Labels(), Pending: s.State == types.SpecStatePending})
	}
	return specs
}
