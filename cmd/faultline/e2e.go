package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/faultline-k8s/faultline/clusters/engine"
	"github.com/faultline-k8s/faultline/internal/imageref"
	"github.com/faultline-k8s/faultline/internal/interrupt"
	"github.com/faultline-k8s/faultline/pipeline"
	"github.com/faultline-k8s/faultline/suites/all"
	"github.com/faultline-k8s/faultline/vocab/facts"
	"github.com/faultline-k8s/faultline/vocab/fakemodes"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// listFlag collects a repeatable, comma-separable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func init() {
	register("e2e", "the whole run: engine, images, kind clusters per runtime (side by side; a second for the Serial specs), the suites, the report, cleanup",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			var o pipeline.Options
			var suites, rts listFlag
			fs.Var(&suites, "suite", "suites to run: "+strings.Join(pipeline.Suites, ", ")+" or all (default all); repeatable or comma-separated")
			fs.Var(&rts, "runtime", "node runtime: "+strings.Join(runtimes.Names(), ", ")+" or all (default "+runtimes.Default+"); several run side by side, each on cluster <cluster-name>-<runtime>")
			fs.StringVar(&o.Focus, "focus", "", "Ginkgo --focus (a regular expression on spec names)")
			fs.StringVar(&o.LabelFilter, "label-filter", "", "Ginkgo --label-filter (e.g. smoke, '!Slow'); --suite adds Suite:<name>")
			fs.IntVar(&o.Procs, "procs", 0, "parallel Ginkgo processes per cluster (Serial specs run alone); 0: as many as the machine carries, measured as the run starts (1.5 per idle core, 2 to 6)")
			fs.StringVar(&o.Artifacts, "artifacts", "_artifacts", "where JUnit, logs, timings and the report go")
			fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "run against this existing cluster: nothing is built or created")
			fs.StringVar(&o.FakesImage, "fakes-image", "", "image of the fakes the cluster can pull (with --kubeconfig, default: this build's in --image-registry; built and loaded otherwise)")
			fs.StringVar(&o.ImageRegistry, "image-registry", "", "with --kubeconfig: the registry the cluster pulls faultline's images from, as `faultline images push` put them (default "+imageref.DefaultRegistry+")")
			fs.BoolVar(&o.Disruptive, "disruptive", false, "with --kubeconfig: also run the Disruptive specs (they restart a node's container runtime); faultline's own clusters always run them")
			fs.BoolVar(&o.Keep, "keep", false, "keep the clusters (and an engine this run started); the next --keep run reuses a cluster whose facts match")
			fs.BoolVar(&o.ReplaceCluster, "replace-cluster", false, "delete a kind cluster of the same name that this run did not create (refused otherwise)")
			fs.StringVar(&o.ClusterName, "cluster-name", "faultline", "kind cluster name (the Serial specs' cluster: <name>-serial)")
			fs.Func("serial-cluster", "where each stack's Serial specs run: always on a second cluster of the stack (<cluster-name>-serial) beside the rest, never (after the rest on its one cluster), or auto (default: a second cluster where the machine has two idle cores per cluster, measured as the run starts)", func(v string) error {
				mode, ok := pipeline.SerialClusterModes[v]
				if !ok {
					return fmt.Errorf("want auto, always or never, got %q", v)
				}
				o.SerialCluster = mode
				return nil
			})
			fs.StringVar(&o.NodeImage, "node-image", "", "use this node image instead of building one (one runtime)")
			var kubes listFlag
			fs.Var(&kubes, "kubernetes-version", "Kubernetes releases of the node images: "+strings.Join(versions.Kubernetes(), ", ")+" or all (default the first); each runtime runs on each, side by side; repeatable or comma-separated")
			fs.StringVar(&o.KubernetesSrc, "kubernetes-src", "", "build Kubernetes from this checkout instead of the pinned release")
			fs.StringVar(&o.NRIVersion, "nri-version", "", "build the runtimes with this github.com/containerd/nri release instead of their own (e.g. v0.12.5)")
			var patches, gates, ctdPatches, crioPatches, nriPatches, fakeModes listFlag
			fs.Var(&patches, "kubernetes-patch", "apply this patch (git diff format, relative to a kubernetes checkout) to the pinned Kubernetes releases before building them (e.g. clusters/patches/kep-5322/0001-kubelet-dra-permanent-failures.patch); repeatable, applied in order; the stacks' keys name the series")
			fs.IntVar(&o.Workers, "workers", 0, "worker nodes of new clusters beside the control plane (0: one node); pods network across nodes; the stacks' keys say multinode")
			fs.Var(&ctdPatches, "containerd-patch", "apply this patch (git diff format, relative to a containerd checkout) to the containerd release the containerd stacks build; repeatable, applied in order; their keys name the series")
			fs.Var(&crioPatches, "crio-patch", "apply this patch (git diff format, relative to a cri-o checkout) to the pinned CRI-O release; repeatable, applied in order; the CRI-O stacks' keys name the series")
			fs.Var(&nriPatches, "nri-patch", "apply this patch (git diff format, relative to a containerd/nri checkout) to the NRI release each runtime is built with (its own, or --nri-version); repeatable, applied in order; the stacks' keys name the series")
			fs.Var(&fakeModes, "fake-mode", "run the fakes with this documented misbehaviour ("+strings.Join(fakemodes.Names(), ", ")+"), for a negative control (judge/controls): the stacks' keys name it; repeatable or comma-separated")
			fs.Var(&gates, "feature-gates", "Kubernetes feature gates of new clusters, on every component (Name=true,...); repeatable")
			fs.StringVar(&o.ContainerdSrc, "containerd-src", "", "build containerd from this checkout instead of the pinned release")
			fs.StringVar(&o.ContainerdVersion, "containerd-version", "", "build this containerd release (one the Go module proxy serves, e.g. v2.3.7) instead of the pinned one; the containerd stacks' variant names it")
			fs.DurationVar(&o.RuntimeRequestTimeout, "runtime-request-timeout", 0, "kubelet runtimeRequestTimeout of new clusters (default: vocab/facts, 30s)")
			fs.IntVar(&o.Repeat, "repeat", 1, "run the selection this many times on each cluster; the report says per requirement whether its verdict varied")
			fs.StringVar(&o.Expectations, "expectations", "", "judge by these expectations (a file or a directory of <runtime>-<major.minor>.yaml) instead of the built-in ones")
			fs.BoolVar(&o.AllowIncomplete, "allow-incomplete", false, "exit 0, not 4, when a selected requirement was not checked (skipped or inconclusive) and nothing is unexpected; the report says so either way")
			fs.DurationVar(&o.NRIRequestTimeout, "nri-request-timeout", 0, "the runtime's NRI plugin request timeout of new clusters (default: vocab/facts, 2s)")
			fs.DurationVar(&o.KubeletSyncFrequency, "kubelet-sync-frequency", 0, fmt.Sprintf("kubelet syncFrequency of new clusters: the pods' resync, which paces the DRA prepare retries (default: vocab/facts, %s; the kubelet's own default is %s)", facts.DefaultKubeletSyncFrequency, facts.KubeletBuiltinSyncFrequency))
			return func(ctx context.Context, args []string) error {
				rtList, err := runtimes.Parse(rts...)
				if err != nil {
					return usageError{fmt.Errorf("--runtime: %w", err)}
				}
				// Empty elements are kept for the run to refuse: a stray comma
				// must not silently be the default release.
				o.KubernetesVersions = splitKeepEmpty(kubes)
				o.KubernetesPatches = patches
				o.ContainerdPatches, o.CRIOPatches, o.NRIPatches = ctdPatches, crioPatches, nriPatches
				o.FakeModes = splitKeepEmpty(fakeModes)
				if o.FeatureGates, err = facts.ParseGates(gates...); err != nil {
					return usageError{fmt.Errorf("--feature-gates: %w", err)}
				}
				if len(o.KubernetesVersions) == 1 && o.KubernetesVersions[0] == "all" {
					o.KubernetesVersions = versions.Kubernetes()
				}
				if o.Repeat < 1 {
					return usageError{fmt.Errorf("--repeat wants a positive number, got %d", o.Repeat)}
				}
				if o.ClusterName == "" {
					// The run's defaults would take the zero value for the default name.
					return usageError{fmt.Errorf("--cluster-name is empty")}
				}
				root, err := os.Getwd()
				if err != nil {
					return err
				}
				o.RepoRoot, o.CacheDir, o.Runtimes, o.RuntimesGiven, o.Suites, o.SuiteArgs = root, defaultCacheDir(), rtList, len(rts) > 0, suites, args
				o.Out, o.OptionName = os.Stderr, e2eFlag
				o.SpecTree = pipeline.SpecTree{Description: all.Description, Specs: all.Preview()}
				return e2eError(pipeline.Run(ctx, cleanupContext(ctx), o))
			}
		})
	register("engine", "start a Docker engine if none answers, or stop one faultline started (start|stop)",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				verb := strings.Join(args, " ")
				if verb != "start" && verb != "stop" {
					return usageError{fmt.Errorf("want 'start' or 'stop', got %q", verb)}
				}
				root, err := os.Getwd()
				if err != nil {
					return err
				}
				opts := engine.DefaultOptions(root, os.Stderr)
				if verb == "stop" {
					return engine.StopStarted(ctx, opts)
				}
				e, err := engine.Ensure(ctx, opts)
				if err != nil {
					if e != nil {
						_ = e.Stop(cleanupContext(ctx))
					}
					return err
				}
				e.Keep()
				return nil
			}
		})
}

// cleanupContext is the context cleanup runs under: cancelled only by a
// second interrupt.
func cleanupContext(ctx context.Context) context.Context {
	if c, ok := ctx.Value(cleanupKey{}).(context.Context); ok {
		return c
	}
	return context.WithoutCancel(ctx)
}

type cleanupKey struct{}

func withSignals(parent context.Context) (context.Context, *interrupt.Signals) {
	s := interrupt.Watch(parent, os.Stderr)
	return context.WithValue(s.Work, cleanupKey{}, s.Cleanup), s
}

// splitKeepEmpty flattens repeated and comma-separated values, keeping the
// empty ones ("," is two).
func splitKeepEmpty(l listFlag) []string {
	var out []string
	for _, v := range l {
		for _, part := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(part))
		}
	}
	return out
}

// splitList flattens repeated and comma-separated values.
func splitList(l listFlag) []string {
	var out []string
	for _, v := range l {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}
