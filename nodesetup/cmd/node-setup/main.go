// Command node-setup installs the faultline-slow runtime handler (runc-slow)
// into a node's container runtime, or removes it again, from a pod of the
// node-setup DaemonSet (fixtures/nodesetup, `faultline node-setup`) that has
// the node's / mounted at /host and the node's PID namespace:
//
//	node-setup install [--runtime NAME|auto]   # the handler, runc-slow, its delegate
//	node-setup remove  [--runtime NAME|auto]   # every file as it was before install
//	node-setup ready                           # the readiness probe: done yet?
//
// The files are nodesetup's business (package nodesetup: what it writes,
// and the record it keeps to restore them). This command then restarts the
// runtime when its configuration changed, or when the running runtime
// disagrees with its configuration (a run interrupted between the two), by
// systemctl run chrooted into the node's root; proves the restart by the
// PID serving the CRI socket, which must change; and waits until the
// runtime answers CRI again. It prints one report line (nodesetup.Report)
// for `faultline node-setup`, writes the ready file the readiness probe
// looks for, and sleeps until SIGTERM: a DaemonSet's pod keeps running.
//
// Exit codes: 0 done, 1 failed (the reason on stderr), 2 bad input.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/faultline-k8s/faultline/nodesetup"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

const usageText = `usage: node-setup install|remove [flags]   install or remove the faultline-slow runtime handler
       node-setup ready [--ready-file FILE]      exit 0 once install or remove is done (readiness probe)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options of install and remove.
type options struct {
	mode      string
	root      string
	runtime   string
	runcSlow  string
	readyFile string
	timeout   time.Duration
	exit      bool
	node      string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, usageText)
		return 2
	}
	o := options{mode: args[0], node: os.Getenv("NODE_NAME")}
	flags := flag.NewFlagSet("node-setup "+o.mode, flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.StringVar(&o.readyFile, "ready-file", "/run/node-setup/ready", "the file that says install or remove is done")
	switch o.mode {
	case "ready":
		if err := flags.Parse(args[1:]); err != nil || flags.NArg() > 0 {
			return 2
		}
		if _, err := os.Stat(o.readyFile); err != nil {
			fmt.Fprintf(stderr, "node-setup is not done yet: %v\n", err)
			return 1
		}
		return 0
	case nodesetup.ModeInstall, nodesetup.ModeRemove:
	default:
		fmt.Fprintf(stderr, "node-setup: unknown mode %q\n%s", o.mode, usageText)
		return 2
	}
	flags.StringVar(&o.root, "root", "/host", "where the node's / is mounted")
	flags.StringVar(&o.runtime, "runtime", "auto", "the node's container runtime ("+strings.Join(runtimes.Names(), ", ")+"), or auto: the one whose CRI socket is on the node")
	flags.StringVar(&o.runcSlow, "runc-slow", "/usr/local/bin/runc-slow", "the runc-slow binary to install")
	flags.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for the runtime to answer CRI (after a restart)")
	flags.BoolVar(&o.exit, "exit", false, "exit when done, instead of waiting for SIGTERM as a DaemonSet's pod must")
	if err := flags.Parse(args[1:]); err != nil {
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "node-setup %s: unexpected arguments %v\n", o.mode, flags.Args())
		return 2
	}
	if o.timeout <= 0 {
		fmt.Fprintf(stderr, "node-setup %s: --timeout must be positive, got %s\n", o.mode, o.timeout)
		return 2
	}
	if info, err := os.Stat(o.root); err != nil || !info.IsDir() {
		fmt.Fprintf(stderr, "node-setup %s: --root %s: the node's root is not mounted there (%v)\n", o.mode, o.root, err)
		return 2
	}
	if o.runtime != "auto" {
		if _, err := runtimes.Lookup(o.runtime); err != nil {
			fmt.Fprintf(stderr, "node-setup %s: --runtime: %v\n", o.mode, err)
			return 2
		}
	}
	// A new container of the pod is not ready until it has done its work.
	if err := os.Remove(o.readyFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "node-setup %s: %v\n", o.mode, err)
		return 1
	}

	report, err := setup(ctx, o, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "node-setup %s on node %s: %v\n", o.mode, nodeName(o), err)
		return 1
	}
	fmt.Fprintln(stdout, report.Line())
	if err := os.MkdirAll(filepath.Dir(o.readyFile), 0o755); err != nil {
		fmt.Fprintf(stderr, "node-setup %s: %v\n", o.mode, err)
		return 1
	}
	if err := os.WriteFile(o.readyFile, []byte(report.Line()+"\n"), 0o644); err != nil {
		fmt.Fprintf(stderr, "node-setup %s: %v\n", o.mode, err)
		return 1
	}
	fmt.Fprintf(stdout, "node-setup %s done on node %s\n", o.mode, nodeName(o))
	if o.exit {
		return 0
	}
	<-ctx.Done()
	return 0
}

// noSandboxesOnHandler refuses a remove while pods run on the handler it
// would take away: their shims could no longer stop or delete them.
func noSandboxesOnHandler(ctx context.Context, o options) error {
	recorded, found, err := nodesetup.Installed(o.root)
	if err != nil || !found {
		return err // nothing installed: nothing to take away
	}
	rt, err := runtimes.Lookup(recorded)
	if err != nil {
		return err
	}
	socket, err := nodesetup.HostPath(o.root, rt.SocketPath())
	if err != nil {
		return err
	}
	// Pods deleted a moment ago leave sandboxes until the kubelet's garbage
	// collection (every minute) removes them: wait for those.
	cri := criClient{socket: socket}
	deadline := time.Now().Add(o.timeout)
	for {
		sandboxes, err := cri.sandboxesOn(ctx, nodesetup.HandlerName)
		if err != nil {
			return fmt.Errorf("list the pods on the %s handler: %w", nodesetup.HandlerName, err)
		}
		if len(sandboxes) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d pod sandbox(es) still run on the %s handler after %s (%s): delete their pods first (faultline cleanup), then remove",
				len(sandboxes), nodesetup.HandlerName, o.timeout, strings.Join(sandboxes, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func nodeName(o options) string {
	if o.node == "" {
		return "(NODE_NAME unset)"
	}
	return o.node
}

// setup does the install or remove, restarts the runtime where needed and
// checks what it lists.
func setup(ctx context.Context, o options, log io.Writer) (nodesetup.Report, error) {
	report := nodesetup.Report{Node: o.node, Mode: o.mode}
	rt, err := nodeRuntime(o.root, o.runtime)
	if err != nil && o.mode == nodesetup.ModeInstall {
		return report, err
	}
	var res nodesetup.Result
	if o.mode == nodesetup.ModeInstall {
		fmt.Fprintf(log, "node-setup: installing the %s handler for %s on node %s\n", nodesetup.HandlerName, rt.Name, nodeName(o))
		res, err = nodesetup.Install(o.root, rt, nodesetup.Options{RuncSlow: o.runcSlow})
	} else {
		fmt.Fprintf(log, "node-setup: removing what node-setup installed on node %s\n", nodeName(o))
		if err := noSandboxesOnHandler(ctx, o); err != nil {
			return report, err
		}
		res, err = nodesetup.Remove(o.root)
		if res.Runtime != "" {
			// The record names the runtime it was installed for.
			if recorded, lerr := runtimes.Lookup(res.Runtime); lerr == nil {
				rt = recorded
			}
		}
	}
	report.Result = res
	for _, c := range res.Changes {
		fmt.Fprintf(log, "node-setup: %s\n", c)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(log, "node-setup: %s\n", n)
	}
	if err != nil {
		return report, err
	}
	if rt.Name == "" {
		// remove, nothing recorded, and no runtime found: nothing to check.
		report.Handler = nodesetup.HandlerUnknown
		return report, nil
	}
	report.Result.Runtime = rt.Name

	socket, err := nodesetup.HostPath(o.root, rt.SocketPath())
	if err != nil {
		return report, err
	}
	cri := criClient{socket: socket}
	if err := cri.waitAnswer(ctx, o.timeout, 0); err != nil {
		return report, err
	}
	listed, known, err := cri.handlerListed(ctx)
	if err != nil {
		return report, err
	}
	configured, where, err := nodesetup.Configured(o.root, rt)
	if err != nil {
		return report, fmt.Errorf("read %s's configuration: %w", rt.Name, err)
	}
	switch {
	case res.Restart:
		report.RestartReason = "its configuration changed"
	case known && configured && !listed:
		report.RestartReason = "its configuration has the handler (" + where + ") and the running runtime does not list it"
	case known && !configured && listed:
		report.RestartReason = "the running runtime lists the handler its configuration no longer has"
	}
	if report.RestartReason != "" {
		fmt.Fprintf(log, "node-setup: restarting %s: %s\n", rt.Name, report.RestartReason)
		if err := restart(ctx, o.root, rt, cri, o.timeout, log); err != nil {
			return report, err
		}
		report.Restarted = true
		if listed, known, err = cri.handlerListed(ctx); err != nil {
			return report, err
		}
	}
	switch {
	case !known:
		report.Handler = nodesetup.HandlerUnknown
	case listed:
		report.Handler = nodesetup.HandlerListed
	default:
		report.Handler = nodesetup.HandlerNotListed
	}
	unit := rt.Process + ".service"
	if known && configured && !listed {
		return report, fmt.Errorf("%s does not list the %s handler its configuration (%s) has: see its log (journalctl -u %s on the node)",
			rt.Name, nodesetup.HandlerName, where, unit)
	}
	if known && !configured && listed {
		return report, fmt.Errorf("%s still lists the %s handler its configuration no longer has: see its log (journalctl -u %s on the node)",
			rt.Name, nodesetup.HandlerName, unit)
	}
	return report, nil
}

// restart restarts the runtime (restartRuntime; the tests' own).
var restart = restartRuntime

// nodeRuntime is the runtime a --runtime value names, or with "auto" the
// one whose CRI socket (vocab/runtimes) is on the node.
func nodeRuntime(root, name string) (runtimes.Runtime, error) {
	if name != "auto" {
		return runtimes.Lookup(name)
	}
	var found []runtimes.Runtime
	var looked []string
	for _, rt := range runtimes.All() {
		looked = append(looked, rt.SocketPath())
		p, err := nodesetup.HostPath(root, rt.SocketPath())
		if err != nil {
			continue
		}
		if info, err := os.Stat(p); err == nil && info.Mode()&fs.ModeSocket != 0 {
			found = append(found, rt)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return runtimes.Runtime{}, fmt.Errorf("no known runtime's CRI socket is on the node (looked for %s under %s): pass --runtime", strings.Join(looked, ", "), root)
	}
	return runtimes.Runtime{}, fmt.Errorf("the node has the CRI sockets of %s and %s: pass --runtime", found[0].Name, found[1].Name)
}
