package capacity

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Load sums up the one-minute load average read while something ran.
type Load struct {
	Samples   int
	Mean, Max float64
	Cores     int
}

func (l Load) String() string {
	if l.Samples == 0 {
		return "not read"
	}
	return fmt.Sprintf("mean %.1f, max %.1f on %d cores (%d readings)", l.Mean, l.Max, l.Cores, l.Samples)
}

// SampleLoad reads the one-minute load average every period until ctx ends
// or the returned function is called, which stops the readings and sums
// them up. Where /proc/loadavg cannot be read there are no readings.
func SampleLoad(ctx context.Context, every time.Duration) func() Load {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu   sync.Mutex
		l    Load
		sum  float64
		done = make(chan struct{})
	)
	l.Cores = runtime.NumCPU()
	read := func() {
		v, err := readLoad("/proc/loadavg")
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		l.Samples++
		sum += v
		l.Max = max(l.Max, v)
		l.Mean = sum / float64(l.Samples)
	}
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				read()
			}
		}
	}()
	return func() Load {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return l
	}
}

// readLoad reads the one-minute load average of a /proc/loadavg file.
func readLoad(path string) (float64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return 0, fmt.Errorf("%s is empty", path)
	}
	return strconv.ParseFloat(fields[0], 64)
}
