package nodeimage

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/faultline-k8s/faultline/vocab/runtimes"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// basePackages are the Debian packages of every node: systemd as init, runc and
// the CNI plugins, and what kubeadm, the kubelet and kube-proxy call.
var basePackages = []string{
	"systemd", "systemd-sysv", "dbus", "libseccomp2", "runc", "containernetworking-plugins",
	"iptables", "nftables", "iproute2", "conntrack", "ethtool", "socat", "kmod", "mount",
	"util-linux", "procps", "ca-certificates", "e2fsprogs",
}

// units that have no work to do inside a container and only slow the boot or fail.
var maskedUnits = []string{
	"getty.target", "console-getty.service", "systemd-udevd.service", "systemd-udev-trigger.service",
	"systemd-modules-load.service", "systemd-firstboot.service", "systemd-remount-fs.service",
	"sys-kernel-debug.mount", "sys-kernel-tracing.mount", "sys-kernel-config.mount",
	"systemd-binfmt.service", "apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_reap.service",
	"e2scrub_all.timer", "fstrim.timer", "dpkg-db-backup.timer",
}

type base struct {
	Suite    string
	Packages []string
}

// baseSpec is the base of the runtime's node: every node's packages, then the
// runtime's own (vocab/runtimes).
func baseSpec(pins versions.Pins, rt runtimes.Runtime) base {
	packages := basePackages
	if len(rt.NodePackages) > 0 {
		packages = append(append([]string{}, basePackages...), rt.NodePackages...)
	}
	return base{Suite: pins.Get("DEBIAN_SUITE"), Packages: packages}
}

func (b base) key() string {
	return hashKey(map[string]string{
		"suite":    b.Suite,
		"packages": strings.Join(b.Packages, ","),
		"masked":   strings.Join(maskedUnits, ","),
	})
}

// buildBase bootstraps a minimal Debian with debootstrap and imports it as an image.
func (b *Builder) buildBase(ctx context.Context, spec base, ref string) error {
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return fmt.Errorf("debootstrap not found: install it (apt-get install debootstrap) or name a prebuilt node image with --node-image")
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("debootstrap needs root")
	}
	mirror := b.DebianMirror
	if mirror == "" {
		mirror = hostDebianMirror("/etc/apt/sources.list", "/etc/apt/sources.list.d")
	}
	root := filepath.Join(b.CacheDir, "rootfs-"+spec.key())
	_ = os.RemoveAll(root)
	defer os.RemoveAll(root)
	fmt.Fprintf(b.Log, "debootstrap %s from %s (a few minutes)\n", spec.Suite, mirror)
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase",
		"--include="+strings.Join(spec.Packages, ","), spec.Suite, root, mirror)
	if err := b.runLogged(cmd, "debootstrap"); err != nil {
		return err
	}
	// Slim the image and make systemd container-friendly.
	for _, dir := range []string{"var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale"} {
		_ = os.RemoveAll(filepath.Join(root, dir))
	}
	for _, unit := range maskedUnits {
		link := filepath.Join(root, "etc/systemd/system", unit)
		_ = os.Remove(link)
		if err := os.Symlink("/dev/null", link); err != nil {
			return err
		}
	}
	_ = os.WriteFile(filepath.Join(root, "etc/machine-id"), nil, 0o444)
	tar := exec.CommandContext(ctx, "tar", "-C", root, "-c", ".")
	imp := exec.CommandContext(ctx, "docker", "import", "--change", "CMD [\"/sbin/init\"]", "-", ref)
	pipe, err := tar.StdoutPipe()
	if err != nil {
		return err
	}
	imp.Stdin = pipe
	if err := tar.Start(); err != nil {
		return err
	}
	if err := b.runLogged(imp, "docker-import-base"); err != nil {
		_ = tar.Wait()
		return err
	}
	return tar.Wait()
}

// hostDebianMirror finds the Debian archive apt uses here (one-line or deb822
// sources), so that an offline host that reaches only its own mirror works.
func hostDebianMirror(sourcesList, sourcesDir string) string {
	files := []string{sourcesList}
	if entries, err := os.ReadDir(sourcesDir); err == nil {
		for _, e := range entries {
			files = append(files, filepath.Join(sourcesDir, e.Name()))
		}
	}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		scanner := bufio.NewScanner(f)
		for scanner.Scan() {
			if mirror := debianMirrorFromLine(scanner.Text()); mirror != "" {
				f.Close()
				return mirror
			}
		}
		f.Close()
	}
	return "http://deb.debian.org/debian"
}

func debianMirrorFromLine(line string) string {
	fields := strings.Fields(strings.TrimSpace(line))
	var candidates []string
	switch {
	case len(fields) >= 2 && fields[0] == "deb":
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "[") && !strings.HasSuffix(f, "]") {
				candidates = append(candidates, f)
				break
			}
		}
	case len(fields) >= 2 && fields[0] == "URIs:":
		candidates = fields[1:]
	}
	for _, uri := range candidates {
		if strings.HasSuffix(strings.TrimSuffix(uri, "/"), "/debian") {
			return strings.TrimSuffix(uri, "/")
		}
	}
	return ""
}
