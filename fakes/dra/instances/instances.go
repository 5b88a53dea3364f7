// Package instances lists the instances of the fake DRA driver that
// fixtures/dra deploys, one entry per instance: the one home of their driver
// names, DeviceClasses, DaemonSets and device counts. fixtures/dra renders a
// DaemonSet and a DeviceClass per entry and names every entry in the
// driver's RBAC rule and in its policies (fixtures.Render hands the list to
// the templates); fakes/dra/draclient reaches the instances by it. A new
// instance is a new entry here, nothing else.
//
// It imports nothing but the standard library, so that the fixtures, which
// everything above them imports, need not link the driver's client.
package instances

// Instance is one fake DRA driver of fixtures/dra.
type Instance struct {
	// Name is the DRA driver name (--driver-name): the kubelet keeps the
	// instances apart by it, its registration socket being
	// /var/lib/kubelet/plugins_registry/<Name>-reg.sock and its service
	// socket /var/lib/kubelet/plugins/<Name>/dra.sock (PluginDir).
	Name string
	// DeviceClass is the DeviceClass that selects all its devices.
	DeviceClass string
	// App names its DaemonSet and is the app.kubernetes.io/name label of its
	// pods (Selector).
	App string
	// Devices is how many devices it publishes per node (--devices).
	Devices int
	// PodResources: it reads the kubelet's PodResources API, mounted
	// read-only, for GET /podresources (--pod-resources-socket). Whoever
	// takes over such a driver's container could list every pod's devices,
	// CPUs and memory on the node, so only the instance whose
	// GET /podresources a spec reads has it.
	PodResources bool
}

// Selector is the label selector of the instance's pods.
func (i Instance) Selector() string { return AppLabel + "=" + i.App }

// PluginDir is the instance's own kubelet plugin directory (dra.sock), the
// only one of /var/lib/kubelet/plugins its pods mount.
func (i Instance) PluginDir() string { return "/var/lib/kubelet/plugins/" + i.Name }

// AppLabel is the label that tells the instances' pods apart.
const AppLabel = "app.kubernetes.io/name"

var (
	// First is the driver most specs use; the only one that reads the
	// kubelet's PodResources API (suites/dra/cdi.go). 8 devices: specs
	// run in parallel (4 Ginkgo processes) and some use two or three
	// devices each.
	First = Instance{
		Name: "dra.faultline.k8s.io", DeviceClass: "faultline.k8s.io",
		App: "fake-dra-driver", Devices: 8, PodResources: true,
	}
	// Second is the healthy one in specs with two drivers, and the one
	// whose health stream the health stream spec drops. 8 devices, like
	// the first: specs run in parallel, the health stream spec uses two
	// at a time.
	Second = Instance{
		Name: "second.dra.faultline.k8s.io", DeviceClass: "second.faultline.k8s.io",
		App: "fake-dra-driver-second", Devices: 8,
	}
	// Third is the driver of the spec whose fault stops a driver's DRA
	// service on a node (suites/dra/unresponsive.go) and of no other spec,
	// so that no other spec's claims feel the fault. 2 devices: that spec
	// uses one. Its name is no part of another instance's name, nor is
	// another's part of it, so a message that names it is not taken for
	// one that names another (the spec checks that every error names
	// the driver) and the other way round: named like the first,
	// dra.<its class>, not third.dra.faultline.k8s.io, which holds the
	// first's name.
	Third = Instance{
		Name: "dra.third.faultline.k8s.io", DeviceClass: "third.faultline.k8s.io",
		App: "fake-dra-driver-third", Devices: 2,
	}
	// All are the instances fixtures/dra deploys, in the order it
	// renders them.
	All = []Instance{First, Second, Third}
)
