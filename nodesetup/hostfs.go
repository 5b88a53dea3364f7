package nodesetup

// The node's filesystem as node-setup sees it: mounted at a root directory
// (/host in the DaemonSet's pod, t.TempDir() in the tests). Every path
// node-setup names is the node's own (/etc/containerd/config.toml); a
// symbolic link on the node is followed as the node would follow it, inside
// root: Debian's /var/run -> /run is an absolute link, which read from the
// pod would lead into the pod's own /run.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds the symbolic links followed in one path (as the kernel's
// ELOOP does).
const maxLinks = 40

// HostPath returns where the node's absolute path p is under root,
// following the node's symbolic links inside root: an absolute link target
// is taken from root, and ".." never climbs above it. The part of p that
// does not exist is joined as named.
func HostPath(root, p string) (string, error) {
	if !path.IsAbs(p) {
		return "", fmt.Errorf("node path %q is not absolute", p)
	}
	parts := strings.Split(p, "/")
	cur := "/"
	links := 0
	for len(parts) > 0 {
		part := parts[0]
		parts = parts[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, part)
		info, err := os.Lstat(filepath.Join(root, filepath.FromSlash(next)))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				cur = next
				continue
			}
			return "", err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("node path %s: more than %d symbolic links", p, maxLinks)
		}
		target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(next)))
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			cur = "/"
		}
		parts = append(strings.Split(target, "/"), parts...)
	}
	return filepath.Join(root, filepath.FromSlash(cur)), nil
}

// host is the node's filesystem under root.
type host struct{ root string }

func (h host) path(p string) (string, error) { return HostPath(h.root, p) }

// fileState is a node file as it is now.
type fileState struct {
	Exists bool
	Data   []byte
	Mode   fs.FileMode // permission bits with setuid, setgid, sticky
	UID    int
	GID    int
}

// modeBits are the mode bits node-setup records and restores.
const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// read reads the node's file p; a missing file is not an error.
func (h host) read(p string) (fileState, error) {
	local, err := h.path(p)
	if err != nil {
		return fileState{}, err
	}
	info, err := os.Stat(local)
	if errors.Is(err, fs.ErrNotExist) {
		return fileState{}, nil
	}
	if err != nil {
		return fileState{}, err
	}
	if !info.Mode().IsRegular() {
		return fileState{}, fmt.Errorf("%s is not a regular file (%s)", p, info.Mode().Type())
	}
	data, err := os.ReadFile(local)
	if err != nil {
		return fileState{}, err
	}
	st := fileState{Exists: true, Data: data, Mode: info.Mode() & modeBits, UID: -1, GID: -1}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		st.UID, st.GID = int(sys.Uid), int(sys.Gid)
	}
	return st, nil
}

// exists reports whether the node's path p exists (as anything).
func (h host) exists(p string) (bool, error) {
	local, err := h.path(p)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(local)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// write replaces the node's file p with data, atomically (a file beside it,
// synced, renamed over it), with mode and, where they are not -1 and differ
// from this process's, owner uid and gid. The directory must exist.
func (h host) write(p string, data []byte, mode fs.FileMode, uid, gid int) error {
	local, err := h.path(p)
	if err != nil {
		return err
	}
	dir := filepath.Dir(local)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(local)+".node-setup-")
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	// Chown first: it clears setuid and setgid, which Chmod then sets.
	if uid >= 0 && gid >= 0 && (uid != os.Getuid() || gid != os.Getgid()) {
		if err := tmp.Chown(uid, gid); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	if err := tmp.Chmod(mode & modeBits); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := os.Rename(tmp.Name(), local); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	done = true
	syncDir(dir)
	return nil
}

// remove deletes the node's file p; a missing file is fine.
func (h host) remove(p string) (bool, error) {
	local, err := h.path(p)
	if err != nil {
		return false, err
	}
	err = os.Remove(local)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	syncDir(filepath.Dir(local))
	return true, nil
}

// mkdirAll creates the node's directory p and its missing parents (mode
// 0755) and returns those it created, outermost first.
func (h host) mkdirAll(p string) ([]string, error) {
	var missing []string
	for d := path.Clean(p); d != "/"; d = path.Dir(d) {
		ok, err := h.exists(d)
		if err != nil {
			return nil, err
		}
		if ok {
			break
		}
		missing = append([]string{d}, missing...)
	}
	for i, d := range missing {
		local, err := h.path(d)
		if err != nil {
			return missing[:i], err
		}
		if err := os.Mkdir(local, 0o755); err != nil {
			return missing[:i], fmt.Errorf("create directory %s: %w", d, err)
		}
	}
	return missing, nil
}

// syncDir makes a rename or removal in dir durable; best effort.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// lookPath finds name in the node's usual PATH and returns its node path.
func (h host) lookPath(name string) (string, bool) {
	for _, dir := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		p := path.Join(dir, name)
		local, err := h.path(p)
		if err != nil {
			continue
		}
		if info, err := os.Stat(local); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
