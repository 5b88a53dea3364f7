package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/faultline-k8s/faultline/clusters/kindcluster"
	"github.com/faultline-k8s/faultline/conformance/imageset"
	"github.com/faultline-k8s/faultline/internal/imageref"
)

func init() {
	register("images", "build faultline's images (fakes, conformance) without a container engine: save DIR | push REGISTRY | load CLUSTER",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			archs := fs.String("arch", "amd64,arm64", "architectures, comma-separated (linux); load takes the host's")
			registry := fs.String("registry", "", "save, load: the registry the images are named for (default "+imageref.DefaultRegistry+"); the conformance image's runner pulls the fakes image from it")
			fs.Usage = func() {
				fmt.Fprintf(fs.Output(), `usage: faultline images [flags] save DIR | push REGISTRY | load CLUSTER

  save DIR        <name>.oci.tar (every architecture) and <name>-<arch>.docker.tar
  push REGISTRY   both images, every architecture, to REGISTRY (e.g. ghcr.io/me)
  load CLUSTER    the host architecture's images into the nodes of kind cluster CLUSTER

The images are %s/%s:%s and .../%s:%s (internal/imageref): tagged with this
build's version, so a run of this build finds them in the registry it names.

flags:
`, "REGISTRY", imageref.FakesName, imageref.Tag(), imageref.ConformanceName, imageref.Tag())
				fs.PrintDefaults()
			}
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 {
					return usageError{fmt.Errorf("want save DIR, push REGISTRY or load CLUSTER (got %q)", args)}
				}
				verb, target := args[0], args[1]
				list := strings.Split(*archs, ",")
				for _, a := range list {
					if a != "amd64" && a != "arm64" {
						return usageError{fmt.Errorf("--arch %q: want amd64 and/or arm64", a)}
					}
				}
				reg := *registry
				switch verb {
				case "save":
				case "push":
					if reg != "" {
						return usageError{fmt.Errorf("push names its registry as its argument; --registry is for save and load")}
					}
					reg = target
				case "load":
					if err := kindcluster.ValidateName(target); err != nil {
						return usageError{err}
					}
					list = []string{runtime.GOARCH}
				default:
					return usageError{fmt.Errorf("unknown %q: want save, push or load", verb)}
				}
				root, err := os.Getwd()
				if err != nil {
					return err
				}
				work, err := os.MkdirTemp("", "faultline-images-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(work)
				fmt.Fprintf(os.Stderr, "faultline: compiling the images' binaries for %s\n", strings.Join(list, ", "))
				set, err := imageset.Build(ctx, root, work, reg, list)
				if err != nil {
					return err
				}
				switch verb {
				case "save":
					files, err := set.Save(target)
					for _, f := range files {
						fmt.Println(f)
					}
					return err
				case "push":
					if err := set.Push(ctx); err != nil {
						return err
					}
					if !imageref.IsRelease() {
						fmt.Fprintf(os.Stderr, "faultline: %s is a devel tag: the next push of this commit overwrites it, and nodes that cached this one keep it (IfNotPresent)\n", imageref.Tag())
					}
					for _, im := range set.Images {
						fmt.Println(im.Ref)
					}
					return nil
				default:
					for _, im := range set.Images {
						archive := filepath.Join(work, im.Name+".docker.tar")
						ref, err := set.DockerArchive(im.Name, list[0], archive)
						if err != nil {
							return err
						}
						if err := kindcluster.LoadArchive(ctx, target, archive, ref); err != nil {
							return err
						}
						fmt.Println(ref)
					}
					return nil
				}
			}
		})
}
