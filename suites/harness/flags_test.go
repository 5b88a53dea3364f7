package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/kubernetes/test/e2e/framework"
)

// TestRelativeKubeconfigIsExplained: the README's developer loop runs the
// test binary in ./suites, so a relative --kubeconfig that is not there is
// explained in the one line the binary prints.
func TestRelativeKubeconfigIsExplained(t *testing.T) {
	saved := framework.TestContext.KubeConfig
	t.Cleanup(func() { framework.TestContext.KubeConfig = saved })

	framework.TestContext.KubeConfig = "_artifacts/containerd/kubeconfig"
	err := checkFlags(true)
	wd, _ := os.Getwd()
	if err == nil || !strings.Contains(err.Error(), "relative path is read from") || !strings.Contains(err.Error(), wd) ||
		!strings.Contains(err.Error(), `"$PWD/_artifacts/containerd/kubeconfig"`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v", err)
	}

	framework.TestContext.KubeConfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := checkFlags(true); err == nil || strings.Contains(err.Error(), "relative") {
		t.Errorf("an absolute path that is missing: err = %v", err)
	}
}
