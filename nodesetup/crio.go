package nodesetup

// CRI-O: the handler is a drop-in of its own in /etc/crio/crio.conf.d, which
// CRI-O reads after /etc/crio/crio.conf, file by file in lexical order,
// adding each runtimes table to those before.

import (
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
)

const (
	// CRIOConfigPath is CRI-O's main config file (optional).
	CRIOConfigPath = "/etc/crio/crio.conf"
	// CRIODropInDir is CRI-O's drop-in directory.
	CRIODropInDir = "/etc/crio/crio.conf.d"
	// CRIODropIn is the handler's drop-in.
	CRIODropIn = CRIODropInDir + "/90-faultline-slow.conf"
	// crioDefaultRuntime is CRI-O's default_runtime when no file sets one
	// (crun since CRI-O 1.31).
	crioDefaultRuntime = "crun"
)

// crioFiles are CRI-O's config files on the node, in the order it reads them.
func crioFiles(h host) ([]string, error) {
	files := []string{CRIOConfigPath}
	local, err := h.path(CRIODropInDir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(local)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		// Skip what is not a file, and hidden files (an editor's, or
		// node-setup's own while it writes).
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		files = append(files, path.Join(CRIODropInDir, n))
	}
	return files, nil
}

// crioHandlerKeys is where CRI-O keeps the handler's table.
var crioHandlerKeys = []string{"crio", "runtime", "runtimes", HandlerName}

// crioPlan works out the handler's configuration on a CRI-O node.
func crioPlan(h host, detect bool) (plan, error) {
	var p plan
	files, err := crioFiles(h)
	if err != nil {
		return p, err
	}
	merged := map[string]any{}
	read := 0
	for _, file := range files {
		f, err := h.read(file)
		if err != nil {
			return p, err
		}
		if !f.Exists {
			continue
		}
		read++
		tree, err := parseTOML(f.Data)
		if err != nil {
			return p, fmt.Errorf("%s: %w", file, err)
		}
		if _, ok := lookup(tree, crioHandlerKeys...); ok && !p.Configured {
			p.Configured, p.Where = true, file
		}
		merge(merged, tree)
	}
	if read == 0 {
		return p, fmt.Errorf("neither %s nor a file in %s exists: is CRI-O configured on this node?", CRIOConfigPath, CRIODropInDir)
	}

	def := stringAt(merged, "crio", "runtime", "default_runtime")
	if def == "" {
		def = crioDefaultRuntime
	}
	rt := []string{"crio", "runtime", "runtimes", def}
	if binary := stringAt(merged, keyPath(rt, "runtime_path")...); binary != "" {
		p.Delegate = binary
	} else if found, ok := h.lookPath(def); ok {
		p.Delegate = found
	} else {
		p.DelegateErr = fmt.Errorf("the default runtime %q names no runtime_path and the node has no %s in its PATH: "+
			"write the real OCI runtime's path into %s", def, def, DelegatePath)
	}
	if t := stringAt(merged, keyPath(rt, "runtime_type")...); t != "" && t != "oci" {
		p.Notes = append(p.Notes, fmt.Sprintf("the default runtime %q is of type %q; runc-slow runs %s as an OCI runtime", def, t, p.Delegate))
	}
	if p.Configured || detect {
		return p, nil
	}
	handler := CRIOHandler{
		RuntimeRoot: stringAt(merged, keyPath(rt, "runtime_root")...),
		MonitorPath: stringAt(merged, keyPath(rt, "monitor_path")...),
	}
	text, err := handler.TOML()
	if err != nil {
		return p, err
	}
	data := dropInMarker + "\n\n" + text
	tree, err := parseTOML([]byte(data))
	if err != nil {
		return p, fmt.Errorf("the handler's drop-in does not parse (a bug): %w", err)
	}
	if stringAt(tree, keyPath(crioHandlerKeys, "runtime_path")...) != RuncSlowPath {
		return p, fmt.Errorf("the handler's drop-in lacks its runtime_path (a bug)")
	}
	p.Ops = append(p.Ops, op{Path: CRIODropIn, Data: []byte(data), Mode: 0o644, Config: true})
	return p, nil
}
