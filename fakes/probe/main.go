// Command probe is the exec readiness probe of faultline's pods. Their HTTP
// sides listen on loopback only (a pod on the network must not reach a
// fake's controls), so the kubelet's httpGet probe, which dials the pod IP,
// cannot reach them; the kubelet runs this inside the container instead.
//
//	probe http://127.0.0.1:8080/healthz
//
// It exits 0 on a 2xx answer within 2 seconds and 1 otherwise, with the
// reason on stderr (the kubelet shows it in the pod's events). It holds no
// control token (fakes/lib/control), so it asks only /healthz, the one
// path that answers without one and only reports.
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"
)

// healthPath is control.HealthPath (fakes/lib/control), not imported:
// that package brings gRPC into a binary the kubelet starts every few
// seconds. The test keeps the two equal.
const healthPath = "/healthz"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: probe http://127.0.0.1:<port>"+healthPath)
		os.Exit(2)
	}
	if err := probe(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func probe(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Path != healthPath || u.RawQuery != "" {
		return fmt.Errorf("probe: want http://127.0.0.1:<port>%s, got %q", healthPath, raw)
	}
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(u.String())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s: %s", u, resp.Status, body)
	}
	return nil
}
