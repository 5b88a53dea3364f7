package nodeimage

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// buildNode assembles the node image: control-plane images from the built
// binaries, a container from the base image with faultline's node files and the
// runtime and Kubernetes binaries, the images imported into containerd's store,
// then a commit with the entrypoint kind expects.
func (b *Builder) buildNode(ctx context.Context, rt runtimes.Runtime, baseRef string, bins map[string]string, ref string) error {
	work, err := os.MkdirTemp(b.CacheDir, "node-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	pauseDir := filepath.Join(work, "pause-bin")
	if err := b.buildPause(ctx, pauseDir); err != nil {
		return err
	}
	bins["pause"] = pauseDir

	// runc-slow on every node, and the runtime's own commands.
	for _, name := range append([]string{"runc-slow"}, rt.NodeCommands...) {
		dir := filepath.Join(work, name+"-bin")
		if err := b.buildLocalCommand(ctx, name, dir); err != nil {
			return err
		}
		bins[name] = dir
	}

	images := ControlPlaneImages(b.Pins)
	var refs []string
	for _, img := range images {
		if err := b.buildControlPlaneImage(ctx, work, baseRef, bins[img.Component], img); err != nil {
			return fmt.Errorf("image %s: %w", img.Ref, err)
		}
		refs = append(refs, img.Ref)
	}
	var archive, imagesDir string
	switch rt.Images {
	case runtimes.ImagesThroughSkopeo:
		// One archive per image, loaded into the runtime's store when the node boots.
		imagesDir = filepath.Join(work, "images")
		if err := saveImageArchives(ctx, b, imagesDir, images); err != nil {
			return err
		}
	case runtimes.ImagesThroughKind:
		archive = filepath.Join(work, "images.tar")
		if err := b.runLogged(exec.CommandContext(ctx, "docker", append([]string{"save", "-o", archive}, refs...)...), "docker-save"); err != nil {
			return err
		}
	default:
		return fmt.Errorf("runtime %s: no way to preload images %q", rt.Name, rt.Images)
	}

	container := "faultline-node-build-" + strings.ReplaceAll(filepath.Base(work), "node-build-", "")
	run := exec.CommandContext(ctx, "docker", "run", "-d", "--privileged", "--name", container,
		"--tmpfs", "/run", "--tmpfs", "/tmp", "--entrypoint", "/bin/sleep", baseRef, "infinity")
	if err := b.runLogged(run, "node-build-container"); err != nil {
		return err
	}
	defer exec.Command("docker", "rm", "-f", container).Run() //nolint:errcheck // best effort cleanup

	if err := b.copyNodeFiles(ctx, container, rt, bins); err != nil {
		return err
	}
	if rt.Images == runtimes.ImagesThroughSkopeo {
		cp := exec.CommandContext(ctx, "docker", "cp", imagesDir, container+":/kind/images")
		if err := b.runLogged(cp, "docker-cp-images"); err != nil {
			return err
		}
	} else if err := b.preloadImages(ctx, container, archive, refs); err != nil {
		return err
	}
	commit := exec.CommandContext(ctx, "docker", "commit",
		"--change", `ENTRYPOINT ["/usr/local/bin/entrypoint"]`,
		"--change", `CMD ["/sbin/init"]`,
		"--change", "ENV container=docker",
		"--change", "LABEL io.faultline.kubernetes-version="+b.Pins.Kubernetes(),
		"--change", "LABEL io.faultline.runtime="+rt.Name,
		container, ref)
	return b.runLogged(commit, "docker-commit-node")
}

// buildPause compiles faultline's own pause binary from this checkout.
func (b *Builder) buildPause(ctx context.Context, out string) error {
	return b.buildLocalCommand(ctx, "pause", out)
}

// buildLocalCommand compiles one of faultline's own commands (pause or one of
// localCommands), static.
func (b *Builder) buildLocalCommand(ctx context.Context, name, out string) error {
	dir := pauseCommandDir
	if name != "pause" {
		dir = localCommands[name].Dirs[0]
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(out, name), "./"+dir)
	cmd.Dir = b.RepoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return b.runLogged(cmd, "go-build-"+name)
}

// saveImageArchives writes one docker save archive per image into dir, and
// images.list ("<archive> <reference>" per line) for the node's preload unit
// (crio-preload).
func saveImageArchives(ctx context.Context, b *Builder, dir string, images []ControlPlaneImage) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var list strings.Builder
	for _, img := range images {
		name := img.Binary + ".tar"
		save := exec.CommandContext(ctx, "docker", "save", "-o", filepath.Join(dir, name), img.Ref)
		if err := b.runLogged(save, "docker-save-"+img.Binary); err != nil {
			return err
		}
		fmt.Fprintf(&list, "%s %s\n", name, img.Ref)
	}
	return os.WriteFile(filepath.Join(dir, "images.list"), []byte(list.String()), 0o644)
}

// buildControlPlaneImage makes a one-binary image named exactly as kubeadm expects.
func (b *Builder) buildControlPlaneImage(ctx context.Context, work, baseRef, binDir string, img ControlPlaneImage) error {
	dir := filepath.Join(work, "image-"+img.Binary)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := copyFile(filepath.Join(binDir, img.Binary), filepath.Join(dir, img.Binary), 0o755); err != nil {
		return err
	}
	from := "scratch"
	if img.OnBase {
		from = baseRef
	}
	dockerfile := fmt.Sprintf("FROM %s\nCOPY %s /usr/local/bin/%s\nENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin\n", from, img.Binary, img.Binary)
	if len(img.Entrypoint) > 0 {
		dockerfile += fmt.Sprintf("ENTRYPOINT [%q]\n", strings.Join(img.Entrypoint, `", "`))
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return err
	}
	return b.runLogged(exec.CommandContext(ctx, "docker", "build", "-q", "-t", img.Ref, dir), "docker-build-"+img.Binary)
}

// copyNodeFiles streams faultline's node files and the binaries into the container.
func (b *Builder) copyNodeFiles(ctx context.Context, container string, rt runtimes.Runtime, bins map[string]string) error {
	extras := []extraFile{
		{Path: "kind/version", Mode: 0o644, Content: []byte(b.Pins.Kubernetes() + "\n")},
	}
	units := append(append([]string{}, rt.NodeUnits...), "kubelet.service", "faultline-podnet.service")
	// component => binaries into /usr/local/bin: the runtime's (all its
	// recipe builds), runc-slow and the runtime's own commands.
	recipe, ok := runtimeRecipes[rt.Name]
	if !ok {
		return fmt.Errorf("runtime %s has no build recipe in clusters/nodeimage", rt.Name)
	}
	component := recipe(b.Pins, b.Sources)
	runtimeBins := map[string][]string{component.Name: component.Binaries(), "runc-slow": {"runc-slow"}}
	for _, name := range rt.NodeCommands {
		runtimeBins[name] = []string{name}
	}
	for _, unit := range units {
		extras = append(extras, extraFile{Path: "etc/systemd/system/multi-user.target.wants/" + unit, Link: "/etc/systemd/system/" + unit})
	}
	for _, name := range []string{"kubelet", "kubeadm", "kubectl"} {
		extras = append(extras, extraFile{Path: "usr/bin/" + name, Mode: 0o755, Source: filepath.Join(bins["kubernetes"], name)})
	}
	for _, component := range sortedComponentKeys(runtimeBins) {
		for _, name := range runtimeBins[component] {
			extras = append(extras, extraFile{Path: "usr/local/bin/" + name, Mode: 0o755, Source: filepath.Join(bins[component], name)})
		}
	}
	values := nodeFileValues{PauseImage: PauseImage(b.Pins)}
	reader, writer := io.Pipe()
	go func() { writer.CloseWithError(writeRuntimeNodeFilesTar(writer, rt, values, extras)) }()
	cp := exec.CommandContext(ctx, "docker", "cp", "-", container+":/")
	cp.Stdin = reader
	return b.runLogged(cp, "docker-cp-node-files")
}

func sortedComponentKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// preloadImages starts containerd inside the build container just long enough to
// import the image archive into the k8s.io namespace the CRI plugin serves.
func (b *Builder) preloadImages(ctx context.Context, container, archive string, refs []string) error {
	// -d: containerd's parent is then the engine's exec shim, which reaps it when
	// it exits; a child orphaned to the container's PID 1 (sleep) would stay a zombie.
	start := dockerExec(ctx, container, []string{"-d"}, "sh", "-c", "exec /usr/local/bin/containerd >/var/log/containerd-build.log 2>&1")
	if err := b.runLogged(start, "containerd-start"); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for dockerExec(ctx, container, nil, "ctr", "version").Run() != nil {
		if time.Now().After(deadline) {
			out, _ := dockerExec(ctx, container, nil, "tail", "-n", "30", "/var/log/containerd-build.log").CombinedOutput()
			return fmt.Errorf("containerd did not start in the build container within 60s:\n%s", out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	// --no-unpack: the build container's root is overlayfs, which cannot host
	// containerd's overlay snapshots; layers unpack on first use in the node.
	imp := dockerExec(ctx, container, []string{"-i"}, "ctr", "-n", "k8s.io", "images", "import", "--no-unpack", "-")
	imp.Stdin = f
	if err := b.runLogged(imp, "ctr-import"); err != nil {
		return err
	}
	listed, err := dockerExec(ctx, container, nil, "ctr", "-n", "k8s.io", "images", "ls", "-q").Output()
	if err != nil {
		return fmt.Errorf("ctr images ls: %w", err)
	}
	for _, ref := range refs {
		if !strings.Contains(string(listed), ref) {
			return fmt.Errorf("image %s missing from the node's store after import; have:\n%s", ref, listed)
		}
	}
	stop := "pkill containerd; for i in $(seq 100); do pgrep -x containerd >/dev/null || exit 0; sleep 0.1; done; exit 1"
	if err := dockerExec(ctx, container, nil, "sh", "-c", stop).Run(); err != nil {
		return fmt.Errorf("containerd did not stop in the build container")
	}
	return dockerExec(ctx, container, nil, "rm", "-f", "/var/log/containerd-build.log").Run()
}

// dockerExec runs a command in a container, with docker exec's own flags.
func dockerExec(ctx context.Context, container string, flags []string, args ...string) *exec.Cmd {
	all := append(append([]string{"exec"}, flags...), container)
	return exec.CommandContext(ctx, "docker", append(all, args...)...)
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
