// Package harness wires faultline's Ginkgo suites to the Kubernetes e2e framework:
// its flags and conventions, faultline's own flags, and the rule that a suite
// without a cluster skips instead of failing.
package harness

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kubernetes/test/e2e/framework"
)

// Options are faultline's own flags, shared by every suite.
type Options struct {
	// FakesImage holds the fake DRA driver, the fake NRI plugin and the test pod.
	FakesImage string
	// PullPolicy for FakesImage: IfNotPresent for images loaded into kind nodes.
	PullPolicy string
	// Runtime names the node's container runtime, for reports and known
	// discrepancies (containerd, cri-o); empty means detect from the node.
	Runtime string
	// NRIRequestTimeout is the runtime's NRI plugin request timeout (containerd
	// plugin_request_timeout, CRI-O nri_plugin_request_timeout): specs stall
	// plugins past it and bound their waits by it.
	NRIRequestTimeout time.Duration
}

// Flags holds the parsed faultline flags.
var Flags Options

func registerFlags(fs *flag.FlagSet) {
	fs.StringVar(&Flags.FakesImage, "faultline.fakes-image", "", "image with faultline's fake driver, plugin and test pod (hack/run-e2e.sh builds and loads it)")
	fs.StringVar(&Flags.PullPolicy, "faultline.pull-policy", "IfNotPresent", "imagePullPolicy for the fakes image")
	fs.StringVar(&Flags.Runtime, "faultline.runtime", "", "the nodes' container runtime (containerd, cri-o); empty: read it from the node")
	fs.DurationVar(&Flags.NRIRequestTimeout, "faultline.nri-request-timeout", 2*time.Second, "the runtime's NRI plugin request timeout (hack/run-e2e.sh --nri-request-timeout sets it in the cluster)")
}

// haveCluster is set by Main when a kubeconfig was given.
var haveCluster bool

// Main is the TestMain of every suite: it registers the e2e framework's flags and
// faultline's, and checks the kubeconfig before any spec runs, so that bad input
// gives one clear line and a non-zero exit.
func Main(m *testing.M) {
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	registerFlags(flag.CommandLine)
	flag.Parse()

	if framework.TestContext.KubeConfig != "" {
		if err := checkKubeconfig(framework.TestContext.KubeConfig); err != nil {
			fmt.Fprintf(os.Stderr, "faultline: %v\n", err)
			os.Exit(2)
		}
		if Flags.FakesImage == "" {
			fmt.Fprintln(os.Stderr, "faultline: --faultline.fakes-image is required with a cluster (hack/run-e2e.sh builds and passes it)")
			os.Exit(2)
		}
		haveCluster = true
		framework.AfterReadingAllFlags(&framework.TestContext)
	}
	os.Exit(m.Run())
}

func checkKubeconfig(path string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("kubeconfig %s: %v (pass --kubeconfig PATH of a reachable cluster)", path, err)
	}
	if _, err := clientcmd.LoadFromFile(path); err != nil {
		return fmt.Errorf("kubeconfig %s is not a valid kubeconfig: %v", path, err)
	}
	return nil
}

// RunSuite runs the suite's specs, or skips them when no cluster was named: `go
// test ./...` compiles every suite but runs no spec without --kubeconfig (or
// KUBECONFIG).
func RunSuite(t *testing.T, name string) {
	if !haveCluster {
		t.Skipf("%s: no cluster (pass --kubeconfig or set KUBECONFIG; hack/run-e2e.sh does both)", name)
	}
	gomega.RegisterFailHandler(framework.Fail)
	ginkgo.RunSpecs(t, name)
}
