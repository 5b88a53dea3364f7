package driver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/faultline-k8s/faultline/fakes/dra/calls"
	"github.com/faultline-k8s/faultline/fakes/lib/textcap"
	"github.com/faultline-k8s/faultline/vocab/fakemodes"
)

// errorText builds the error string the kubelet puts verbatim into the pod's
// FailedPrepareDynamicResources event. It is all a user sees, so it names
// everything needed to find the culprit, and it is a stable format that
// specs match substrings of:
//
//	driver <driver>: <prepare|unprepare> of claim <ns>/<name> (uid <uid>) failed on attempt <n> [<class>]:
//	<k> of <m> devices failed: pool=<pool> device=<dev> request=<req>: <class>: <detail>; pool=...
//
// (one line; every failing device is listed, not only the first, unless
// the fake mode FirstFailingDeviceOnly asks it to misbehave).
func (d *Driver) errorText(m calls.Method, namespace, name, uid string, attempt, total int, failures []deviceFailure) string {
	label, _ := overall(failures)
	failing := map[string]bool{}
	parts := make([]string, 0, len(failures))
	for _, f := range failures {
		failing[f.Pool+"/"+f.Device.Device] = true
		parts = append(parts, fmt.Sprintf("pool=%s device=%s request=%s: %s: %s", f.Pool, f.Device.Device, f.Request, f.label, f.detail))
	}
	if d.fakeMode(fakemodes.FirstFailingDeviceOnly) {
		parts = parts[:1]
	}
	return protoString(fmt.Sprintf("driver %s: %s of claim %s/%s (uid %s) failed on attempt %d [%s]: %d of %d devices failed: %s",
		d.cfg.DriverName, verb(m), namespace, name, uid, attempt, label, len(failing), total, strings.Join(parts, "; ")), maxErrorText)
}

// fakeMode says whether the driver runs with the misbehaviour name.
func (d *Driver) fakeMode(name string) bool { return slices.Contains(d.cfg.FakeModes, name) }

func verb(m calls.Method) string {
	if m == calls.Unprepare {
		return "unprepare"
	}
	return "prepare"
}

// maxErrorText bounds the error text of a claim: a condition message holds
// at most 32768 bytes, and the text goes into events and gRPC answers.
const maxErrorText = 16 << 10

// protoString makes s fit for a protobuf string field (and the API's
// messages): valid UTF-8, at most limit bytes. Protobuf refuses to marshal
// invalid UTF-8, which would fail the whole response (every claim of a
// NodePrepareResources call, every NodeWatchResources send).
func protoString(s string, limit int) string {
	return textcap.Cut(s, limit)
}

// quoteCut quotes a value from outside for an error message, cut to limit.
func quoteCut(s string, limit int) string {
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	return strconv.Quote(textcap.Cut(s, limit)) + fmt.Sprintf(" (%d bytes)", len(s))
}
