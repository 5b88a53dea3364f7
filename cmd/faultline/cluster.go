package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/faultline-k8s/faultline/clusters/kindcluster"
	"github.com/faultline-k8s/faultline/vocab/facts"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// runtimeFlagChoices names the runtimes a --runtime flag takes, with their aliases.
func runtimeFlagChoices() string {
	var out []string
	for _, rt := range runtimes.All() {
		name := rt.Name
		if len(rt.Aliases) > 0 {
			name += " (" + strings.Join(rt.Aliases, ", ") + ")"
		}
		out = append(out, name)
	}
	return strings.Join(out, ", ")
}

// checkName refuses a --name that is no cluster name (kindcluster.ValidateName):
// kind takes "" for its own default cluster, and the name is a directory
// faultline deletes.
func checkName(name string) error {
	if err := kindcluster.ValidateName(name); err != nil {
		return usageError{fmt.Errorf("--name: %w", err)}
	}
	return nil
}

// noArgs refuses positional arguments a command does not take, rather than
// ignoring them.
func noArgs(args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", args)}
	}
	return nil
}

func init() {
	register("create-cluster", "create a kind cluster (or reuse one of the same name with --reuse)",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			var s kindcluster.Settings
			fs.StringVar(&s.Name, "name", "faultline", "cluster name")
			runtime := fs.String("runtime", runtimes.Default, "container runtime of the nodes: "+runtimeFlagChoices())
			fs.StringVar(&s.NodeImage, "node-image", "", "node image (from build-node-image, or a prebuilt kind node image)")
			fs.DurationVar(&s.RuntimeRequestTimeout, "runtime-request-timeout", 0,
				fmt.Sprintf("kubelet runtimeRequestTimeout (0: %s)", facts.DefaultRuntimeRequestTimeout))
			fs.DurationVar(&s.NRIRequestTimeout, "nri-request-timeout", 0,
				fmt.Sprintf("runtime's NRI plugin request timeout (0: %s)", facts.DefaultNRIRequestTimeout))
			fs.DurationVar(&s.NRIRegistrationTimeout, "nri-registration-timeout", 0,
				fmt.Sprintf("runtime's NRI plugin registration timeout (0: %s)", facts.DefaultNRIRegistrationTimeout))
			fs.DurationVar(&s.KubeletSyncFrequency, "kubelet-sync-frequency", 0,
				fmt.Sprintf("kubelet syncFrequency: the pods' resync, which paces the DRA prepare retries (0: %s; the kubelet's own default is %s)", facts.DefaultKubeletSyncFrequency, facts.KubeletBuiltinSyncFrequency))
			kubeconfig := fs.String("kubeconfig", "", "where to write the cluster's kubeconfig (required)")
			wait := fs.Duration("wait", 3*time.Minute, "how long to wait for the nodes to be Ready")
			fs.BoolVar(&s.Retain, "retain", false, "keep the nodes of a failed create, to debug them (delete-cluster removes them)")
			reuse := fs.Bool("reuse", false, "if the cluster exists, keep it and only write its kubeconfig; it must be one faultline made with the same settings")
			return func(ctx context.Context, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				if s.NodeImage == "" || *kubeconfig == "" {
					return usageError{fmt.Errorf("--node-image and --kubeconfig are required")}
				}
				if err := checkName(s.Name); err != nil {
					return err
				}
				rt, err := runtimes.Lookup(*runtime)
				if err != nil {
					return usageError{fmt.Errorf("--runtime: %w", err)}
				}
				s.Runtime = rt
				for flag, d := range map[string]time.Duration{
					"--runtime-request-timeout":  s.RuntimeRequestTimeout,
					"--nri-request-timeout":      s.NRIRequestTimeout,
					"--nri-registration-timeout": s.NRIRegistrationTimeout,
					"--kubelet-sync-frequency":   s.KubeletSyncFrequency,
				} {
					if err := kindcluster.CheckTimeout(d); err != nil {
						return usageError{fmt.Errorf("%s %w", flag, err)}
					}
				}
				if *reuse {
					exists, err := kindcluster.Exists(s.Name)
					if err != nil {
						return err
					}
					if exists {
						f, err := kindcluster.Reuse(ctx, s, *kubeconfig)
						if err != nil {
							return fmt.Errorf("%w\n(delete it with: faultline delete-cluster --name %s)", err, s.Name)
						}
						fmt.Fprintf(os.Stderr, "reusing cluster %q: %s %s, Kubernetes %s, made by %s\n",
							s.Name, f.Runtime, f.RuntimeVersion, f.KubernetesVersion, f.CreatedBy)
						return nil
					}
				}
				s.CgroupV1 = kindcluster.HostIsCgroupV1()
				return kindcluster.Create(ctx, s, *kubeconfig, *wait)
			}
		})
	register("delete-cluster", "delete a kind cluster (a missing one is fine)",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			name := fs.String("name", "faultline", "cluster name")
			kubeconfig := fs.String("kubeconfig", "", "kubeconfig to remove the cluster's entry from (the one create-cluster wrote; default: none, not even $KUBECONFIG or ~/.kube/config)")
			return func(ctx context.Context, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				if err := checkName(*name); err != nil {
					return err
				}
				return kindcluster.Delete(*name, *kubeconfig)
			}
		})
	register("export-logs", "collect the cluster's node logs into a directory",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			name := fs.String("name", "faultline", "cluster name")
			dir := fs.String("dir", "", "directory to write the logs into (required)")
			return func(ctx context.Context, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				if *dir == "" {
					return usageError{fmt.Errorf("--dir is required")}
				}
				if err := checkName(*name); err != nil {
					return err
				}
				return kindcluster.ExportLogs(*name, *dir, os.Stderr)
			}
		})
	register("load-archive", "copy the images of a docker archive (FILE REF...) into the cluster's nodes, without an engine's image store",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			name := fs.String("name", "faultline", "cluster name")
			return func(ctx context.Context, args []string) error {
				if len(args) < 2 {
					return usageError{fmt.Errorf("want FILE REF... (the archive and the images in it to load)")}
				}
				if err := checkName(*name); err != nil {
					return err
				}
				return kindcluster.LoadArchive(ctx, *name, args[0], args[1:]...)
			}
		})
	register("load-images", "copy local Docker images into the cluster's nodes",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			name := fs.String("name", "faultline", "cluster name")
			return func(ctx context.Context, args []string) error {
				if len(args) == 0 {
					return usageError{fmt.Errorf("name at least one image")}
				}
				if err := checkName(*name); err != nil {
					return err
				}
				return kindcluster.LoadImages(ctx, *name, args...)
			}
		})
}
