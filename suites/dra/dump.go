package dra

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	"sigs.k8s.io/yaml"

	"github.com/faultline-k8s/faultline/suites/harness"
)

// dumpOnFailure registers, for the current spec, a dump of what the
// framework does not dump itself (it does namespace events and pods): every
// ResourceClaim of the namespace with its status, each driver's call record
// for it, and the driver log lines that mention its UID; each driver's
// devices and health stream record. Call it in a
// BeforeEach after framework.NewDefaultFramework, so that it runs before
// the namespace is deleted.
func dumpOnFailure(f *framework.Framework) {
	ginkgo.BeforeEach(func() {
		harness.OnFailure(func(ctx context.Context) { dumpClaims(ctx, f) })
	})
}

func dumpClaims(ctx context.Context, f *framework.Framework) {
	cs := f.ClientSet
	claims, err := cs.ResourceV1().ResourceClaims(f.Namespace.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		framework.Logf("dump: list ResourceClaims: %v", err)
		return
	}
	var b strings.Builder
	for _, c := range claims.Items {
		c.ManagedFields = nil
		y, _ := yaml.Marshal(c)
		fmt.Fprintf(&b, "\n=== ResourceClaim %s/%s (uid %s)\n%s", c.Namespace, c.Name, c.UID, y)
		for _, d := range drivers {
			pods, err := draClient().Pods(ctx, d)
			if err != nil {
				fmt.Fprintf(&b, "--- %s: %v\n", d.Name, err)
				continue
			}
			for _, pod := range pods {
				rep, err := draClient().On(pod.Spec.NodeName, d).Calls(ctx, string(c.UID))
				if err != nil {
					fmt.Fprintf(&b, "--- %s on %s: /calls: %v\n", d.Name, pod.Spec.NodeName, err)
					continue
				}
				if len(rep.Calls) == 0 {
					continue
				}
				j, _ := json.MarshalIndent(rep, "", "  ")
				fmt.Fprintf(&b, "--- %s on %s: GET /calls?claimUID=%s\n%s\n", d.Name, pod.Spec.NodeName, c.UID, j)
				fmt.Fprintf(&b, "--- %s on %s: log lines of %s/%s mentioning %s\n%s\n", d.Name, pod.Spec.NodeName,
					pod.Namespace, pod.Name, c.UID, harness.LogLinesMentioning(ctx, cs, &pod, "driver", string(c.UID)))
			}
		}
	}
	for _, d := range drivers {
		pods, _ := draClient().Pods(ctx, d)
		for _, pod := range pods {
			devs, err := draClient().On(pod.Spec.NodeName, d).Devices(ctx)
			j, _ := json.Marshal(devs)
			fmt.Fprintf(&b, "--- %s on %s: GET /devices: %s %v\n", d.Name, pod.Spec.NodeName, j, err)
			events, err := draClient().On(pod.Spec.NodeName, d).HealthStream(ctx)
			j, _ = json.Marshal(events)
			fmt.Fprintf(&b, "--- %s on %s: GET /healthstream: %s %v\n", d.Name, pod.Spec.NodeName, j, err)
		}
	}
	framework.Logf("DRA dump for %s:%s", f.Namespace.Name, b.String())
}
