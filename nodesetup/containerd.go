package nodesetup

// containerd 2.x (config version 3; version 2 is read too): the handler goes
// into a drop-in when the config imports a directory by a pattern (imports =
// ["/etc/containerd/conf.d/*.toml"]), which containerd merges key by key;
// else its tables are appended to config.toml, which is checked to mean
// exactly what it meant before plus the handler.

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ContainerdConfigPath is containerd's config file.
const ContainerdConfigPath = "/etc/containerd/config.toml"

// containerdConfig is what node-setup reads of a containerd config file.
type containerdConfig struct {
	Version int
	Imports []string
	Tree    map[string]any
}

// parseContainerdConfig parses a containerd config file.
func parseContainerdConfig(data []byte) (containerdConfig, error) {
	tree, err := parseTOML(data)
	if err != nil {
		return containerdConfig{}, err
	}
	cfg := containerdConfig{Version: 1, Tree: tree}
	if v, ok := tree["version"]; ok {
		n, ok := v.(int64)
		if !ok || n < 1 || n > 1000 {
			return containerdConfig{}, fmt.Errorf("version = %v: want an integer", v)
		}
		cfg.Version = int(n)
	}
	if v, ok := tree["imports"]; ok {
		list, ok := v.([]any)
		if !ok {
			return containerdConfig{}, fmt.Errorf("imports = %v: want a list of paths", v)
		}
		for _, item := range list {
			s, ok := item.(string)
			if !ok || s == "" {
				return containerdConfig{}, fmt.Errorf("imports = %v: want a list of paths", v)
			}
			cfg.Imports = append(cfg.Imports, s)
		}
	}
	return cfg, nil
}

// handlerKeys is where a config of the version keeps the handler's table.
func (c containerdConfig) handlerKeys() ([]string, error) {
	plugin, err := containerdPlugin(c.Version)
	if err != nil {
		return nil, err
	}
	return []string{"plugins", plugin, "containerd", "runtimes", HandlerName}, nil
}

// containerdPlan works out the handler's configuration on a containerd node.
func containerdPlan(h host, detect bool) (plan, error) {
	var p plan
	main, err := h.read(ContainerdConfigPath)
	if err != nil {
		return p, err
	}
	if !main.Exists {
		return p, fmt.Errorf("%s does not exist: containerd runs on its defaults, which node-setup does not guess; "+
			"write them out first (containerd config default > %s) or add the handler by hand", ContainerdConfigPath, ContainerdConfigPath)
	}
	cfg, err := parseContainerdConfig(main.Data)
	if err != nil {
		return p, fmt.Errorf("%s: %w", ContainerdConfigPath, err)
	}
	keys, err := cfg.handlerKeys()
	if err != nil {
		return p, fmt.Errorf("%s: %w", ContainerdConfigPath, err)
	}
	plugin := keys[1]

	// What containerd sees: config.toml, then each import over it.
	merged := map[string]any{}
	merge(merged, cfg.Tree)
	if _, ok := lookup(cfg.Tree, keys...); ok {
		p.Configured, p.Where = true, ContainerdConfigPath
	}
	imports, err := containerdImports(h, cfg.Imports)
	if err != nil {
		return p, err
	}
	for _, file := range imports {
		f, err := h.read(file)
		if err != nil {
			return p, err
		}
		if !f.Exists {
			continue
		}
		tree, err := parseTOML(f.Data)
		if err != nil {
			return p, fmt.Errorf("%s (imported by %s): %w", file, ContainerdConfigPath, err)
		}
		merge(merged, tree)
		if _, ok := lookup(tree, keys...); ok && !p.Configured {
			p.Configured, p.Where = true, file
		}
	}

	// The node's default runtime: what runc-slow delegates to, and the shim
	// and cgroup driver the handler copies.
	cri := []string{"plugins", plugin, "containerd"}
	def := stringAt(merged, keyPath(cri, "default_runtime_name")...)
	if def == "" {
		def = "runc"
	}
	rt := keyPath(cri, "runtimes", def)
	handler := ContainerdHandler{
		Version:       cfg.Version,
		RuntimeType:   stringAt(merged, keyPath(rt, "runtime_type")...),
		SystemdCgroup: boolAt(merged, keyPath(rt, "options", "SystemdCgroup")...),
	}
	if binary := stringAt(merged, keyPath(rt, "options", "BinaryName")...); binary != "" {
		p.Delegate = binary
	} else if found, ok := h.lookPath("runc"); ok {
		p.Delegate = found
	} else {
		p.DelegateErr = fmt.Errorf("the default runtime %q names no BinaryName and the node has no runc in its PATH: "+
			"write the real OCI runtime's path into %s", def, DelegatePath)
	}
	if p.Configured || detect {
		return p, nil
	}

	text, err := handler.TOML()
	if err != nil {
		return p, err
	}
	// A drop-in only under a version 3 config, which only containerd 2.x
	// reads: containerd 1.7 (version 2) replaces a whole plugin's section
	// with an import's instead of merging key by key, so a drop-in there
	// would wipe the rest of the CRI plugin's settings.
	if dropIn, ok := containerdDropIn(cfg.Imports); ok && cfg.Version >= 3 {
		data := fmt.Sprintf("%s\nversion = %d\n\n%s", dropInMarker, cfg.Version, text)
		tree, err := parseTOML([]byte(data))
		if err != nil {
			return p, fmt.Errorf("the handler's drop-in does not parse (a bug): %w", err)
		}
		if stringAt(tree, keyPath(keys, "options", "BinaryName")...) != RuncSlowPath {
			return p, fmt.Errorf("the handler's drop-in lacks its BinaryName (a bug)")
		}
		p.Ops = append(p.Ops, op{Path: dropIn, Data: []byte(data), Mode: 0o644, Config: true})
		return p, nil
	}
	if inlineTableAbove(main.Data, keys) {
		return p, fmt.Errorf("%s defines the runtimes table (or one above it) inline, which takes no added handler; add the handler by hand", ContainerdConfigPath)
	}
	data := appendHandler(main.Data, text)
	tree, err := parseTOML(data)
	if err != nil {
		return p, fmt.Errorf("%s with the handler appended does not parse (does it define its runtimes table inline?): %w; add the handler by hand", ContainerdConfigPath, err)
	}
	if stringAt(tree, keyPath(keys, "options", "BinaryName")...) != RuncSlowPath {
		return p, fmt.Errorf("%s with the handler appended does not configure it; add the handler by hand", ContainerdConfigPath)
	}
	if !sameTree(without(tree, cfg.Tree, keys...), cfg.Tree) {
		return p, fmt.Errorf("%s with the handler appended would change more than the handler; add the handler by hand", ContainerdConfigPath)
	}
	p.Ops = append(p.Ops, op{Path: ContainerdConfigPath, Data: data, Config: true})
	return p, nil
}

const (
	// dropInMarker heads a drop-in node-setup writes.
	dropInMarker = "# Written by faultline node-setup; `faultline node-setup remove` deletes it."
	// appendMarker heads what node-setup appends to a config file.
	appendMarker = "# Added by faultline node-setup; `faultline node-setup remove` restores this file as it was."
)

// appendHandler appends the handler's text to a config file's.
func appendHandler(config []byte, text string) []byte {
	var b bytes.Buffer
	b.Write(config)
	if len(config) > 0 && !bytes.HasSuffix(config, []byte("\n")) {
		b.WriteByte('\n')
	}
	b.WriteString("\n" + appendMarker + "\n")
	b.WriteString(text)
	return b.Bytes()
}

// containerdImports resolves the config's imports to the node's files, in
// containerd's order: a relative path is relative to the config's directory,
// a pattern with * is globbed.
func containerdImports(h host, imports []string) ([]string, error) {
	var out []string
	for _, imp := range imports {
		p := importPath(imp)
		if !strings.Contains(p, "*") {
			out = append(out, p)
			continue
		}
		dir, pattern := path.Split(p)
		if strings.ContainsAny(dir, "*?[") {
			return nil, fmt.Errorf("import %q of %s: a pattern in a directory name is not supported", imp, ContainerdConfigPath)
		}
		local, err := h.path(dir)
		if err != nil {
			return nil, err
		}
		entries, err := os.ReadDir(local)
		if err != nil {
			continue // no directory: the pattern matches nothing
		}
		var names []string
		for _, e := range entries {
			if ok, _ := filepath.Match(pattern, e.Name()); ok && e.Type().IsRegular() {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, path.Join(dir, n))
		}
	}
	return out, nil
}

func importPath(imp string) string {
	p := path.Clean(imp)
	if !path.IsAbs(p) {
		p = path.Join(path.Dir(ContainerdConfigPath), p)
	}
	return p
}

// containerdDropIn picks the drop-in file for the handler: the first import
// pattern (conf.d/*.toml) that a file named after the handler matches.
func containerdDropIn(imports []string) (string, bool) {
	for _, imp := range imports {
		p := importPath(imp)
		dir, pattern := path.Split(p)
		if !strings.Contains(pattern, "*") || strings.ContainsAny(dir, "*?[") {
			continue
		}
		name := strings.ReplaceAll(strings.Replace(pattern, "*", HandlerName, 1), "*", "")
		if strings.ContainsAny(name, "?[\\") {
			continue
		}
		if ok, _ := path.Match(pattern, name); ok {
			return path.Join(dir, name), true
		}
	}
	return "", false
}
