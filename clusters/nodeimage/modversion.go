package nodeimage

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"path/filepath"
)

// RuntimeModuleVersion says which version of module the runtime of this
// builder's node image links, read from the build information Go put into
// the runtime's binary (a replace's version when the build replaced it,
// --nri-version): the NRI a runtime vendors, for the report. It fails when
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
			if d.Replace != nil && d.Replace.Version != "" {
				return d.Replace.Version, nil
			}
			return d.Version, nil
		}
		return "", fmt.Errorf("%s does not link %s", binary, module)
	}
	return "", fmt.Errorf("the node image of %s builds no %s binaries", rt.Name, rt.Name)
}
