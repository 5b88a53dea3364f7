package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultline-k8s/faultline/clusters/report"
)

func init() {
	register("report", "print the result matrix of a run's JUnit files and write summary.md beside them",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			dir := fs.String("artifacts", "_artifacts", "the run's artifacts directory (<runtime>/<suite>/junit.xml)")
			return func(ctx context.Context, args []string) error {
				cells, err := report.Read(*dir)
				if err != nil {
					return err
				}
				if len(cells) == 0 {
					return fmt.Errorf("no <runtime>/<suite>/junit.xml under %s", *dir)
				}
				var out strings.Builder
				report.Write(&out, cells)
				fmt.Print(out.String())
				return os.WriteFile(filepath.Join(*dir, "summary.md"), []byte(out.String()), 0o644)
			}
		})
}
