// Package artifactdir decides what faultline may delete or overwrite in a
// directory it writes results into. A directory is faultline's only when
// faultline made it (or found it empty) and left its marker file there; the
// marker records every path a run reserved, and a later run removes those
// and nothing else. Files a user put there by hand are never touched, and a
// path that became a symbolic link is never followed.
package artifactdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MarkerFile is the file that makes a directory faultline's.
const MarkerFile = ".faultline-artifacts"

// markerTool is what a marker must say to count: an empty or foreign file of
// the same name does not make a directory faultline's.
const markerTool = "faultline"

// maxMarker bounds what is read of a marker: anyone may have written it.
const maxMarker = 1 << 20

// ErrNotOurs is what a NotOursError is (errors.Is): the user chose a
// directory, or left a file, that faultline must not touch; bad input.
var ErrNotOurs = errors.New("not faultline's")

// NotOursError refuses a directory faultline did not make, or a path in its
// own directory that it did not write (or that is now a symbolic link).
type NotOursError struct {
	// Dir is the directory; Path, when set, what is in the way inside it.
	Dir, Path string
	// Flag chooses another directory (--artifacts, --out).
	Flag string
	// Why says what is wrong, after the path.
	Why string
}

func (e *NotOursError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("%s %s: move it, or choose another directory with %s", e.Path, e.Why, e.Flag)
	}
	return fmt.Sprintf("%s %s %s: choose another directory with %s", e.Flag, e.Dir, e.Why, e.Flag)
}

// Is makes errors.Is(err, ErrNotOurs) hold.
func (e *NotOursError) Is(target error) bool { return target == ErrNotOurs }

// marker is the marker file's content.
type marker struct {
	Tool string `json:"tool"`
	Note string `json:"note"`
	// MadeBy and Made: the command (and faultline's version) that made the
	// directory its own, and when.
	MadeBy string    `json:"madeBy"`
	Made   time.Time `json:"made"`
	// LastBy and Last: the run that wrote Written.
	LastBy string    `json:"lastBy,omitempty"`
	Last   time.Time `json:"last,omitzero"`
	// Written are the paths (slash-separated, relative to the directory)
	// runs reserved; the next run removes these and nothing else.
	Written []string `json:"written"`
}

const note = "faultline made this directory; a run removes only the paths listed in written, nothing else"

// Dir is a directory faultline owns, for one command's run. It is safe for
// concurrent use: runtimes run side by side.
type Dir struct {
	path, flag string

	mu sync.Mutex
	m  marker
}

// Claim makes path faultline's for the command by (e.g. "faultline e2e
// v0.4.0"), creating it if it is missing and adopting it if it is empty;
// a directory with a marker is faultline's already. Anything else, a file or
// a directory with something in it, is a NotOursError naming flag. A
// symbolic link the user passed as path is followed: they chose it.
func Claim(path, flag, by string) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	d := &Dir{path: abs, flag: flag}
	now := time.Now().UTC()
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	case !st.IsDir():
		return nil, &NotOursError{Dir: abs, Flag: flag, Why: "is not a directory"}
	}
	// One run at a time: another run's Clean would remove what this one
	// records, and their records would overwrite each other.
	if err := lockDir(abs); errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, &NotOursError{Dir: abs, Flag: flag, Why: "is in use by another faultline run"}
	} else if err != nil {
		return nil, err
	}
	m, found, err := readMarker(abs)
	if err != nil {
		return nil, err
	}
	if !found {
		entries, err := os.ReadDir(abs)
		if err != nil {
			return nil, err
		}
		if len(entries) > 0 {
			return nil, &NotOursError{Dir: abs, Flag: flag,
				Why: fmt.Sprintf("is not empty and faultline did not make it (no %s in it)", MarkerFile)}
		}
		m = marker{Tool: markerTool, Note: note, MadeBy: by, Made: now}
	}
	m.LastBy, m.Last = by, now
	d.m = m
	if found {
		return d, nil // saved with what this run records
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d, d.save()
}

// held are the directories this process has locked (lockDir), by path:
// the lock is the process's, taken once and kept until it exits, so that a
// command (or a test) that claims a directory again does not conflict with
// itself, and a run that dies frees it.
var held = struct {
	sync.Mutex
	dirs map[string]*os.File
}{dirs: map[string]*os.File{}}

// lockDir takes an exclusive flock on the directory, without waiting:
// syscall.EWOULDBLOCK when another process holds it.
func lockDir(abs string) error {
	held.Lock()
	defer held.Unlock()
	if _, ok := held.dirs[abs]; ok {
		return nil
	}
	f, err := os.Open(abs)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return err
	}
	held.dirs[abs] = f
	return nil
}

// readMarker reads dir's marker. A marker that is not a regular file, or
// does not say faultline wrote it, is not one (found is false).
func readMarker(dir string) (m marker, found bool, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return m, false, err
	}
	defer root.Close()
	st, err := root.Lstat(MarkerFile)
	if errors.Is(err, fs.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	if !st.Mode().IsRegular() || st.Size() > maxMarker {
		return m, false, nil
	}
	data, err := root.ReadFile(MarkerFile)
	if err != nil {
		return m, false, err
	}
	if json.Unmarshal(data, &m) != nil || m.Tool != markerTool {
		return marker{}, false, nil
	}
	return m, true, nil
}

// Path is the directory's absolute path.
func (d *Dir) Path() string { return d.path }

// Clean removes what earlier runs recorded writing, and only that; the
// record is then empty. A recorded path that is no longer inside the
// directory, or that is (or lies under) a symbolic link, is left alone
// and dropped from the record: it is returned in left.
func (d *Dir) Clean() (left []string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	root, err := os.OpenRoot(d.path)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var errs []error
	var kept []string
	for _, rel := range d.m.Written {
		name, ok := local(rel)
		if !ok {
			left = append(left, rel)
			continue
		}
		switch link, err := underLink(root, name); {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			errs = append(errs, err)
			kept = append(kept, rel)
			continue
		case link:
			left = append(left, rel)
			continue
		}
		// The root keeps the removal inside the directory should the path
		// change under us; RemoveAll does not follow links below it.
		if err := root.RemoveAll(name); err != nil {
			errs = append(errs, err)
			kept = append(kept, rel)
		}
	}
	d.m.Written = kept
	if err := d.save(); err != nil {
		errs = append(errs, err)
	}
	return left, errors.Join(errs...)
}

// Reserve records the paths (relative to the directory) a run is about to
// write, before it writes them, so that a run that dies half-way leaves a
// record of all it may have written. Each must be missing, or recorded
// already: a file a user placed at one of them, or a symbolic link, is a
// NotOursError and nothing is recorded.
func (d *Dir) Reserve(rels ...string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	add, err := d.check(rels)
	if err != nil || len(add) == 0 {
		return err
	}
	d.m.Written = append(d.m.Written, add...)
	return d.save()
}

// Check says what Reserve would, and records nothing: a run asks before it
// removes anything, so that a refused run leaves the directory as it was.
func (d *Dir) Check(rels ...string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, err := d.check(rels)
	return err
}

// check returns the paths of rels not recorded yet (the caller holds mu).
func (d *Dir) check(rels []string) (add []string, err error) {
	root, err := os.OpenRoot(d.path)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for _, rel := range rels {
		name, ok := local(rel)
		if !ok {
			return nil, fmt.Errorf("%s: not a path inside %s", rel, d.path)
		}
		rel = filepath.ToSlash(name)
		link, err := underLink(root, name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if !slices.Contains(d.m.Written, rel) && !slices.Contains(add, rel) {
				add = append(add, rel)
			}
		case err != nil:
			return nil, err
		case link:
			return nil, &NotOursError{Dir: d.path, Path: filepath.Join(d.path, name), Flag: d.flag, Why: "is a symbolic link, which faultline does not follow"}
		case !slices.Contains(d.m.Written, rel):
			return nil, &NotOursError{Dir: d.path, Path: filepath.Join(d.path, name), Flag: d.flag, Why: "was not written by faultline"}
		}
	}
	return add, nil
}

// Mkdir reserves a directory (Reserve) and makes it; it returns its path.
func (d *Dir) Mkdir(rel string) (string, error) {
	if err := d.Reserve(rel); err != nil {
		return "", err
	}
	path := filepath.Join(d.path, filepath.FromSlash(rel))
	return path, os.MkdirAll(path, 0o755)
}

// save writes the marker (the caller holds mu): a temporary file renamed
// over it, so a crash never leaves half a record.
func (d *Dir) save() error {
	data, err := json.MarshalIndent(d.m, "", "  ")
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(d.path)
	if err != nil {
		return err
	}
	defer root.Close()
	// The process's own name: with the directory locked no other process
	// writes here, and mu orders this one's saves.
	tmp := fmt.Sprintf("%s.tmp-%d", MarkerFile, os.Getpid())
	// A link placed at the temporary name must not redirect the write.
	if err := root.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return root.Rename(tmp, MarkerFile)
}

// local turns a recorded path into a name inside the directory: relative,
// clean, not the directory itself and not the marker.
func local(rel string) (string, bool) {
	name := filepath.FromSlash(rel)
	if !filepath.IsLocal(name) || filepath.Clean(name) != name || name == "." {
		return "", false
	}
	first, _, _ := strings.Cut(filepath.ToSlash(name), "/")
	if strings.HasPrefix(first, MarkerFile) { // the marker and its temporary files
		return "", false
	}
	return name, true
}

// underLink says whether name, or a directory on the way to it, is a
// symbolic link; fs.ErrNotExist when it is missing.
func underLink(root *os.Root, name string) (bool, error) {
	parts := strings.Split(filepath.ToSlash(name), "/")
	for i := range parts {
		st, err := root.Lstat(filepath.Join(parts[:i+1]...))
		if err != nil {
			return false, err
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return true, nil
		}
	}
	return false, nil
}
