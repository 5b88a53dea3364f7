package nodeimage

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"path/filepath"
	"runtime/debug"
)

// RuntimeModuleVersion says which version of module the runtime of this
// builder's node image links, read from the build information Go put into
// the runtime's binary (a replace's version when the build replaced it,
// --nri-version; the patched release's for --nri-patch): the NRI a runtime
// vendors, for the report and the specs that depend on its release. It fails when
// the binary is not built yet.
func (b *Builder) RuntimeModuleVersion(ctx context.Context, module string) (string, error) {
	plan, err := b.Plan(ctx)
	if err != nil {
		return "", err
	}
	rt := b.Runtime
	for _, s := range plan.Steps {
		if s.Kind != StepGoBinaries || s.Name != rt.Name {
			continue
		}
		binary := filepath.Join(s.Output, rt.Name)
		info, err := buildinfo.ReadFile(binary)
		if err != nil {
			return "", fmt.Errorf("the build information of %s: %w", binary, err)
		}
		for _, d := range info.Deps {
			if d.Path != module {
				continue
			}
			return linkedVersion(d), nil
		}
		return "", fmt.Errorf("%s does not link %s", binary, module)
	}
	return "", fmt.Errorf("the node image of %s builds no %s binaries", rt.Name, rt.Name)
}

// linkedVersion is the release of a dependency a binary links: a replace
// by a release names it; one by a directory (a patched release,
// --nri-patch) says "(devel)", and the version required is the release the
// tree was made from.
func linkedVersion(d *debug.Module) string {
	if d.Replace != nil && d.Replace.Version != "" && d.Replace.Version != "(devel)" {
		return d.Replace.Version
	}
	return d.Version
}
