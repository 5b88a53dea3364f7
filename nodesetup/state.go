package nodesetup

// What an install did to a node, kept on the node so that remove can undo it
// exactly: every file it created, every directory it created, and the
// original bytes, mode and owner of every file it changed (each original in
// a file of its own under originals/).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"
)

const (
	// StateDir holds node-setup's record of an install on the node.
	StateDir = "/etc/faultline/node-setup"
	// StateFile is the record itself.
	StateFile    = StateDir + "/state.json"
	originalsDir = StateDir + "/originals"
	stateVersion = 1
)

// state is the record of an install.
type state struct {
	Version int    `json:"version"`
	Runtime string `json:"runtime"`
	// Created are the files the install created, in order.
	Created []createdFile `json:"created,omitempty"`
	// CreatedDirs are the directories it created, outermost first (the
	// state directory's own included).
	CreatedDirs []string `json:"createdDirs,omitempty"`
	// Changed are the files it changed, in order.
	Changed []changedFile `json:"changed,omitempty"`
}

type createdFile struct {
	Path string `json:"path"`
	// Config: the runtime reads it at start (removing it needs a restart).
	Config bool `json:"config,omitempty"`
	// Wrote is the SHA-256 of what the install wrote.
	Wrote string `json:"wrote"`
}

type changedFile struct {
	Path   string      `json:"path"`
	Config bool        `json:"config,omitempty"`
	Mode   fs.FileMode `json:"mode"`
	UID    int         `json:"uid"`
	GID    int         `json:"gid"`
	// Original is the file under originals/ with the original bytes, and
	// OriginalSHA256 their digest.
	Original       string `json:"original"`
	OriginalSHA256 string `json:"originalSHA256"`
	Wrote          string `json:"wrote"`
}

func (s *state) created(p string) *createdFile {
	for i := range s.Created {
		if s.Created[i].Path == p {
			return &s.Created[i]
		}
	}
	return nil
}

func (s *state) changed(p string) *changedFile {
	for i := range s.Changed {
		if s.Changed[i].Path == p {
			return &s.Changed[i]
		}
	}
	return nil
}

// loadState reads the node's record; found is false when there is none.
func loadState(h host) (st state, found bool, err error) {
	f, err := h.read(StateFile)
	if err != nil {
		return state{}, false, err
	}
	if !f.Exists {
		return state{}, false, nil
	}
	if err := json.Unmarshal(f.Data, &st); err != nil {
		return state{}, true, fmt.Errorf("node-setup's record %s is unreadable: %w", StateFile, err)
	}
	if st.Version != stateVersion {
		return state{}, true, fmt.Errorf("node-setup's record %s has version %d, this node-setup reads version %d", StateFile, st.Version, stateVersion)
	}
	return st, true, nil
}

// saveState writes the record, creating the state directory (and recording
// the directories it creates) first.
func saveState(h host, st *state) error {
	dirs, err := h.mkdirAll(originalsDir)
	st.CreatedDirs = append(st.CreatedDirs, dirs...)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return h.write(StateFile, append(data, '\n'), 0o600, -1, -1)
}

// saveOriginal keeps the original bytes of a file the install changes.
func saveOriginal(h host, st *state, p string, f fileState) (changedFile, error) {
	dirs, err := h.mkdirAll(originalsDir)
	st.CreatedDirs = append(st.CreatedDirs, dirs...)
	if err != nil {
		return changedFile{}, err
	}
	// Named by the digest of its node path: flat, and stable for the path.
	name := sha256Hex([]byte(p))[:32]
	if err := h.write(path.Join(originalsDir, name), f.Data, 0o600, -1, -1); err != nil {
		return changedFile{}, err
	}
	return changedFile{Path: p, Mode: f.Mode, UID: f.UID, GID: f.GID, Original: name, OriginalSHA256: sha256Hex(f.Data)}, nil
}

// readOriginal reads a changed file's original bytes and checks them.
func readOriginal(h host, c changedFile) ([]byte, error) {
	f, err := h.read(path.Join(originalsDir, c.Original))
	if err != nil {
		return nil, err
	}
	if !f.Exists {
		return nil, fmt.Errorf("the original of %s (%s/%s) is missing", c.Path, originalsDir, c.Original)
	}
	if sha256Hex(f.Data) != c.OriginalSHA256 {
		return nil, fmt.Errorf("the original of %s (%s/%s) is damaged: its digest is not the recorded one", c.Path, originalsDir, c.Original)
	}
	return f.Data, nil
}

// dropState removes the state directory and every directory the install
// created that is empty now; it returns those it left (not empty).
func dropState(h host, st state) ([]string, error) {
	local, err := h.path(StateDir)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(local); err != nil {
		return nil, fmt.Errorf("remove %s: %w", StateDir, err)
	}
	var kept []string
	for i := len(st.CreatedDirs) - 1; i >= 0; i-- {
		d := st.CreatedDirs[i]
		local, err := h.path(d)
		if err != nil {
			return kept, err
		}
		err = os.Remove(local)
		switch {
		case err == nil, errors.Is(err, fs.ErrNotExist):
		case isNotEmpty(err):
			kept = append(kept, d)
		default:
			return kept, fmt.Errorf("remove directory %s: %w", d, err)
		}
	}
	return kept, nil
}

func isNotEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}
