package nri

import (
	"testing"

	"github.com/faultline-k8s/faultline/suites/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

func TestNRI(t *testing.T) { harness.RunSuite(t, "faultline NRI suite") }

var _ = harness.DescribeSmoke("nri")
