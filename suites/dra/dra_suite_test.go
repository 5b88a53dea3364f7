package dra

import (
	"testing"

	"github.com/faultline-k8s/faultline/suites/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

func TestDRA(t *testing.T) { harness.RunSuite(t, "faultline DRA suite") }

var _ = harness.DescribeSmoke("dra")
