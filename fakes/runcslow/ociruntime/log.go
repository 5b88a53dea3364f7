package ociruntime

// The wrapper's log: one JSON line per command that makes or ends an
// object. It is the witness a verdict rests on, so a record is written
// durably (fsync) before the command runs, and a record that cannot be
// written fails the command instead of being lost.

import (
	"github.com/faultline-k8s/faultline/fakes/lib/textcap"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"
)

// Record is one line of the wrapper's log.
type Record struct {
	Time    time.Time `json:"time"`
	Command string    `json:"command"`
	// Phase: "begin" when the wrapper starts, "exec" when it hands over to the
	// real runtime after the delay, "error" when it refused the request.
	Phase string `json:"phase"`
	ID    string `json:"id"`
	Kind  string `json:"kind,omitempty"`
	// Request is the bundle's RequestAnnotation; "" when it has none (and
	// for start, kill and delete, which have no bundle: their ID ties them
	// to the create).
	Request string `json:"request"`
	Delay   string `json:"delay,omitempty"`
	// Released: the exec record of a held creation whose gate opened
	// (false: the hold ran to its bound).
	Released bool `json:"released,omitempty"`
	// Failed: the exec record of a held creation the spec failed through
	// its gate (ReleaseFailing): runc-slow refused the create.
	Failed bool   `json:"failed,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Bounds of a record's fields, so that a huge annotation cannot make a
// line nobody reads back: a container ID is 64 characters, a request a
// spec's token.
const (
	MaxField      = 1024
	MaxErrorField = 4096
)

// recordStart is how every line Append writes begins (Time is the first
// field), which lets ParseLog find a record after a torn line.
const recordStart = `{"time":`

// Recorded reports whether a command is worth a record: the ones that make or
// end an object, not the runtime's frequent state queries.
func Recorded(command string) bool {
	switch command {
	case "create", "run", "start", "kill", "delete":
		return true
	}
	return false
}

// Capped returns r with every field within its bound and valid UTF-8.
func (r Record) Capped() Record {
	r.Command = textcap.Cut(r.Command, MaxField)
	r.Phase = textcap.Cut(r.Phase, MaxField)
	r.ID = textcap.Cut(r.ID, MaxField)
	r.Kind = textcap.Cut(r.Kind, MaxField)
	r.Request = textcap.Cut(r.Request, MaxField)
	r.Delay = textcap.Cut(r.Delay, MaxField)
	r.Error = textcap.Cut(r.Error, MaxErrorField)
	return r
}

// quote is %q of a value for an error message, cut so that the quoted
// text stays within 128 bytes (an invalid byte quotes as \xNN), with the
// value's length when cut.
func quote(s string) string {
	const limit = 128
	q := strconv.Quote(s)
	if len(q) <= limit {
		return q
	}
	n := min(len(s), limit)
	for {
		for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
			n--
		}
		if q = strconv.Quote(s[:n]); len(q) <= limit || n == 0 {
			return q + fmt.Sprintf("... (%d bytes)", len(s))
		}
		n = n * 3 / 4
	}
}

// Append writes one record to the log file durably, creating the file and
// its directory: it returns only after the line is on disk (fsync of the
// file, and of the directory that got a new entry). Concurrent wrappers
// take turns (flock); a write that fails halfway is cut off again, and a
// line torn by a crash before is ended first, so every record stays a line
// of its own. Any failure is an error: the caller must not act as if the
// record existed.
func Append(path string, r Record) error {
	line, err := json.Marshal(r.Capped())
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if err := mkdirDurable(filepath.Dir(path)); err != nil {
		return err
	}
	created := false
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		created = true
	} else if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if n, err := f.Write(line); err != nil {
		if n > 0 {
			_ = f.Truncate(size)
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if created {
		if err := syncDir(filepath.Dir(path)); err != nil {
			return err
		}
	}
	return f.Close()
}

// mkdirDurable creates dir (and its parents) and syncs each directory that
// got a new entry.
func mkdirDurable(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirDurable(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// ParseLog reads the records of a log. It skips what it cannot read (a line
// cut short by a node crash), and finds a record that follows a torn line
// on the same line.
func ParseLog(data []byte) []Record {
	var out []Record
	for _, line := range bytes.Split(data, []byte("\n")) {
		for len(line) > 0 {
			var r Record
			if json.Unmarshal(line, &r) == nil {
				if r.Command != "" {
					out = append(out, r)
				}
				break
			}
			i := bytes.Index(line[1:], []byte(recordStart))
			if i < 0 {
				break
			}
			line = line[1+i:]
		}
	}
	return out
}

// RuntimeLogError writes msg into the runtime's own log (runc's --log, in
// its --log-format), where containerd's shim looks for the reason a runc
// command failed. Best effort: the message also goes to stderr.
func RuntimeLogError(inv Invocation, msg string) error {
	if inv.Log == "" {
		return nil
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	var line []byte
	if inv.LogFormat == "json" {
		line, _ = json.Marshal(struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
			Time  string `json:"time"`
		}{"error", textcap.Cut(msg, MaxErrorField), now})
	} else {
		line = fmt.Appendf(nil, "time=%q level=error msg=%q", now, textcap.Cut(msg, MaxErrorField))
	}
	f, err := os.OpenFile(inv.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}
