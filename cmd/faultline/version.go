package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/faultline-k8s/faultline/internal/imageref"
	"github.com/faultline-k8s/faultline/internal/version"
)

func init() {
	register("version", "print faultline's version (also in every report's header)",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			tag := fs.Bool("tag", false, "print the tag of this build's images instead (internal/imageref)")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usageError{fmt.Errorf("unexpected arguments %q", args)}
				}
				if *tag {
					fmt.Println(imageref.Tag())
					return nil
				}
				fmt.Println(version.String())
				return nil
			}
		})
}
