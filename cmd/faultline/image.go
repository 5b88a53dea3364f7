package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultline-k8s/faultline/clusters/nodeimage"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

func init() {
	register("build-node-image", "build (or reuse) the kind node image from the pinned versions; prints its reference",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			var opts nodeimage.Options
			runtime := fs.String("runtime", runtimes.Default, "container runtime of the node: "+runtimeFlagChoices())
			fs.StringVar(&opts.CacheDir, "cache-dir", defaultCacheDir(), "where built binaries, throwaway modules and build logs are kept")
			fs.StringVar(&opts.RepoRoot, "repo-root", ".", "faultline checkout (for binaries built from it)")
			kube := fs.String("kubernetes-version", "", "Kubernetes release: "+strings.Join(versions.Kubernetes(), ", ")+" (default the first)")
			fs.StringVar(&opts.Sources.Kubernetes, "kubernetes-src", "", "local Kubernetes checkout to build instead of the pinned release")
			fs.StringVar(&opts.Sources.NRI, "nri-version", "", "build the runtime with this github.com/containerd/nri release instead of the one it requires (e.g. v0.12.5)")
			var patches, runtimePatches, nriPatches listFlag
			fs.Var(&patches, "kubernetes-patch", "apply this patch (git diff format, relative to a kubernetes checkout) to the pinned Kubernetes release before building it; repeatable, applied in order")
			fs.Var(&runtimePatches, "runtime-patch", "apply this patch (git diff format, relative to the runtime's checkout: containerd or cri-o) to the runtime's release before building it; repeatable, applied in order")
			fs.Var(&nriPatches, "nri-patch", "apply this patch (git diff format, relative to a containerd/nri checkout) to the NRI release the runtime is built with; repeatable, applied in order")
			fs.StringVar(&opts.Sources.Containerd, "containerd-src", "", "local containerd checkout to build instead of the pinned release")
			fs.StringVar(&opts.Sources.ContainerdVersion, "containerd-version", "", "containerd release to build instead of the pinned one (one the Go module proxy serves, e.g. v2.3.7)")
			fs.StringVar(&opts.DebianMirror, "debian-mirror", "", "Debian archive for debootstrap (default: the one apt uses here)")
			fs.BoolVar(&opts.Force, "force", false, "rebuild everything, ignoring the cache")
			planOnly := fs.Bool("plan", false, "print what would be built or reused, and stop")
			return func(ctx context.Context, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				rt, err := runtimes.Lookup(*runtime)
				if err != nil {
					return usageError{fmt.Errorf("--runtime: %w", err)}
				}
				opts.Runtime = rt
				pins, err := versions.ForKubernetes(*kube)
				if err != nil {
					return usageError{fmt.Errorf("--kubernetes-version: %w", err)}
				}
				opts.Pins = pins
				opts.Sources.KubernetesPatches, opts.Sources.RuntimePatches, opts.Sources.NRIPatches = patches, runtimePatches, nriPatches
				b, err := nodeimage.NewBuilder(ctx, opts)
				if err != nil {
					return usageError{err}
				}
				if *planOnly {
					plan, err := b.Plan(ctx)
					if err != nil {
						return err
					}
					plan.Print(os.Stderr)
					fmt.Println(plan.NodeImage())
					return nil
				}
				ref, err := b.Build(ctx)
				if err != nil {
					return err
				}
				fmt.Println(ref)
				return nil
			}
		})
}

func defaultCacheDir() string {
	if dir := os.Getenv("FAULTLINE_CACHE_DIR"); dir != "" {
		return dir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "faultline")
	}
	return filepath.Join(os.TempDir(), "faultline-cache")
}
