// Package counter counts how often each limited fault ("times=N") has
// fired. Given a directory it keeps the counts in a file there, so that a
// "crash;times=1" fault does not fire again in the restarted process and
// put the plugin into a crash loop.
package counter

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

const fileName = "fault-counts.json"

// Counter is safe for concurrent use.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
	path   string // "" keeps the counts in memory only
}

// New returns a counter that persists to dir, or only lives in memory if
// dir is "".
func New(dir string) (*Counter, error) {
	c := &Counter{counts: map[string]int{}}
	if dir == "" {
		return c, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("fault counter: %w", err)
	}
	c.path = filepath.Join(dir, fileName)
	data, err := os.ReadFile(c.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("fault counter: %w", err)
	default:
		if err := json.Unmarshal(data, &c.counts); err != nil {
			return nil, fmt.Errorf("fault counter: %s: %w", c.path, err)
		}
	}
	return c, nil
}

// Take reports whether a fault limited to limit hits (0: unlimited) may
// fire once more for key, and counts the hit. The count is saved before
// Take returns, so a fault that then kills the process stays counted. A
// save error is returned along with the decision, which stands.
func (c *Counter) Take(key string, limit int) (bool, error) {
	if limit <= 0 {
		return true, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts[key] >= limit {
		return false, nil
	}
	c.counts[key]++
	return true, c.save()
}

// Count returns how often the fault for key has fired.
func (c *Counter) Count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}

// save writes the counts; the caller holds c.mu. Rename makes the update
// atomic, so a crash never leaves a half-written file behind.
func (c *Counter) save() error {
	if c.path == "" {
		return nil
	}
	data, err := json.Marshal(c.counts)
	if err != nil {
		return err
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("fault counter: %w", err)
	}
	if err := os.Rename(tmp, c.path); err != nil {
		return fmt.Errorf("fault counter: %w", err)
	}
	return nil
}
