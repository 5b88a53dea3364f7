package cri

import (
	"testing"

	"github.com/faultline-k8s/faultline/suites/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

func TestCRI(t *testing.T) { harness.RunSuite(t, "faultline CRI suite") }

var _ = harness.DescribeSmoke("cri")
