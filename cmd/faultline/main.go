// Command faultline builds node images and manages the kind clusters the suites
// run on. hack/run-e2e.sh drives it; each subcommand is usable on its own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/faultline-k8s/faultline/internal/interrupt"
	"github.com/faultline-k8s/faultline/judge/verdicts"
)

// command is one subcommand: its flags are registered on fs, run does the work.
type command struct {
	summary string
	setup   func(fs *flag.FlagSet) func(ctx context.Context, args []string) error
}

var commands = map[string]command{}

// usageError is bad input (flags, names): exit code 2, as for flag errors.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

func register(name, summary string, setup func(fs *flag.FlagSet) func(ctx context.Context, args []string) error) {
	commands[name] = command{summary: summary, setup: setup}
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: faultline <command> [flags]\n\ncommands:\n")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(os.Stderr, "  %-18s %s\n", name, commands[name].summary)
	}
	fmt.Fprintf(os.Stderr, "\n'faultline <command> -h' lists a command's flags.\n")
	fmt.Fprintf(os.Stderr, "exit codes: 0 done (e2e, report: no unexpected verdict, every selected requirement checked), 1 unexpected verdicts\n(report --same-cells: also a cell that differs from the baseline), 2 bad input, 3 the command failed (e.g. a cluster\ncould not be made), 4 incomplete: a selected requirement was not checked (skipped or inconclusive; --allow-incomplete\naccepts that), 130/143 interrupted\n")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		os.Exit(2)
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "faultline: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	fs := flag.NewFlagSet("faultline "+os.Args[1], flag.ContinueOnError)
	run := cmd.setup(fs)
	args, err := parseInterspersed(fs, os.Args[2:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2) // the flag package has printed what was wrong
	}
	ctx, signals := withSignals(context.Background())
	err = run(ctx, args)
	signals.Stop()
	// An interrupted command exits as the shell would report the signal
	// (130 for INT, 143 for TERM), whatever error the interruption caused.
	if caught, ok := interrupt.Caught(ctx); ok {
		fmt.Fprintf(os.Stderr, "faultline %s: %v\n", os.Args[1], caught)
		os.Exit(caught.ExitCode())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "faultline %s: %v\n", os.Args[1], err)
		if errors.Is(err, verdicts.ErrIncomplete) && !errors.Is(err, verdicts.ErrUnexpected) {
			fmt.Fprintf(os.Stderr, "faultline %s: --allow-incomplete accepts a run that checked less than it selected\n", os.Args[1])
		}
		os.Exit(exitCode(err))
	}
}

// exitCode maps a command's error to its exit code: bad input 2, an
// unexpected verdict 1 (also when the run is incomplete too; so is a cell
// that differs from the baseline, report --same-cells), an incomplete
// run 4, anything else 3 (the command failed).
func exitCode(err error) int {
	var usage usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &usage):
		return 2
	case errors.Is(err, verdicts.ErrUnexpected), errors.Is(err, verdicts.ErrCellsDiffer):
		return verdicts.ExitUnexpected
	case errors.Is(err, verdicts.ErrIncomplete):
		return verdicts.ExitIncomplete
	}
	return 3
}

// parseInterspersed parses flags before and after positional arguments
// (`faultline images save DIR --arch amd64`); everything after "--" is
// positional, untouched.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
