// Package harness wires faultline's Ginkgo suites to the Kubernetes e2e framework:
// its flags and conventions, faultline's own flags, the cluster's facts, the
// fixture sets the suites deploy, and the rule that a run without a cluster
// skips instead of failing.
//
// The suites (suites/dra, suites/nri, suites/cri) are packages of one test
// binary (suites/suites_test.go, built as _output/bin/faultline.test). Each
// labels its specs Suite:<name> (Describe), so a label filter picks suites.
package harness

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/internal/imageref"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// Options are faultline's own flags, shared by every suite.
type Options struct {
	// FakesImage holds the fake DRA driver, the fake NRI plugin and the test pod.
	FakesImage string
	// ImageRegistry names where the default FakesImage is pulled from
	// (internal/imageref).
	ImageRegistry string
	// NodeSelector limits the fakes' DaemonSets and the nodes specs pick to
	// the nodes with these labels (--faultline.node-selector k=v,...).
	NodeSelector map[string]string
	// PullPolicy for FakesImage: IfNotPresent for images loaded into kind nodes.
	PullPolicy string
	// Runtime overrides the cluster's container runtime (a vocab/runtimes
	// name or alias); empty: from the cluster's facts.
	Runtime string
	// RuntimeRequestTimeout overrides the kubelet's runtimeRequestTimeout;
	// zero: from the cluster's facts.
	RuntimeRequestTimeout time.Duration
	// NRIRequestTimeout overrides the runtime's NRI plugin request timeout
	// (containerd plugin_request_timeout, CRI-O nri_plugin_request_timeout);
	// zero: from the cluster's facts, else facts.DefaultNRIRequestTimeout.
	NRIRequestTimeout time.Duration
	// KubeletSyncFrequency overrides the kubelet's syncFrequency; zero:
	// from the cluster's facts, else facts.KubeletBuiltinSyncFrequency.
	KubeletSyncFrequency time.Duration
	// DumpDir receives a failed spec's namespace dump, DIR/<namespace>/
	// (dump.go); empty: no dump files.
	DumpDir string
}

// Flags holds the parsed faultline flags. The cluster's facts, with these
// overrides applied, are Cluster().
var Flags Options

func registerFlags(fs *flag.FlagSet) {
	fs.StringVar(&Flags.FakesImage, "faultline.fakes-image", "", "image with faultline's fake driver, plugin and test pod (hack/run-e2e.sh builds and loads it); default: this build's in --faultline.image-registry")
	fs.StringVar(&Flags.ImageRegistry, "faultline.image-registry", "", "the registry the cluster pulls faultline's images from (`faultline images push REGISTRY`); default "+imageref.DefaultRegistry)
	fs.Func("faultline.node-selector", "run the fakes and the specs' pods only on nodes with these labels (`k=v,k2=v2`; always kubernetes.io/os=linux)", func(v string) error {
		sel, err := fixtures.ParseNodeSelector(v)
		Flags.NodeSelector = sel
		return err
	})
	fs.StringVar(&Flags.PullPolicy, "faultline.pull-policy", "IfNotPresent", "imagePullPolicy for the fakes image")
	fs.StringVar(&Flags.Runtime, "faultline.runtime", "", "override the nodes' container runtime ("+runtimeNames()+"); empty: from the cluster's facts (ConfigMap kube-system/faultline-cluster, else node status)")
	fs.DurationVar(&Flags.RuntimeRequestTimeout, "faultline.runtime-request-timeout", 0, "override the kubelet's runtimeRequestTimeout; 0: from the cluster's facts (ConfigMap, else the kubelet's /configz)")
	fs.DurationVar(&Flags.NRIRequestTimeout, "faultline.nri-request-timeout", 0, "override the runtime's NRI plugin request timeout; 0: from the cluster's facts (ConfigMap; a cluster faultline did not make: the default, 2s)")
	fs.DurationVar(&Flags.KubeletSyncFrequency, "faultline.kubelet-sync-frequency", 0, "override the kubelet's syncFrequency; 0: from the cluster's facts (ConfigMap, else the kubelet's /configz; unknown: the kubelet's default, 1m)")
	fs.StringVar(&Flags.DumpDir, "faultline.dump-dir", "", "write a failed spec's namespace into `DIR`/<namespace>/: pods/<pod>.yaml, events.txt, pod-logs/<pod>_<container>.log and fakes/<fixture-ns>_<pod>_<container>.log (the fakes' log lines that mention the namespace); the report links it as DIR's base name/<namespace>; empty: no dump files")
}

func runtimeNames() string { return strings.Join(runtimes.Names(), ", ") }

// haveCluster is set by Main when --kubeconfig was given.
var haveCluster bool

// HaveCluster reports whether the run has a cluster (an explicit --kubeconfig).
func HaveCluster() bool { return haveCluster }

// Main is the TestMain of the test binary: it registers the e2e framework's
// flags and faultline's, answers --list-tests and --list-labels (no cluster
// needed), and checks the cluster flags before any spec runs, so that bad
// input gives one clear line and a non-zero exit.
//
// Only an explicit --kubeconfig selects a cluster. The framework takes the
// flag's default from $KUBECONFIG; Main drops that default, so `go test ./...`
// on a machine with KUBECONFIG set still skips instead of running the specs
// against whatever cluster that names.
func Main(m *testing.M) {
	installNamespaces()
	installDump()
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	registerFlags(flag.CommandLine)
	flag.Parse()

	if rt, err := runtimes.Lookup(Flags.Runtime); Flags.Runtime != "" && err == nil {
		treeRuntime = &rt // a bad name: checkFlags says so
	}
	kubeconfigGiven := flagGiven(flag.CommandLine, clientcmd.RecommendedConfigPathFlag)
	if !kubeconfigGiven {
		framework.TestContext.KubeConfig = ""
	}
	if flagTrue(flag.CommandLine, "list-tests") || flagTrue(flag.CommandLine, "list-labels") {
		// Prints the specs (or labels) of the tree and exits.
		framework.AfterReadingAllFlags(&framework.TestContext)
	}
	if err := checkFlags(kubeconfigGiven); err != nil {
		fmt.Fprintf(os.Stderr, "faultline: %v\n", err)
		os.Exit(2)
	}
	if kubeconfigGiven {
		haveCluster = true
		framework.AfterReadingAllFlags(&framework.TestContext)
	}
	// Which specs run alone can depend on the runtime (serial.go): named
	// by the flag (set above, also to list the specs for a runtime), else
	// read from the cluster. Every process must build the same tree: one
	// that cannot read the runtime stops here rather than guess.
	if kubeconfigGiven && treeRuntime == nil {
		rt, err := readTreeRuntime()
		if err != nil {
			fmt.Fprintf(os.Stderr, "faultline: the cluster's runtime, which decides which specs run alone: %v\n", err)
			os.Exit(1)
		}
		treeRuntime = &rt
	}
	os.Exit(m.Run())
}

// checkFlags validates faultline's flags and, with a cluster, the kubeconfig.
func checkFlags(kubeconfigGiven bool) error {
	if Flags.Runtime != "" {
		if _, err := runtimes.Lookup(Flags.Runtime); err != nil {
			return fmt.Errorf("--faultline.runtime: %v", err)
		}
	}
	for name, d := range map[string]time.Duration{
		"--faultline.runtime-request-timeout": Flags.RuntimeRequestTimeout,
		"--faultline.nri-request-timeout":     Flags.NRIRequestTimeout,
		"--faultline.kubelet-sync-frequency":  Flags.KubeletSyncFrequency,
	} {
		if d < 0 {
			return fmt.Errorf("%s must not be negative (0: from the cluster's facts), got %s", name, d)
		}
	}
	if !kubeconfigGiven {
		return nil
	}
	path := framework.TestContext.KubeConfig
	if path == "" {
		return fmt.Errorf("--kubeconfig is empty (pass --kubeconfig PATH of a reachable cluster)")
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("kubeconfig %s: %v (pass --kubeconfig PATH of a reachable cluster)%s", path, err, relativeHint(path))
	}
	if _, err := clientcmd.LoadFromFile(path); err != nil {
		return fmt.Errorf("kubeconfig %s is not a valid kubeconfig: %v", path, err)
	}
	if Flags.FakesImage == "" {
		Flags.FakesImage = imageref.Fakes(Flags.ImageRegistry)
	}
	return nil
}

// relativeHint explains a relative --kubeconfig that is not there: go test
// and ginkgo run the test binary in the suites' package directory, not where
// the command was typed.
func relativeHint(path string) string {
	if filepath.IsAbs(path) {
		return ""
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	return fmt.Sprintf("; a relative path is read from the directory the test binary runs in, %s (ginkgo and go test run it in the suites directory): pass an absolute one, e.g. \"$PWD/%s\" from where you ran the command", wd, path)
}

// flagGiven reports whether name was set on the command line (not left at
// its default).
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			given = true
		}
	})
	return given
}

func flagTrue(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Value.String() == "true"
}

// SkipWithoutCluster skips t when no cluster was named: `go test ./...`
// compiles every suite but runs no spec without --kubeconfig. A Ginkgo dry
// run (--ginkgo.dry-run) walks the spec tree without a cluster.
func SkipWithoutCluster(t *testing.T) {
	t.Helper()
	if haveCluster {
		return
	}
	if suiteConfig, _ := ginkgo.GinkgoConfiguration(); suiteConfig.DryRun {
		return
	}
	why := "no cluster: pass --kubeconfig PATH and --faultline.fakes-image IMAGE to run the specs (hack/run-e2e.sh does)"
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		why += "; KUBECONFIG alone does not select a cluster"
	}
	t.Skip("faultline: " + why)
}
