// Package capfilter rewrites OCI runtime requests so that they ask only for the
// capabilities the host can grant.
//
// Some VMs run with a capability bounding set that lacks a capability (for example
// CAP_SYS_RESOURCE). Docker's --privileged asks runc for every capability, and runc
// then fails with "unable to apply caps: operation not permitted". A runtime wrapper
// that drops what the host cannot grant from the bundle's config.json (create, run)
// and from the --process file (exec) makes privileged containers, and so kind nodes,
// work there. Hosts with a full bounding set never need it.
package capfilter

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/faultline-k8s/faultline/fakes/runcslow/ociruntime"
)

// capabilityNames lists Linux capabilities by number, as the OCI spec spells them.
var capabilityNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW",
	"CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
	"CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",
	"CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
}

// Missing returns the names of the known capabilities absent from the bounding
// set given as the hexadecimal CapBnd value of /proc/<pid>/status.
func Missing(capBnd string) ([]string, error) {
	mask, err := strconv.ParseUint(strings.TrimSpace(capBnd), 16, 64)
	if err != nil {
		return nil, fmt.Errorf("parse CapBnd %q: %w", capBnd, err)
	}
	var missing []string
	for bit, name := range capabilityNames {
		if mask&(1<<uint(bit)) == 0 {
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// HostMissing reads this process's bounding set and returns what it lacks.
func HostMissing() ([]string, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if v, ok := strings.CutPrefix(scanner.Text(), "CapBnd:"); ok {
			return Missing(v)
		}
	}
	return nil, fmt.Errorf("no CapBnd line in /proc/self/status")
}

// FilesToRewrite returns the JSON files an OCI runtime invocation reads its
// capabilities from: the bundle's config.json for create and run (the bundle
// defaults to the working directory), the --process file for exec. The
// command line is read as runc-slow reads it (ociruntime.ParseArgs), so that
// exec's own command line after the container ID is never taken for runc's
// flags.
func FilesToRewrite(args []string, workDir string) []string {
	inv := ociruntime.ParseArgs(args)
	switch inv.Command {
	case "create", "run":
		bundle := inv.Bundle
		if bundle == "" {
			bundle = workDir
		}
		return []string{filepath.Join(bundle, "config.json")}
	case "exec":
		if inv.Process != "" {
			return []string{inv.Process}
		}
	}
	return nil
}

// RewriteFile drops the given capabilities from every capability list in an OCI
// config.json (under "process") or process.json (at the top level). Other
// content is kept as it is.
func RewriteFile(path string, drop []string) error {
	return rewriteInPlace(path, func(data []byte) ([]byte, bool, error) { return Rewrite(data, drop) })
}

// Rewrite is RewriteFile on bytes; it reports whether anything was dropped.
func Rewrite(data []byte, drop []string) ([]byte, bool, error) {
	doc, process, err := processSection(data)
	if err != nil {
		return nil, false, err
	}
	caps, ok := process["capabilities"].(map[string]any)
	if !ok {
		return data, false, nil
	}
	dropSet := map[string]bool{}
	for _, c := range drop {
		dropSet[c] = true
	}
	changed := false
	for set, list := range caps {
		items, ok := list.([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(items))
		for _, item := range items {
			if name, ok := item.(string); ok && dropSet[name] {
				changed = true
				continue
			}
			kept = append(kept, item)
		}
		caps[set] = kept
	}
	if !changed {
		return data, false, nil
	}
	out, err := json.Marshal(doc)
	return out, true, err
}

// ClampOOMScoreAdjFile raises process.oomScoreAdj in an OCI config.json (or the
// top-level oomScoreAdj of a process.json) to at least min. Lowering a process's
// oom_score_adj below its parent's needs CAP_SYS_RESOURCE; without it runc fails
// ("can't get final child's PID from pipe: EOF"). containerd has
// restrict_oom_score_adj for this; CRI-O has no equivalent, so its nodes run runc
// through a wrapper that calls this.
func ClampOOMScoreAdjFile(path string, min int) error {
	return rewriteInPlace(path, func(data []byte) ([]byte, bool, error) { return ClampOOMScoreAdj(data, min) })
}

// ClampOOMScoreAdj is ClampOOMScoreAdjFile on bytes; it reports whether it changed anything.
func ClampOOMScoreAdj(data []byte, min int) ([]byte, bool, error) {
	doc, process, err := processSection(data)
	if err != nil {
		return nil, false, err
	}
	adj, ok := process["oomScoreAdj"].(float64)
	if !ok || int(adj) >= min {
		return data, false, nil
	}
	process["oomScoreAdj"] = min
	out, err := json.Marshal(doc)
	return out, true, err
}

// OwnOOMScoreAdj reads this process's oom_score_adj.
func OwnOOMScoreAdj() (int, error) {
	data, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// processSection parses an OCI config.json or process.json and returns the
// document and its process part ("process" in a config.json, the top level in a
// process.json).
func processSection(data []byte) (doc, process map[string]any, err error) {
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, err
	}
	if p, ok := doc["process"].(map[string]any); ok {
		return doc, p, nil
	}
	return doc, doc, nil
}

// rewriteInPlace applies edit to a file's content and writes it back, keeping
// its mode, only when edit changed something.
func rewriteInPlace(path string, edit func([]byte) ([]byte, bool, error)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, changed, err := edit(data)
	if err != nil || !changed {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, info.Mode().Perm())
}
