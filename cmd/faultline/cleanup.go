package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline-k8s/faultline/fixtures/cleanup"
)

func init() {
	register("cleanup", "remove from a cluster what faultline installed (after a killed run): the fixtures' objects and the specs' namespaces, proven by faultline's ownership annotations",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			kubeconfig := fs.String("kubeconfig", "", "the cluster's kubeconfig (default: $KUBECONFIG or ~/.kube/config and its current context, as kubectl)")
			dryRun := fs.Bool("dry-run", false, "print what would be removed and what would be skipped; remove nothing")
			timeout := fs.Duration("timeout", cleanup.DefaultTimeout, "how long to wait for the removed namespaces to be gone")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usageError{fmt.Errorf("unexpected arguments %v", args)}
				}
				if *timeout <= 0 {
					return usageError{fmt.Errorf("--timeout must be positive, got %s", *timeout)}
				}
				config, where, err := loadKubeconfig(*kubeconfig)
				if err != nil {
					return err
				}
				// One list per resource type (some 60): client-go's default
				// 5 requests/s would take a while.
				config.QPS, config.Burst = 50, 100
				// Listing every type draws deprecation warnings (v1 Endpoints) that say
				// nothing about what is removed.
				config.WarningHandler = rest.NoWarnings{}
				client, err := dynamic.NewForConfig(config)
				if err != nil {
					return err
				}
				disco, err := discovery.NewDiscoveryClientForConfig(config)
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "cleaning up %s\n", where)
				r, err := cleanup.Remove(ctx, client, disco, cleanup.Options{DryRun: *dryRun, Timeout: *timeout, Progress: os.Stderr})
				if r.Searched {
					r.Write(os.Stdout)
				}
				return err
			}
		})
}

// loadKubeconfig reads the kubeconfig at path, or where kubectl would look
// without one ($KUBECONFIG, ~/.kube/config), and says which cluster it names.
// A kubeconfig that is missing or unusable is bad input.
func loadKubeconfig(path string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return nil, "", usageError{fmt.Errorf("--kubeconfig: %w", err)}
		}
		rules.ExplicitPath = path
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	config, err := loader.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", usageError{errors.New("no kubeconfig: pass --kubeconfig, or set KUBECONFIG or ~/.kube/config as for kubectl")}
		}
		return nil, "", usageError{fmt.Errorf("kubeconfig: %w", err)}
	}
	where := config.Host
	if raw, err := loader.RawConfig(); err == nil && raw.CurrentContext != "" {
		where = fmt.Sprintf("context %q (%s)", raw.CurrentContext, config.Host)
	}
	return config, where, nil
}
