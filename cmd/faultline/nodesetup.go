package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"

	"github.com/faultline-k8s/faultline/fixtures"
	"github.com/faultline-k8s/faultline/internal/imageref"
	"github.com/faultline-k8s/faultline/nodesetup"
	"github.com/faultline-k8s/faultline/nodesetup/deploy"
)

func init() {
	register("node-setup", "install or remove the faultline-slow runtime handler (runc-slow) on a cluster's nodes, through a privileged DaemonSet (opt-in)",
		func(fs *flag.FlagSet) func(context.Context, []string) error {
			fs.Usage = func() {
				fmt.Fprintf(fs.Output(), `usage: faultline node-setup install|remove [flags]

install: a privileged DaemonSet (fixtures/nodesetup, namespace %s) installs
  runc-slow and the %s runtime handler into each selected node's
  containerd or CRI-O, restarts the runtime once where its configuration
  changed, and stays (a node that joins later gets the handler too).
remove: the DaemonSet restores each node's files as they were before the
  install, byte for byte, restarts the runtime where they changed, and is
  deleted with its namespace.
Each node's outcome is printed; the exit code is 3 if any node failed.

flags:
`, deploy.Namespace, nodesetup.HandlerName)
				fs.PrintDefaults()
			}
			kubeconfig := fs.String("kubeconfig", "", "the cluster's kubeconfig (default: $KUBECONFIG or ~/.kube/config and its current context, as kubectl)")
			image := fs.String("image", "", "the fakes image, which holds node-setup and runc-slow (default: this build's in --image-registry; the nodes must be able to pull it)")
			registry := fs.String("image-registry", "", "the registry the nodes pull faultline's images from (`faultline images push`; default "+imageref.DefaultRegistry+")")
			pullPolicy := fs.String("pull-policy", string(corev1.PullIfNotPresent), "imagePullPolicy of the image: Always, IfNotPresent or Never")
			var selector map[string]string
			fs.Func("node-selector", "only the nodes with these labels (`k=v,k2=v2`; always kubernetes.io/os=linux)", func(v string) error {
				sel, err := fixtures.ParseNodeSelector(v)
				selector = sel
				return err
			})
			timeout := fs.Duration("timeout", deploy.DefaultTimeout, "how long to wait for every node's pod to be done (an image pull, the runtime's restart), and on remove for the DaemonSet to be gone")
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					fs.Usage()
					return usageError{errors.New("name one mode: install or remove")}
				}
				mode := args[0]
				if mode != nodesetup.ModeInstall && mode != nodesetup.ModeRemove {
					return usageError{fmt.Errorf("unknown mode %q: want install or remove", mode)}
				}
				if *image == "" {
					*image = imageref.Fakes(*registry)
				}
				if err := fixtures.CheckPullPolicy(*pullPolicy); err != nil {
					return usageError{fmt.Errorf("--pull-policy: %w", err)}
				}
				if *timeout <= 0 {
					return usageError{fmt.Errorf("--timeout must be positive, got %s", *timeout)}
				}
				config, where, err := loadKubeconfig(*kubeconfig)
				if err != nil {
					return err
				}
				cluster, err := deploy.New(config)
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "node-setup %s on %s\n", mode, where)
				results, err := cluster.Run(ctx, mode, deploy.Options{
					Image: *image, PullPolicy: *pullPolicy, NodeSelector: selector, Timeout: *timeout, Progress: os.Stderr,
				})
				for _, r := range results {
					fmt.Println(r.Summary())
				}
				return err
			}
		})
}
