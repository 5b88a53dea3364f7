package instances_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/faultline-k8s/faultline/fakes/dra/driver"
	"github.com/faultline-k8s/faultline/fakes/dra/instances"
)

// The instances are told apart by everything that names them: driver name,
// DeviceClass, DaemonSet and pod label. Each is a name the API takes.
func TestInstancesAreApart(t *testing.T) {
	if !slices.Equal(instances.All, []instances.Instance{instances.First, instances.Second, instances.Third}) {
		t.Errorf("All %+v must list First, Second and Third", instances.All)
	}
	if instances.First.Name != driver.DefaultDriverName {
		t.Errorf("the first instance %s must run under the driver's default name %s", instances.First.Name, driver.DefaultDriverName)
	}
	seen := map[string]string{}
	for _, i := range instances.All {
		for what, v := range map[string]string{"driver name": i.Name, "DeviceClass": i.DeviceClass, "app": i.App} {
			if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
				t.Errorf("%s %q: %v", what, v, msgs)
			}
			if other, dup := seen[what+" "+v]; dup {
				t.Errorf("%s %q of %s is %s's too", what, v, i.Name, other)
			}
			seen[what+" "+v] = i.Name
		}
		if i.Devices < 1 {
			t.Errorf("%s publishes %d devices", i.Name, i.Devices)
		}
		if i.Selector() != "app.kubernetes.io/name="+i.App || i.PluginDir() != "/var/lib/kubelet/plugins/"+i.Name {
			t.Errorf("%s: selector %s, plugin dir %s", i.Name, i.Selector(), i.PluginDir())
		}
	}
}

// Only the first instance reads the kubelet's PodResources API: the one
// instance a spec reads GET /podresources of (suites/dra/cdi.go).
func TestOnlyTheFirstReadsPodResources(t *testing.T) {
	for _, i := range instances.All {
		if i.PodResources != (i == instances.First) {
			t.Errorf("%s: PodResources %v", i.Name, i.PodResources)
		}
	}
}

// The unresponsive spec checks that every error the pod sees names the
// third driver: its name must be no part of another instance's name, nor
// another's part of it.
func TestThirdNameStandsApart(t *testing.T) {
	third := instances.Third.Name
	for _, i := range instances.All {
		if i == instances.Third {
			continue
		}
		if strings.Contains(i.Name, third) || strings.Contains(third, i.Name) {
			t.Errorf("%s and %s: one name is part of the other", third, i.Name)
		}
	}
}
