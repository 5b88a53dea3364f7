package ociruntime

// Reading runc's command line the way runc does: runc's CLI (urfave/cli v1
// on Go's flag package) takes global flags before the command and the
// command's flags after it, each flag as -name or --name, its value as the
// next word or after "=" (--root=/run/runc); a bool flag never takes the
// next word; "--" ends the flags. The runtimes call it, for example
//
//	containerd's shim (go-runc):
//	  runc --root /run/containerd/runc/k8s.io --log /run/.../log.json --log-format json [--systemd-cgroup] [--rootless=true]
//	       create --bundle /run/.../<id> --pid-file /run/.../init.pid [--console-socket S] [--no-pivot] [--preserve-fds N] <id>
//	  runc --root ... start <id> | kill [--all] <id> <signal> | delete [--force] <id>
//	  runc --root ... exec --process /tmp/runc-process... --pid-file P --detach <id>
//	CRI-O's conmon:
//	  runc [--systemd-cgroup] --root=/run/runc [--log-format=json --log L] create --bundle B --pid-file P [--no-pivot]
//	       [--no-new-keyring] [--console-socket S] <id>
//	CRI-O itself:
//	  runc --root=/run/runc [--systemd-cgroup] start|kill|delete ... <id>
//
// and crun, which CRI-O may delegate to, adds --cgroup-manager <m> and
// --log-level <l>.

import "strings"

// Invocation is what the wrapper understood of its command line.
type Invocation struct {
	Command string // create, start, kill, delete, state, ...; "" when there is none
	ID      string // the container ID, "" for commands without one
	Bundle  string // create and run only; "" means the working directory
	// Process is exec's --process: a JSON file describing the process to
	// run; "" when exec takes it from the words after the ID.
	Process string
	// Root, Log and LogFormat are the global flags of the same name: where
	// the runtime keeps its state, and where and how it wants runc's log
	// (the wrapper writes its refusals there too, so the runtime shows
	// them).
	Root, Log, LogFormat string
}

// globalFlags are runc's global flags (and crun's), true for those that
// take a value. A flag that is not listed takes a value unless the next
// word is a command or a flag (see ParseArgs).
var globalFlags = map[string]bool{
	"root": true, "log": true, "log-format": true, "criu": true, "rootless": true,
	"debug": false, "systemd-cgroup": false, "help": false, "h": false, "version": false, "v": false,
	// crun
	"cgroup-manager": true, "log-level": true,
}

// commands are runc's commands (and crun's), to tell an unknown global
// bool flag from one with a value.
var commands = map[string]bool{
	"checkpoint": true, "create": true, "delete": true, "events": true, "exec": true, "init": true,
	"kill": true, "list": true, "pause": true, "ps": true, "restore": true, "resume": true, "run": true,
	"spec": true, "start": true, "state": true, "update": true, "features": true, "help": true, "h": true,
	"mounts": true, // crun
}

// commandValueFlags are the flags of runc's commands that take a value
// (create, run, exec, restore; the others have only bool flags or none).
// An unknown flag of a command is taken as a bool flag.
var commandValueFlags = map[string]bool{
	"bundle": true, "b": true, "console-socket": true, "pidfd-socket": true, "pid-file": true,
	"preserve-fds": true, "process": true, "p": true, "cwd": true, "env": true, "e": true,
	"user": true, "u": true, "additional-gids": true, "g": true, "process-label": true,
	"apparmor": true, "cap": true, "c": true, "cgroup": true, "image-path": true, "work-path": true,
	"parent-path": true, "manage-cgroups-mode": true, "empty-ns": true, "lsm-profile": true,
	"lsm-mount-context": true, "page-server": true, "status-fd": true,
}

// stopAtID are the commands whose words after the container ID are not
// theirs (runc's exec: the process's command line).
var stopAtID = map[string]bool{"exec": true}

// splitFlag reads one word as Go's flag package does: isFlag for -name,
// --name, -name=value and --name=value; "-" and "--" are no flags.
// Malformed flags (---x, -=x) count as flags without a name.
func splitFlag(arg string) (name, value string, hasValue, isFlag bool) {
	if len(arg) < 2 || arg[0] != '-' || arg == "--" {
		return "", "", false, false
	}
	name = arg[1:]
	if name[0] == '-' {
		name = name[1:]
	}
	if name == "" || name[0] == '-' || name[0] == '=' {
		return "", "", false, true
	}
	name, value, hasValue = strings.Cut(name, "=")
	return name, value, hasValue, true
}

// ParseArgs reads runc's command line (without the program name), as the
// package comment shows. A command line runc would reject is read as far
// as it goes; the real runtime then reports it.
func ParseArgs(args []string) Invocation {
	var inv Invocation
	i := 0
	for i < len(args) {
		arg := args[i]
		i++
		if arg == "--" {
			if i < len(args) {
				inv.Command = args[i]
				i++
			}
			break
		}
		name, value, hasValue, isFlag := splitFlag(arg)
		if !isFlag {
			inv.Command = arg
			break
		}
		if !hasValue {
			takesValue, known := globalFlags[name]
			if !known {
				takesValue = name != "" && i < len(args) && !commands[args[i]] && !strings.HasPrefix(args[i], "-")
			}
			if !takesValue || i >= len(args) {
				continue
			}
			value = args[i]
			i++
		}
		switch name {
		case "root":
			inv.Root = value
		case "log":
			inv.Log = value
		case "log-format":
			inv.LogFormat = value
		}
	}
	if inv.Command == "" {
		return inv
	}
	flags := true
	for i < len(args) {
		arg := args[i]
		i++
		name, value, hasValue, isFlag := "", "", false, false
		if flags {
			if arg == "--" {
				flags = false
				continue
			}
			name, value, hasValue, isFlag = splitFlag(arg)
		}
		if !isFlag {
			if inv.ID == "" {
				inv.ID = arg
				if stopAtID[inv.Command] {
					break
				}
			}
			continue
		}
		if !hasValue {
			if !commandValueFlags[name] || i >= len(args) {
				continue
			}
			value = args[i]
			i++
		}
		switch name {
		case "bundle", "b":
			inv.Bundle = value
		case "process", "p":
			inv.Process = value
		}
	}
	return inv
}

// Args is the command line that ParseArgs reads as inv, for tests: the
// global flags with their values, the command, --bundle, --process and the
// ID.
func (inv Invocation) Args() []string {
	var out []string
	for _, f := range []struct{ name, value string }{{"root", inv.Root}, {"log", inv.Log}, {"log-format", inv.LogFormat}} {
		if f.value != "" {
			out = append(out, "--"+f.name+"="+f.value)
		}
	}
	if inv.Command == "" {
		return out
	}
	if _, _, _, isFlag := splitFlag(inv.Command); isFlag || inv.Command == "--" {
		out = append(out, "--")
	}
	out = append(out, inv.Command)
	if inv.Bundle != "" {
		out = append(out, "--bundle="+inv.Bundle)
	}
	if inv.Process != "" {
		out = append(out, "--process="+inv.Process)
	}
	if inv.ID != "" {
		if _, _, _, isFlag := splitFlag(inv.ID); isFlag || inv.ID == "--" {
			out = append(out, "--")
		}
		out = append(out, inv.ID)
	}
	return out
}
