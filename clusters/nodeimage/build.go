package nodeimage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/faultline-k8s/faultline/clusters/gomod"
	"github.com/faultline-k8s/faultline/internal/cachelock"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// Options configure a node image build.
type Options struct {
	Pins     versions.Pins
	Sources  Sources
	Runtime  runtimes.Runtime // the node's runtime (required)
	CacheDir string           // binaries, throwaway modules and logs live here
	RepoRoot string           // faultline's checkout, for the binaries it builds itself (pause)
	// DebianMirror for debootstrap; empty means the one apt uses on this host.
	DebianMirror string
	Force        bool // rebuild even what is cached
	Log          io.Writer
}

// Builder runs a build; tests replace its cache and its command runner.
type Builder struct {
	Options
	cache     Cache
	goVersion string
}

// NewBuilder checks the options and finds the Go toolchain.
func NewBuilder(ctx context.Context, opts Options) (*Builder, error) {
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.CacheDir == "" {
		return nil, fmt.Errorf("no cache directory given")
	}
	if opts.Runtime.Name == "" {
		return nil, fmt.Errorf("no runtime given")
	}
	if _, err := RuntimeComponents(opts.Runtime, opts.Pins, opts.Sources); err != nil {
		return nil, err
	}
	if v := opts.Sources.NRI; v != "" && !versions.IsRelease(v) {
		return nil, fmt.Errorf("--nri-version %q: want a release like v0.12.5", v)
	}
	if v := opts.Sources.ContainerdVersion; v != "" {
		switch {
		case !versions.IsRelease(v):
			return nil, fmt.Errorf("--containerd-version %q: want a release like v2.3.7", v)
		case opts.Sources.Containerd != "":
			return nil, fmt.Errorf("--containerd-version builds a release; with --containerd-src, check it out in the source tree")
		}
		opts.Pins = opts.Pins.With("CONTAINERD_VERSION", v)
	}
	if len(opts.Sources.KubernetesPatches) > 0 {
		if opts.Sources.Kubernetes != "" {
			return nil, fmt.Errorf("--kubernetes-patch applies to the pinned release; with --kubernetes-src, apply it to the checkout")
		}
	}
	for _, patches := range [][]string{opts.Sources.KubernetesPatches, opts.Sources.RuntimePatches, opts.Sources.NRIPatches} {
		if err := checkPatches(patches); err != nil {
			return nil, err
		}
	}
	if len(opts.Sources.RuntimePatches) > 0 && opts.Sources.Containerd != "" && opts.Runtime.Name == "containerd" {
		return nil, fmt.Errorf("a containerd patch applies to the pinned release; with --containerd-src, apply it to the checkout")
	}
	for name, dir := range map[string]string{"kubernetes": opts.Sources.Kubernetes, "containerd": opts.Sources.Containerd} {
		if dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			return nil, fmt.Errorf("--%s-src %s: not a Go module (no go.mod)", name, dir)
		}
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
	if err != nil {
		return nil, fmt.Errorf("go toolchain not usable: %v", err)
	}
	pins, changed, err := patchPins(ctx, opts.Pins, opts.Sources.Kubernetes)
	if err != nil {
		return nil, err
	}
	if pinned, ok := opts.Pins.Patched(); ok {
		fmt.Fprintf(opts.Log, "nodeimage: Kubernetes %s takes the pins of %s, its minor's pinned patch; its kubeadm changes %s\n",
			pins.Kubernetes(), pinned, orNothing(changed))
	}
	opts.Pins = pins
	return &Builder{Options: opts, cache: hostCache{}, goVersion: strings.TrimSpace(string(out))}, nil
}

// Plan decides what to build and what to reuse, without building anything.
func (b *Builder) Plan(ctx context.Context) (Plan, error) {
	rt := b.Runtime
	var plan Plan
	keys := map[string]string{}
	// The base first: it builds beside the Go components (Build).
	base := baseSpec(b.Pins, rt)
	baseKey := base.key()
	keys["base"] = baseKey
	plan.Steps = append(plan.Steps, b.cachedStep(Step{Kind: StepBaseImage, Name: "base", Key: baseKey,
		Output: "faultline/base:" + b.Pins.Get("DEBIAN_SUITE") + "-" + baseKey}))
	components, err := RuntimeComponents(rt, b.Pins, b.Sources)
	if err != nil {
		return Plan{}, err
	}
	for _, c := range components {
		sourceID := ""
		if c.Source != "" {
			id, err := sourceIdentity(ctx, c.Source)
			if err != nil {
				return Plan{}, err
			}
			sourceID = id
		}
		if len(c.Patches) > 0 {
			id, err := patchesKey(c.Patches)
			if err != nil {
				return Plan{}, err
			}
			sourceID = "patches:" + id
		}
		for _, d := range c.PatchedDeps {
			id, err := patchesKey(d.Patches)
			if err != nil {
				return Plan{}, err
			}
			// "required": the build requires the release it patches
			// (the key of builds before it linked the runtime's own).
			sourceID += "+" + d.Module + "@" + d.Version + ":" + id + ":required"
		}
		key := componentKey(c, b.goVersion, sourceID)
		keys["component/"+c.Name] = key
		plan.Steps = append(plan.Steps, b.cachedStep(Step{Kind: StepGoBinaries, Name: c.Name, Key: key,
			Output: filepath.Join(b.CacheDir, "bin", c.Name+"-"+key)}))
	}

	filesKey, err := nodeFilesKey()
	if err != nil {
		return Plan{}, err
	}
	pauseKey, err := dirKey(filepath.Join(b.RepoRoot, pauseCommandDir))
	if err != nil {
		return Plan{}, fmt.Errorf("faultline checkout at %q: %w", b.RepoRoot, err)
	}
	keys["files"], keys["pause"], keys["pins"], keys["go"] = filesKey, pauseKey, pinsFor(b.Pins, rt).String(), b.goVersion
	// Every node carries runc-slow; a runtime's own commands join its key.
	for _, name := range append([]string{"runc-slow"}, rt.NodeCommands...) {
		label, key, err := b.localCommandKey(name)
		if err != nil {
			return Plan{}, err
		}
		keys[label] = key
	}
	if rt.NodeFilesDir != "" {
		// A runtime other than nodefs' own (containerd): its name and files join
		// the key. The containerd key keeps the inputs it had before there was
		// any other runtime, so that its cached images stay valid.
		runtimeKey, err := runtimeFilesKey(rt.NodeFilesDir)
		if err != nil {
			return Plan{}, err
		}
		keys["runtime"], keys["files/"+rt.Name] = rt.Name, runtimeKey
	}
	// What the runtime's entry says of its node (units, left-out files,
	// commands, packages, image loading) joins the key: editing the entry
	// rebuilds the node image (only its assembly: the binaries are keyed apart).
	keys["runtime-entry"] = nodeEntryKey(rt)
	nodeKey := hashKey(keys)
	node := b.cachedStep(Step{Kind: StepNodeImage, Name: "node", Key: nodeKey,
		Output: fmt.Sprintf("faultline/node-%s:%s-%s", rt.Name, b.Pins.Kubernetes(), nodeKey)})
	if node.Cached {
		// The base is only the node image's input: a node image that is
		// there needs no base rebuilt (an engine whose base was removed).
		plan.Steps[0].Cached = true
	}
	plan.Steps = append(plan.Steps, node)
	return plan, nil
}

// nodeEntryKey hashes the parts of a runtime's entry (vocab/runtimes) the
// node image is made from.
func nodeEntryKey(rt runtimes.Runtime) string {
	raw, _ := json.Marshal(struct {
		Name, CRISocket, NodeFilesDir string
		Images                        runtimes.ImageLoad
		NodePackages, NodeLeavesOut   []string
		NodeUnits, NodeCommands       []string
	}{rt.Name, rt.CRISocket, rt.NodeFilesDir, rt.Images, rt.NodePackages, rt.NodeLeavesOut, rt.NodeUnits, rt.NodeCommands})
	return hashKey(map[string]string{"entry": string(raw)})
}

// pauseCommandDir is the package of faultline's pause binary.
const pauseCommandDir = "clusters/nodeimage/cmd/pause"

// localCommand is one of faultline's own commands a node can carry.
type localCommand struct {
	// KeyLabel names its part of the node image's key (as first named, so
	// that the keys of cached images hold).
	KeyLabel string
	// Dirs hold its code: the command's package first, then the faultline
	// packages it imports.
	Dirs []string
}

// localCommands are the commands a node can carry: runc-slow, the
// faultline-slow runtime handler's OCI runtime, on every node; the others when
// a runtime names them (runtimes.Runtime.NodeCommands).
var localCommands = map[string]localCommand{
	"runc-slow":     {KeyLabel: "slow-runtime", Dirs: []string{"fakes/runcslow/cmd/runc-slow", "fakes/runcslow/ociruntime", "fakes/lib/textcap"}},
	"runc-restrict": {KeyLabel: "restrict", Dirs: []string{"clusters/nodeimage/cmd/runc-restrict", "clusters/engine/capfilter", "fakes/runcslow/ociruntime", "fakes/lib/textcap"}},
}

// localCommandKey hashes the code of a local command.
func (b *Builder) localCommandKey(name string) (label, key string, err error) {
	c, ok := localCommands[name]
	if !ok {
		return "", "", fmt.Errorf("node command %s: not in clusters/nodeimage's localCommands", name)
	}
	var keys []string
	for _, dir := range c.Dirs {
		k, err := dirKey(filepath.Join(b.RepoRoot, dir))
		if err != nil {
			return "", "", fmt.Errorf("faultline checkout at %q: %w", b.RepoRoot, err)
		}
		keys = append(keys, k)
	}
	return c.KeyLabel, strings.Join(keys, "+"), nil
}

// pinsFor leaves out the other runtimes' version pins, so that bumping CRI-O
// does not rebuild the containerd node image (and the other way round).
func pinsFor(pins versions.Pins, rt runtimes.Runtime) versions.Pins {
	out := versions.Pins{}
	for k, v := range pins {
		out[k] = v
	}
	for _, other := range runtimes.All() {
		if other.Name != rt.Name && other.VersionPin != "" {
			delete(out, other.VersionPin)
		}
	}
	return out
}

func (b *Builder) cachedStep(s Step) Step {
	if b.Force {
		return s
	}
	switch s.Kind {
	case StepGoBinaries:
		s.Cached = b.cache.HasDir(s.Output)
	default:
		s.Cached = b.cache.HasImage(s.Output)
	}
	return s
}

// Build runs the plan and returns the node image reference.
func (b *Builder) Build(ctx context.Context) (string, error) {
	// Before the plan: what another run is building now is not cached yet,
	// and building it a second time beside it would share its .partial
	// directories, modules and logs.
	lock, err := cachelock.Acquire(ctx, b.CacheDir, b.Log)
	if err != nil {
		return "", err
	}
	defer lock.Release()
	plan, err := b.Plan(ctx)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(b.Log, "node image plan:\n")
	plan.Print(b.Log)
	rt := b.Runtime
	bins := map[string]string{}
	components := map[string]GoComponent{}
	all, err := RuntimeComponents(rt, b.Pins, b.Sources)
	if err != nil {
		return "", err
	}
	for _, c := range all {
		components[c.Name] = c
	}
	// The base image (debootstrap: downloads and disk, little CPU) builds
	// beside the Go components (CPU); the node image needs both. A failed
	// step stops it, and Build returns only once it has ended.
	type baseResult struct {
		err  error
		took time.Duration
	}
	var baseRef string
	baseCtx, stopBase := context.WithCancel(ctx)
	defer stopBase()
	var base chan baseResult
	for _, s := range plan.Steps {
		if s.Kind == StepBaseImage {
			baseRef = s.Output
			if !s.Cached {
				base = make(chan baseResult, 1)
				go func() {
					start := time.Now()
					err := b.buildBase(baseCtx, baseSpec(b.Pins, rt), s.Output)
					base <- baseResult{err, time.Since(start)}
				}()
				defer func() {
					stopBase()
					if base != nil {
						<-base
					}
				}()
			}
		}
	}
	// awaitBase joins the base image's build, once.
	awaitBase := func() error {
		if base == nil {
			return nil
		}
		r := <-base
		base = nil
		if r.err != nil {
			return fmt.Errorf("base: %w", r.err)
		}
		fmt.Fprintf(b.Log, "built base in %s (beside the Go builds)\n", r.took.Round(time.Second))
		return nil
	}
	for _, s := range plan.Steps {
		start := time.Now()
		switch s.Kind {
		case StepGoBinaries:
			bins[s.Name] = s.Output
			if !s.Cached {
				err = b.buildComponent(ctx, components[s.Name], s.Output)
			}
		case StepNodeImage:
			if err := awaitBase(); err != nil {
				return "", err
			}
			if !s.Cached {
				err = b.buildNode(ctx, rt, baseRef, bins, s.Output)
			}
		default:
			continue
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.Name, err)
		}
		if !s.Cached {
			fmt.Fprintf(b.Log, "built %s in %s\n", s.Name, time.Since(start).Round(time.Second))
		}
	}
	if err := awaitBase(); err != nil {
		return "", err
	}
	return plan.NodeImage(), nil
}

// buildComponent compiles a GoComponent in a throwaway module and moves the
// binaries into out only when all of them built, so a half build is never cached.
func (b *Builder) buildComponent(ctx context.Context, c GoComponent, out string) error {
	modDir := filepath.Join(b.CacheDir, "modules", c.Name)
	if len(c.Patches) > 0 {
		tree, err := b.patchedTree(ctx, c.Name, c.Module, c.Version, c.Patches, c.StagingReplaces)
		if err != nil {
			return err
		}
		c.Source = tree
	}
	also := map[string]string{}
	for _, d := range c.PatchedDeps {
		replace, err := b.patchedDep(ctx, c, d)
		if err != nil {
			return err
		}
		c.Replaces = append(c.Replaces, replace)
		if d.Version != "" {
			// Another release than the runtime requires: the build
			// requires it, so the binary says which (RuntimeModuleVersion).
			also[d.Module] = d.Version
		}
	}
	mod := gomod.Module{Require: c.Module, Version: c.Version, Source: c.Source, Replaces: c.Replaces, Also: also}
	env := append([]string{"GOFLAGS=-mod=mod"}, c.Env...)
	if c.StagingReplaces {
		replaces, err := kubernetesStagingReplaces(ctx, c)
		if err != nil {
			return err
		}
		mod.Replaces = append(mod.Replaces, replaces...)
	}
	fmt.Fprintf(b.Log, "building %s %s (%s)\n", c.Name, describeSource(c), strings.Join(c.Binaries(), ", "))
	if err := mod.Write(modDir, strings.TrimPrefix(b.goVersion, "go"), c.Packages, env); err != nil {
		return err
	}
	tmp := out + ".partial"
	_ = os.RemoveAll(tmp)
	cgo := "CGO_ENABLED=0"
	if c.CGO {
		cgo = "CGO_ENABLED=1"
	}
	// One go build for all packages; one per package when they need names of their own.
	targets := [][]string{append([]string{tmp + "/"}, c.Packages...)}
	if len(c.Names) > 0 {
		targets = nil
		for i, p := range c.Packages {
			targets = append(targets, []string{filepath.Join(tmp, c.Names[i]), p})
		}
	}
	for _, target := range targets {
		args := []string{"build", "-trimpath", "-o", target[0], "-ldflags", strings.Join(append([]string{"-s", "-w"}, c.LDFlags...), " ")}
		if len(c.Tags) > 0 {
			args = append(args, "-tags", strings.Join(c.Tags, ","))
		}
		args = append(args, target[1:]...)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = modDir
		cmd.Env = append(append(os.Environ(), env...), cgo)
		if err := b.runLogged(cmd, "go-build-"+c.Name); err != nil {
			return err
		}
	}
	if len(c.CPrograms) > 0 {
		if err := b.buildCPrograms(ctx, c, modDir, tmp, env); err != nil {
			return err
		}
	}
	for _, name := range c.Binaries() {
		if _, err := os.Stat(filepath.Join(tmp, name)); err != nil {
			return fmt.Errorf("expected binary %s missing after the build", name)
		}
	}
	_ = os.RemoveAll(out)
	return os.Rename(tmp, out)
}

// buildCPrograms compiles the component's C programs, statically, from the
// module's tree as the throwaway module resolved it.
func (b *Builder) buildCPrograms(ctx context.Context, c GoComponent, modDir, out string, env []string) error {
	list := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", c.Module)
	list.Dir = modDir
	list.Env = append(os.Environ(), env...)
	dirOut, err := list.Output()
	if err != nil {
		return fmt.Errorf("go list -m %s: %v", c.Module, err)
	}
	moduleDir := strings.TrimSpace(string(dirOut))
	for _, name := range sortedKeys(c.CPrograms) {
		sources, err := filepath.Glob(filepath.Join(moduleDir, c.CPrograms[name], "*.c"))
		if err != nil || len(sources) == 0 {
			return fmt.Errorf("%s: no C sources in %s", name, filepath.Join(moduleDir, c.CPrograms[name]))
		}
		args := append([]string{"-std=c99", "-Os", "-Wall", "-static", "-s", "-o", filepath.Join(out, name)}, sources...)
		if err := b.runLogged(exec.CommandContext(ctx, "cc", args...), "cc-"+name); err != nil {
			return err
		}
	}
	return nil
}

func describeSource(c GoComponent) string {
	var deps []string
	for _, d := range c.PatchedDeps {
		deps = append(deps, fmt.Sprintf("%s with %s applied", d.Module, strings.Join(d.Patches, ", ")))
	}
	with := ""
	if len(deps) > 0 {
		with = ", " + strings.Join(deps, ", ")
	}
	if len(c.Patches) > 0 {
		return c.Version + " with " + strings.Join(c.Patches, ", ") + " applied" + with + ", from " + c.Source
	}
	if with != "" {
		return c.Version + with
	}
	if c.Source != "" {
		return "from local tree " + c.Source
	}
	return c.Version
}

// kubernetesStagingReplaces reads the release's own go.mod (from the module cache,
// or the local tree) and derives the staging replaces from it.
func kubernetesStagingReplaces(ctx context.Context, c GoComponent) ([]gomod.Replace, error) {
	var data []byte
	var err error
	if c.Source != "" {
		data, err = os.ReadFile(filepath.Join(c.Source, "go.mod"))
	} else {
		data, err = gomod.DownloadGoMod(ctx, c.Module, c.Version)
	}
	if err != nil {
		return nil, err
	}
	return gomod.StagingReplaces(data, c.Version, c.Source)
}

// runLogged runs cmd with its output in a log file under the cache, and puts the
// log's tail into the error, so a failed build says why without a second run.
func (b *Builder) runLogged(cmd *exec.Cmd, name string) error {
	logDir := filepath.Join(b.CacheDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	var tail tailBuffer
	cmd.Stdout = io.MultiWriter(f, &tail)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s failed (%v); full log: %s\n%s", strings.Join(cmd.Args[:min(len(cmd.Args), 3)], " "), err, logPath, tail.String())
	}
	return nil
}

// tailBuffer keeps the last lines written to it.
type tailBuffer struct{ buf bytes.Buffer }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if t.buf.Len() > 8192 {
		rest := t.buf.Bytes()[t.buf.Len()-4096:]
		t.buf.Reset()
		t.buf.Write(rest)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	lines := strings.Split(strings.TrimRight(t.buf.String(), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// sourceIdentity names a local tree's state: its commit plus a hash of its
// uncommitted changes. A tree outside git is never considered cached.
func sourceIdentity(ctx context.Context, dir string) (string, error) {
	head, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		// Not a git tree: never cached, not an error.
		return fmt.Sprintf("untracked-%d", time.Now().UnixNano()), nil //nolint:nilerr
	}
	diff, err := exec.CommandContext(ctx, "git", "-C", dir, "status", "--porcelain", "--untracked-files=normal").Output()
	if err != nil {
		return "", fmt.Errorf("git status in %s: %w", dir, err)
	}
	patch, _ := exec.CommandContext(ctx, "git", "-C", dir, "diff", "HEAD").Output()
	return strings.TrimSpace(string(head)) + "+" + hashKey(map[string]string{"status": string(diff), "diff": string(patch)}), nil
}

// dirKey hashes the regular files directly in dir.
func dirKey(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	parts := map[string]string{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return "", err
			}
			parts[e.Name()] = string(data)
		}
	}
	return hashKey(parts), nil
}

// hostCache looks at this host's cache directory and Docker engine.
type hostCache struct{}

func (hostCache) HasDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

func (hostCache) HasImage(ref string) bool {
	return exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", ref).Run() == nil
}

func orNothing(changed []string) string {
	if len(changed) == 0 {
		return "nothing"
	}
	return strings.Join(changed, ", ")
}
