package nodesetup

// The line node-setup (nodesetup/cmd/node-setup) prints when it is done on a node, and
// `faultline node-setup` reads from the pod's log.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Modes of node-setup.
const (
	ModeInstall = "install"
	ModeRemove  = "remove"
)

// ReportPrefix starts the report line.
const ReportPrefix = "node-setup report: "

// Report is what node-setup did on one node.
type Report struct {
	Node   string `json:"node,omitempty"`
	Mode   string `json:"mode"`
	Result Result `json:"result"`
	// Restarted: node-setup restarted the runtime, and it answers again.
	Restarted bool `json:"restarted,omitempty"`
	// RestartReason says why it restarted the runtime.
	RestartReason string `json:"restartReason,omitempty"`
	// Handler is whether the runtime's CRI Status lists the handler:
	// "listed", "not listed", or "unknown" (the runtime lists no handlers).
	Handler string `json:"handler,omitempty"`
}

// Handler states of a Report.
const (
	HandlerListed    = "listed"
	HandlerNotListed = "not listed"
	HandlerUnknown   = "unknown"
)

// Line is the report as one log line.
func (r Report) Line() string {
	data, err := json.Marshal(r)
	if err != nil {
		return ReportPrefix + fmt.Sprintf(`{"error": %q}`, err.Error())
	}
	return ReportPrefix + string(data)
}

// ParseReport finds the last report line in a pod's log.
func ParseReport(log []byte) (Report, bool) {
	var found Report
	ok := false
	scanner := bufio.NewScanner(bytes.NewReader(log))
	scanner.Buffer(make([]byte, 64*1024), 1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		i := strings.Index(line, ReportPrefix)
		if i < 0 {
			continue
		}
		var r Report
		if err := json.Unmarshal([]byte(line[i+len(ReportPrefix):]), &r); err == nil {
			found, ok = r, true
		}
	}
	return found, ok
}

// Summary is the report in a few words: what changed, the restart, the
// handler, and the notes.
func (r Report) Summary() string {
	var parts []string
	if len(r.Result.Changes) == 0 {
		parts = append(parts, "nothing changed")
	} else {
		var changes []string
		for _, c := range r.Result.Changes {
			changes = append(changes, c.String())
		}
		parts = append(parts, strings.Join(changes, ", "))
	}
	if r.Restarted {
		parts = append(parts, "restarted "+r.Result.Runtime+" ("+r.RestartReason+")")
	}
	if r.Handler != "" {
		parts = append(parts, "handler "+HandlerName+" "+r.Handler)
	}
	out := strings.Join(parts, "; ")
	for _, n := range r.Result.Notes {
		out += "\n    note: " + n
	}
	return out
}
