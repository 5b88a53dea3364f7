package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/faultline-k8s/faultline/conformance"
	"github.com/faultline-k8s/faultline/internal/imageref"
)

func init() {
	register("manifests", "print a manifest that runs this build's conformance image: "+strings.Join(conformance.ManifestNames(), " | "),
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			registry := fs.String("registry", "", "the registry holding this build's images (`faultline images push REGISTRY`; default "+imageref.DefaultRegistry+")")
			pull := fs.String("pull-policy", "IfNotPresent", "imagePullPolicy of the conformance image")
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{fmt.Errorf("name one manifest: %s", strings.Join(conformance.ManifestNames(), ", "))}
				}
				out, err := conformance.Manifest(args[0], *registry, *pull)
				if err != nil {
					return usageError{err}
				}
				_, err = os.Stdout.Write(out)
				return err
			}
		})
}
