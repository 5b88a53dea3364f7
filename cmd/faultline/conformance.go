package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/faultline-k8s/faultline/clusters/images"
	"github.com/faultline-k8s/faultline/conformance"
)

func init() {
	register("conformance-image", "build the conformance image (the suites, ginkgo and the runner) without a container engine; save it or push it",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			archs := fs.String("arch", "amd64,arm64", "architectures, comma-separated (linux)")
			oci := fs.String("oci", "", "write the image index as an OCI image layout into this directory")
			archive := fs.String("docker-archive", "", "write the first architecture's image as a docker archive to this file (kind load image-archive)")
			push := fs.String("push", "", "push the image index to this reference (registry/repository:tag)")
			tag := fs.String("tag", "faultline/conformance:dev", "the image's name in the docker archive")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usageError{fmt.Errorf("unexpected arguments %q", args)}
				}
				if *oci == "" && *archive == "" && *push == "" {
					return usageError{fmt.Errorf("say where the image goes: --oci DIR, --docker-archive FILE or --push REF")}
				}
				list := strings.Split(*archs, ",")
				for _, a := range list {
					if a != "amd64" && a != "arm64" {
						return usageError{fmt.Errorf("--arch %q: want amd64 and/or arm64", a)}
					}
				}
				root, err := os.Getwd()
				if err != nil {
					return err
				}
				work, err := os.MkdirTemp("", "faultline-conformance-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(work)
				fmt.Fprintf(os.Stderr, "faultline: compiling the conformance image's binaries for %s\n", strings.Join(list, ", "))
				spec, err := conformance.ImageSpec(ctx, root, work, list)
				if err != nil {
					return err
				}
				idx, err := images.Index(spec)
				if err != nil {
					return err
				}
				if *oci != "" {
					if err := images.SaveLayout(*oci, idx); err != nil {
						return err
					}
					fmt.Fprintf(os.Stderr, "faultline: OCI layout in %s\n", *oci)
				}
				if *archive != "" {
					img, err := images.Image(spec, list[0])
					if err != nil {
						return err
					}
					if err := images.SaveDockerArchive(*archive, *tag, img); err != nil {
						return err
					}
					fmt.Fprintf(os.Stderr, "faultline: docker archive of %s (%s) in %s\n", *tag, list[0], *archive)
				}
				if *push != "" {
					if err := images.Push(ctx, *push, idx); err != nil {
						return err
					}
					fmt.Fprintf(os.Stderr, "faultline: pushed %s\n", *push)
				}
				return nil
			}
		})
}
