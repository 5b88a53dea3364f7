// Package suites is faultline's one test binary, as Kubernetes ships
// e2e.test: every suite's specs, each labelled Suite:<name>.
//
//	go test -c -o _output/bin/faultline.test ./suites
//	_output/bin/faultline.test --list-tests                  # every spec, no cluster needed
//	_output/bin/faultline.test --list-labels
//	go tool ginkgo --label-filter 'Suite:dra && smoke' ./suites -- \
//	  --kubeconfig K --faultline.fakes-image IMG
//
// Without --kubeconfig (KUBECONFIG in the environment does not count) the
// specs skip: that is what `go test ./...` sees.
package suites

import (
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/kubernetes/test/e2e/framework"

	"github.com/faultline-k8s/faultline/suites/all"
	"github.com/faultline-k8s/faultline/suites/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// TestE2E runs the specs of every suite, once.
func TestE2E(t *testing.T) {
	harness.SkipWithoutCluster(t)
	gomega.RegisterFailHandler(framework.Fail)
	ginkgo.RunSpecs(t, all.Description)
}
