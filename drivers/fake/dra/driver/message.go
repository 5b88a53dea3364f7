package driver

import (
	"fmt"
	"strings"

	"github.com/faultline-k8s/faultline/drivers/fake/dra/calls"
)

// errorText builds the error string the kubelet puts verbatim into the pod's
// FailedPrepareDynamicResources event. It is all a user sees, so it names
// everything needed to find the culprit, and it is a stable format that
// specs match substrings of:
//
//	driver <driver>: <prepare|unprepare> of claim <ns>/<name> (uid <uid>) failed on attempt <n> [<class>]:
//	<k> of <m> devices failed: pool=<pool> device=<dev> request=<req>: <class>: <detail>; pool=...
//
// (one line; every failing device is listed, not only the first).
func (d *Driver) errorText(m calls.Method, namespace, name, uid string, attempt, total int, failures []deviceFailure) string {
	label, _ := overall(failures)
	failing := map[string]bool{}
	parts := make([]string, 0, len(failures))
	for _, f := range failures {
		failing[f.Pool+"/"+f.Device.Device] = true
		parts = append(parts, fmt.Sprintf("pool=%s device=%s request=%s: %s: %s", f.Pool, f.Device.Device, f.Request, f.label, f.detail))
	}
	return fmt.Sprintf("driver %s: %s of claim %s/%s (uid %s) failed on attempt %d [%s]: %d of %d devices failed: %s",
		d.cfg.DriverName, verb(m), namespace, name, uid, attempt, label, len(failing), total, strings.Join(parts, "; "))
}

func verb(m calls.Method) string {
	if m == calls.Unprepare {
		return "unprepare"
	}
	return "prepare"
}
