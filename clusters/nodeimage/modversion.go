package nodeimage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuiltModuleVersion says which version of module the last build of a
// runtime's component linked (Go's choice in the component's build module
// under cacheDir): the NRI a runtime vendors, for the report. It fails when
// that runtime was never built here (a --node-image run).
func BuiltModuleVersion(ctx context.Context, cacheDir, runtime, module string) (string, error) {
	dir := filepath.Join(cacheDir, "modules", runtime)
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("no build of %s under %s", runtime, cacheDir)
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", module)
	cmd.Dir = dir
	// Offline: the build downloaded every module it needed.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GONOSUMDB=k8s.io")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s in %s: %w", module, dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}
