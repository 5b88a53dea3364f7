// Package nodesetup installs the faultline-slow runtime handler (runc-slow,
// fakes/runcslow/cmd/runc-slow) into a node's container runtime, and removes it again,
// leaving the node's files as they were, byte for byte.
//
// It works on the node's filesystem mounted at a root directory (/host in
// the node-setup DaemonSet's pod, nodesetup/cmd/node-setup; a temporary directory in
// the tests) and changes nothing else: restarting the runtime is the
// caller's, when Result.Restart says so.
//
// Install writes the handler's configuration for the node's runtime
// (vocab/runtimes): on CRI-O a drop-in in /etc/crio/crio.conf.d; on
// containerd a drop-in where config.toml imports a directory by pattern,
// else the handler's tables appended to config.toml. It copies runc-slow to
// /usr/local/bin/runc-slow, and writes /etc/faultline/runc-slow.delegate
// (the node's real OCI runtime, from its default runtime handler) if the
// node has none. Before it changes a file it records in
// /etc/faultline/node-setup what it creates and the original bytes, mode
// and owner of what it changes; Remove restores each changed file from
// there, deletes each created one, and deletes the record.
//
// A node whose runtime has the handler already, not from node-setup (a
// faultline node image), is left alone. Install is idempotent: a second
// install finds everything in place, changes nothing and asks no restart.
package nodesetup

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// Actions of a Change.
const (
	Created  = "created"
	Modified = "modified"
	Updated  = "updated" // a file node-setup made or changed, written again
	Restored = "restored"
	Deleted  = "deleted"
)

// Change is what happened to one node file.
type Change struct {
	Path   string `json:"path"`
	Action string `json:"action"`
}

func (c Change) String() string { return c.Action + " " + c.Path }

// Result is what Install or Remove did.
type Result struct {
	Runtime string   `json:"runtime"`
	Changes []Change `json:"changes,omitempty"`
	// Restart: a file the runtime reads at start changed; the runtime must
	// restart to see it.
	Restart bool `json:"restart,omitempty"`
	// Notes say what was found and left alone, and why.
	Notes []string `json:"notes,omitempty"`
}

// Changed reports whether any node file changed.
func (r Result) Changed() bool { return len(r.Changes) > 0 }

// Options of Install.
type Options struct {
	// RuncSlow is the runc-slow binary to install (a local path).
	RuncSlow string
}

// plan is what a runtime's configuration needs.
type plan struct {
	// Configured: the runtime's config has the handler already, in Where.
	Configured bool
	Where      string
	// Ops configure it, if it is not.
	Ops []op
	// Delegate is the node's real OCI runtime (its default handler's), or
	// DelegateErr why it is unknown.
	Delegate    string
	DelegateErr error
	Notes       []string
}

// op is a file Install wants.
type op struct {
	Path string
	Data []byte
	// Mode of a new file (a changed file keeps its mode).
	Mode fs.FileMode
	// Config: the runtime reads it at start.
	Config bool
	// IfMissing: only write it where there is none.
	IfMissing bool
}

// planFor works out the handler's configuration for the runtime; with
// detect, only whether it is configured (and the delegate), no Ops.
func planFor(h host, rt runtimes.Runtime, detect bool) (plan, error) {
	switch rt.Name {
	case "containerd":
		return containerdPlan(h, detect)
	case "crio":
		return crioPlan(h, detect)
	}
	return plan{}, fmt.Errorf("node-setup cannot configure runtime %s (it knows containerd and crio)", rt.Name)
}

// Configured reports whether the runtime's configuration on the node (under
// root) has the handler, and in which file.
func Configured(root string, rt runtimes.Runtime) (bool, string, error) {
	p, err := planFor(host{root}, rt, true)
	if err != nil {
		return false, "", err
	}
	return p.Configured, p.Where, nil
}

// Install installs the handler for runtime rt on the node under root.
func Install(root string, rt runtimes.Runtime, opts Options) (Result, error) {
	h := host{root}
	res := Result{Runtime: rt.Name}
	st, found, err := loadState(h)
	if err != nil {
		return res, err
	}
	if found && st.Runtime != rt.Name {
		return res, fmt.Errorf("node-setup installed the handler for %s on this node (%s), not for %s: remove it first", st.Runtime, StateFile, rt.Name)
	}
	p, err := planFor(h, rt, false)
	if err != nil {
		return res, err
	}
	res.Notes = append(res.Notes, p.Notes...)
	ours := found && (st.created(p.Where) != nil || st.changed(p.Where) != nil)
	if p.Configured && !ours {
		res.Notes = append(res.Notes, fmt.Sprintf("the %s handler is configured already, in %s, not by node-setup: nothing installed", HandlerName, p.Where))
		return res, nil
	}
	if opts.RuncSlow == "" {
		return res, fmt.Errorf("no runc-slow binary to install")
	}
	binary, err := os.ReadFile(opts.RuncSlow)
	if err != nil {
		return res, fmt.Errorf("the runc-slow binary to install: %w", err)
	}
	ops := append([]op(nil), p.Ops...)
	ops = append(ops, op{Path: RuncSlowPath, Data: binary, Mode: 0o755})
	if p.DelegateErr != nil {
		if ok, err := h.exists(DelegatePath); err != nil || !ok {
			return res, p.DelegateErr
		}
	} else {
		ops = append(ops, op{Path: DelegatePath, Data: []byte(p.Delegate + "\n"), Mode: 0o644, IfMissing: true})
	}
	if !found {
		st = state{Version: stateVersion, Runtime: rt.Name}
	}
	for _, o := range ops {
		change, err := apply(h, &st, o)
		if err != nil {
			return res, err
		}
		if change != "" {
			res.Changes = append(res.Changes, Change{Path: o.Path, Action: change})
			res.Restart = res.Restart || o.Config
		}
	}
	return res, nil
}

// apply makes one file what o wants, recording in st, before it touches the
// file, what it creates or the original it changes. It returns the action,
// or "" when the file was as wanted.
func apply(h host, st *state, o op) (string, error) {
	cur, err := h.read(o.Path)
	if err != nil {
		return "", err
	}
	if cur.Exists && (o.IfMissing || bytes.Equal(cur.Data, o.Data)) {
		return "", nil
	}
	wrote := sha256Hex(o.Data)
	created, changed := st.created(o.Path), st.changed(o.Path)
	if created != nil || changed != nil {
		// node-setup's own file, or one it has the original of.
		mode, uid, gid := o.Mode, -1, -1
		if changed != nil {
			mode, uid, gid = changed.Mode, changed.UID, changed.GID
			changed.Wrote = wrote
		} else {
			created.Wrote = wrote
		}
		if !cur.Exists {
			if err := mkdirFor(h, st, o.Path); err != nil {
				return "", err
			}
		}
		if err := saveState(h, st); err != nil {
			return "", err
		}
		return Updated, h.write(o.Path, o.Data, mode, uid, gid)
	}
	if !cur.Exists {
		st.Created = append(st.Created, createdFile{Path: o.Path, Config: o.Config, Wrote: wrote})
		// Recorded before the directories and the file exist: a remove after
		// a crash here deletes what is there, and nothing else.
		if err := saveState(h, st); err != nil {
			return "", err
		}
		if err := mkdirFor(h, st, o.Path); err != nil {
			return "", err
		}
		if err := saveState(h, st); err != nil {
			return "", err
		}
		return Created, h.write(o.Path, o.Data, o.Mode, -1, -1)
	}
	c, err := saveOriginal(h, st, o.Path, cur)
	if err != nil {
		return "", err
	}
	c.Config, c.Wrote = o.Config, wrote
	st.Changed = append(st.Changed, c)
	if err := saveState(h, st); err != nil {
		return "", err
	}
	return Modified, h.write(o.Path, o.Data, cur.Mode, cur.UID, cur.GID)
}

// mkdirFor creates the directory of the node's file p, recording what it
// creates.
func mkdirFor(h host, st *state, p string) error {
	dirs, err := h.mkdirAll(path.Dir(p))
	st.CreatedDirs = append(st.CreatedDirs, dirs...)
	return err
}

// NothingToRemove is Remove's note on a node without node-setup's record.
const NothingToRemove = "nothing to remove: node-setup's record " + StateFile +
	" is not on this node (node-setup installed nothing here, or it was removed already)"

// Installed reports whether node-setup's record is on the node, and the
// runtime it installed the handler for.
func Installed(root string) (runtime string, found bool, err error) {
	st, found, err := loadState(host{root})
	return st.Runtime, found, err
}

// Remove undoes what Install did on the node under root: each file it
// changed gets its original bytes, mode and owner back, each file and
// directory it created goes, and so does its record. Without a record it
// changes nothing and says so (Result.Notes).
func Remove(root string) (Result, error) {
	h := host{root}
	st, found, err := loadState(h)
	if err != nil {
		return Result{}, err
	}
	if !found {
		return Result{Notes: []string{NothingToRemove}}, nil
	}
	res := Result{Runtime: st.Runtime}
	for i := len(st.Changed) - 1; i >= 0; i-- {
		c := st.Changed[i]
		original, err := readOriginal(h, c)
		if err != nil {
			return res, err
		}
		cur, err := h.read(c.Path)
		if err != nil {
			return res, err
		}
		if cur.Exists && bytes.Equal(cur.Data, original) && cur.Mode == c.Mode && (c.UID < 0 || cur.UID == c.UID) && (c.GID < 0 || cur.GID == c.GID) {
			continue
		}
		if cur.Exists && sha256Hex(cur.Data) != c.Wrote {
			res.Notes = append(res.Notes, fmt.Sprintf("%s changed after node-setup installed the handler; its original is restored over those changes", c.Path))
		}
		if !cur.Exists {
			if _, err := h.mkdirAll(path.Dir(c.Path)); err != nil {
				return res, err
			}
		}
		if err := h.write(c.Path, original, c.Mode, c.UID, c.GID); err != nil {
			return res, err
		}
		res.Changes = append(res.Changes, Change{Path: c.Path, Action: Restored})
		res.Restart = res.Restart || c.Config
	}
	for i := len(st.Created) - 1; i >= 0; i-- {
		c := st.Created[i]
		cur, err := h.read(c.Path)
		if err != nil {
			return res, err
		}
		if cur.Exists && sha256Hex(cur.Data) != c.Wrote {
			res.Notes = append(res.Notes, fmt.Sprintf("%s changed after node-setup created it; deleted anyway", c.Path))
		}
		removed, err := h.remove(c.Path)
		if err != nil {
			return res, err
		}
		if removed {
			res.Changes = append(res.Changes, Change{Path: c.Path, Action: Deleted})
			res.Restart = res.Restart || c.Config
		}
	}
	kept, err := dropState(h, st)
	if err != nil {
		return res, err
	}
	if len(kept) > 0 {
		res.Notes = append(res.Notes, "directories node-setup created are kept, something else is in them now: "+strings.Join(kept, ", "))
	}
	return res, nil
}
