package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/faultline-k8s/faultline/clusters/gomod"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

func init() {
	register("kube-replaces", "print (or write into a go.mod) the k8s.io staging replaces of the pinned Kubernetes release",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			write := fs.String("write", "", "go.mod to rewrite: drop its k8s.io replaces, add the release's, require k8s.io/kubernetes at the release")
			release := fs.String("kubernetes-version", "", "the release whose e2e framework the suites build with: "+strings.Join(versions.Kubernetes(), ", ")+" (default: the one the --write go.mod requires, else "+versions.Default().Kubernetes()+")")
			return func(ctx context.Context, args []string) error {
				kube := *release
				if kube == "" && *write != "" {
					if data, err := os.ReadFile(*write); err == nil {
						kube, _ = versions.FrameworkRelease(data)
					}
				}
				if kube == "" {
					kube = versions.Default().Kubernetes()
				}
				if _, err := versions.ForKubernetes(kube); err != nil {
					return usageError{fmt.Errorf("--kubernetes-version: %w", err)}
				}
				releaseGoMod, err := gomod.DownloadGoMod(ctx, "k8s.io/kubernetes", kube)
				if err != nil {
					return err
				}
				replaces, err := gomod.StagingReplaces(releaseGoMod, kube, "")
				if err != nil {
					return err
				}
				if *write == "" {
					for _, r := range replaces {
						fmt.Println(r)
					}
					return nil
				}
				return rewriteGoMod(*write, kube, replaces)
			}
		})
}

func rewriteGoMod(path, kube string, replaces []gomod.Replace) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		return err
	}
	for _, r := range f.Replace {
		if strings.HasPrefix(r.Old.Path, "k8s.io/") {
			if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return err
			}
		}
	}
	if err := f.AddRequire("k8s.io/kubernetes", kube); err != nil {
		return err
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		return err
	}
	// One block, not one statement per module: modfile has no call that makes a
	// block, so append it as text and let the parser check and format it.
	var block strings.Builder
	fmt.Fprintf(&block, "\n// Staging modules of k8s.io/kubernetes %s. Regenerate with hack/update-replaces.sh.\nreplace (\n", kube)
	for _, r := range replaces {
		fmt.Fprintf(&block, "\t%s\n", r)
	}
	block.WriteString(")\n")
	f, err = modfile.Parse(path, append(out, block.String()...), nil)
	if err != nil {
		return err
	}
	out, err = f.Format()
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
