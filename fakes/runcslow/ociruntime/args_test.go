package ociruntime

import (
	"strings"
	"testing"
)

// The command lines the runtimes really send (see args.go), and runc's
// other spellings of the same flags.
var realCommandLines = []struct {
	name string
	args string // words separated by one space
	want Invocation
}{
	// containerd 2.x shim (go-runc): Runc.args() then the command.
	{"containerd create", "--root /run/containerd/runc/k8s.io --log /run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/log.json --log-format json " +
		"create --bundle /run/containerd/io.containerd.runtime.v2.task/k8s.io/abc --pid-file /run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/init.pid abc",
		Invocation{Command: "create", ID: "abc", Bundle: "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc",
			Root: "/run/containerd/runc/k8s.io", Log: "/run/containerd/io.containerd.runtime.v2.task/k8s.io/abc/log.json", LogFormat: "json"}},
	{"containerd create, systemd cgroups, rootless, console", "--root /run/runc --log x --log-format json --systemd-cgroup --rootless=true " +
		"create --bundle B --pid-file B/init.pid --console-socket /tmp/pty.sock --no-pivot --no-new-keyring --preserve-fds 2 ID",
		Invocation{Command: "create", ID: "ID", Bundle: "B", Root: "/run/runc", Log: "x", LogFormat: "json"}},
	{"containerd create with --debug and --criu", "--root /r --debug --log x --log-format json --criu /usr/sbin/criu --systemd-cgroup create --bundle B ID",
		Invocation{Command: "create", ID: "ID", Bundle: "B", Root: "/r", Log: "x", LogFormat: "json"}},
	{"containerd start", "--root /run/containerd/runc/k8s.io --log L --log-format json --systemd-cgroup start abc",
		Invocation{Command: "start", ID: "abc", Root: "/run/containerd/runc/k8s.io", Log: "L", LogFormat: "json"}},
	{"containerd kill --all", "--root /r --log L --log-format json kill --all abc 9",
		Invocation{Command: "kill", ID: "abc", Root: "/r", Log: "L", LogFormat: "json"}},
	{"containerd delete --force", "--root /r --log L --log-format json --systemd-cgroup delete --force abc",
		Invocation{Command: "delete", ID: "abc", Root: "/r", Log: "L", LogFormat: "json"}},
	// CRI-O's conmon: [-s → --systemd-cgroup] [--runtime-arg ...] create ...
	{"conmon create", "--systemd-cgroup --root=/run/runc create --bundle /b --pid-file /p --console-socket /s --no-pivot def",
		Invocation{Command: "create", ID: "def", Bundle: "/b", Root: "/run/runc"}},
	{"conmon create with runc log", "--root=/run/runc --log-format=json --log /var/run/crio/abc/log.json --systemd-cgroup create --bundle /b --pid-file /p --no-new-keyring def",
		Invocation{Command: "create", ID: "def", Bundle: "/b", Root: "/run/runc", Log: "/var/run/crio/abc/log.json", LogFormat: "json"}},
	// CRI-O itself
	{"crio start", "--root=/run/runc --systemd-cgroup start def", Invocation{Command: "start", ID: "def", Root: "/run/runc"}},
	{"crio kill", "--root=/run/runc kill def KILL", Invocation{Command: "kill", ID: "def", Root: "/run/runc"}},
	{"crio delete", "--root=/run/runc delete --force def", Invocation{Command: "delete", ID: "def", Root: "/run/runc"}},
	// crun's global flags with a value
	{"cgroup manager", "--cgroup-manager systemd create --bundle B ID", Invocation{Command: "create", ID: "ID", Bundle: "B"}},
	{"cgroup manager=", "--cgroup-manager=systemd --log-level error create --bundle B ID", Invocation{Command: "create", ID: "ID", Bundle: "B"}},
	// Go flag syntax: one dash, =value, -b
	{"single dashes", "-root /r -log=L create -b B -pid-file P ID", Invocation{Command: "create", ID: "ID", Bundle: "B", Root: "/r", Log: "L"}},
	{"bundle=", "create --bundle=/b1 --pid-file=/p ID", Invocation{Command: "create", ID: "ID", Bundle: "/b1"}},
	{"flags after the ID", "create ID --bundle B --no-pivot", Invocation{Command: "create", ID: "ID", Bundle: "B"}},
	{"no bundle", "--root /r create ID", Invocation{Command: "create", ID: "ID", Root: "/r"}},
	{"unknown bool global flag", "--new-flag create --bundle B ID", Invocation{Command: "create", ID: "ID", Bundle: "B"}},
	{"unknown global flag with a value", "--new-flag v --debug start ID", Invocation{Command: "start", ID: "ID"}},
	{"terminator", "--root /r -- delete -- -odd-id", Invocation{Command: "delete", ID: "-odd-id", Root: "/r"}},
	{"exec", "--root /r exec --process /p.json ID sh -c --bundle=x", Invocation{Command: "exec", ID: "ID", Root: "/r", Process: "/p.json"}},
	// containerd's shim (and Docker's) for an exec: the process in a file.
	{"shim exec", "--root /r --log L --log-format json exec --process /tmp/runc-process1 --pid-file /p --detach abc",
		Invocation{Command: "exec", ID: "abc", Root: "/r", Log: "L", LogFormat: "json", Process: "/tmp/runc-process1"}},
	{"exec -p=", "exec -p=/p.json ID", Invocation{Command: "exec", ID: "ID", Process: "/p.json"}},
	{"exec's own command line", "exec ID sh --process /x", Invocation{Command: "exec", ID: "ID"}},
	{"state", "--root /r state abc", Invocation{Command: "state", ID: "abc", Root: "/r"}},
	{"features", "features", Invocation{Command: "features"}},
	{"version", "--version", Invocation{}},
	{"nothing", "", Invocation{}},
	{"value missing", "--root", Invocation{}},
}

func TestParseArgs(t *testing.T) {
	for _, c := range realCommandLines {
		args := strings.Fields(c.args)
		if got := ParseArgs(args); got != c.want {
			t.Errorf("%s: ParseArgs(%q)\n  = %+v\nwant %+v", c.name, args, got, c.want)
		}
		if got := ParseArgs(c.want.Args()); got != c.want {
			t.Errorf("%s: ParseArgs(%q) = %+v, want %+v", c.name, c.want.Args(), got, c.want)
		}
	}
}
