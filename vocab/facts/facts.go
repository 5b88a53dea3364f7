// Package facts records what a cluster is, as faultline made it: its runtime,
// Kubernetes version, node image and the timeouts it was configured with. The
// cluster code writes them into the cluster when it creates it (ConfigMap
// kube-system/faultline-cluster); the suites read them from there, or from the
// nodes of a cluster faultline did not make. The defaults of those settings live
// here and nowhere else.
package facts

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline-k8s/faultline/vocab/kubelet"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// Where the facts live in the cluster.
const (
	Namespace = "kube-system"
	Name      = "faultline-cluster"
	// Key is the ConfigMap's data key of the facts (JSON).
	Key = "facts.json"
)

// CreatedByFaultline is Facts.CreatedBy of a cluster faultline made.
const CreatedByFaultline = "faultline"

// Defaults of the settings a run can choose.
const (
	// DefaultRuntimeRequestTimeout is the kubelet runtimeRequestTimeout of
	// faultline's clusters (the kubelet's own default is 2m; 30s keeps the
	// specs that wait it out short).
	DefaultRuntimeRequestTimeout = 30 * time.Second
	// DefaultNRIRequestTimeout is the runtime's NRI plugin request timeout
	// (containerd plugin_request_timeout, CRI-O nri_plugin_request_timeout).
	DefaultNRIRequestTimeout = 2 * time.Second
	// DefaultNRIRegistrationTimeout is the runtime's NRI plugin registration
	// timeout (both runtimes default to 5s).
	DefaultNRIRegistrationTimeout = 5 * time.Second
	// DefaultKubeletSyncFrequency is the kubelet syncFrequency of
	// faultline's clusters: how often a pod worker syncs a pod it has no
	// news of, which paces the kubelet's NodePrepareResources retries and
	// its pod status updates. The kubelet's own default is
	// KubeletBuiltinSyncFrequency; a third of it keeps the DRA specs, which
	// wait out several resyncs, short.
	DefaultKubeletSyncFrequency = 20 * time.Second
	// KubeletBuiltinSyncFrequency is the kubelet's own default, assumed for
	// a cluster whose kubelet does not show its configuration.
	KubeletBuiltinSyncFrequency = time.Minute
)

// Facts describe one cluster.
type Facts struct {
	// Cluster is the kind cluster's name ("" for a cluster faultline did not make).
	Cluster string `json:"cluster,omitempty"`
	// Runtime is faultline's runtime name (vocab/runtimes).
	Runtime        string `json:"runtime"`
	RuntimeVersion string `json:"runtimeVersion,omitempty"`
	// KubernetesVersion is the kubelet's version.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	NodeImage         string `json:"nodeImage,omitempty"`
	// RuntimeRequestTimeout is the kubelet's runtimeRequestTimeout.
	RuntimeRequestTimeout  Duration `json:"runtimeRequestTimeout,omitempty"`
	NRIRequestTimeout      Duration `json:"nriRequestTimeout,omitempty"`
	NRIRegistrationTimeout Duration `json:"nriRegistrationTimeout,omitempty"`
	// KubeletSyncFrequency is the kubelet's syncFrequency.
	KubeletSyncFrequency Duration `json:"kubeletSyncFrequency,omitempty"`
	// NRIVersion is the containerd/nri release the runtime was built with
	// ("v0.12.5"), when the node image's builder knows it.
	NRIVersion string `json:"nriVersion,omitempty"`
	// FeatureGates are the Kubernetes feature gates the run set on every
	// component (kind's featureGates), beyond the runtime's kind config.
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
	// Workers is the number of worker nodes beside the control plane.
	Workers int `json:"workers,omitempty"`
	// Variant names what the cluster's node image changed on the pinned
	// releases (wire.StackKey): "nri-v0.12.5", "kep-5322"; "" for none.
	Variant string `json:"variant,omitempty"`
	// FakeModes are the documented misbehaviours (vocab/fakemodes) the
	// suites deploy their fakes with on this cluster, for negative
	// controls; none in a normal run. Variant names them too.
	FakeModes []string `json:"fakeModes,omitempty"`
	// CreatedBy names the faultline that made the cluster; empty when the
	// facts were read off a cluster faultline did not make.
	CreatedBy string `json:"createdBy,omitempty"`
}

// Duration is a time.Duration written as "30s".
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads "30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// Settings are the parts of the facts a run chooses; the others are what
// the cluster turned out to be.
type Settings struct {
	Runtime                string
	NodeImage              string
	RuntimeRequestTimeout  time.Duration
	NRIRequestTimeout      time.Duration
	NRIRegistrationTimeout time.Duration
	KubeletSyncFrequency   time.Duration
	FeatureGates           map[string]bool
}

// WithDefaults fills unset settings with the defaults above.
func (s Settings) WithDefaults() Settings {
	if s.Runtime == "" {
		s.Runtime = runtimes.Default
	}
	if s.RuntimeRequestTimeout == 0 {
		s.RuntimeRequestTimeout = DefaultRuntimeRequestTimeout
	}
	if s.NRIRequestTimeout == 0 {
		s.NRIRequestTimeout = DefaultNRIRequestTimeout
	}
	if s.NRIRegistrationTimeout == 0 {
		s.NRIRegistrationTimeout = DefaultNRIRegistrationTimeout
	}
	if s.KubeletSyncFrequency == 0 {
		s.KubeletSyncFrequency = DefaultKubeletSyncFrequency
	}
	return s
}

// Mismatch lists how the facts differ from what a run asks for (a setting
// left zero asks for nothing), one line each; nil when they agree.
func (f Facts) Mismatch(want Settings) []string {
	var out []string
	if want.Runtime != "" {
		w, err := runtimes.Lookup(want.Runtime)
		if err != nil || w.Name != f.Runtime {
			out = append(out, fmt.Sprintf("runtime: the cluster runs %q, the run asks for %q", f.Runtime, want.Runtime))
		}
	}
	if want.NodeImage != "" && want.NodeImage != f.NodeImage {
		out = append(out, fmt.Sprintf("node image: the cluster runs %q, the run asks for %q", f.NodeImage, want.NodeImage))
	}
	check := func(name string, have Duration, want time.Duration) {
		if want != 0 && time.Duration(have) != want {
			out = append(out, fmt.Sprintf("%s: the cluster has %s, the run asks for %s", name, have, want))
		}
	}
	check("runtime-request-timeout", f.RuntimeRequestTimeout, want.RuntimeRequestTimeout)
	check("nri-request-timeout", f.NRIRequestTimeout, want.NRIRequestTimeout)
	check("nri-registration-timeout", f.NRIRegistrationTimeout, want.NRIRegistrationTimeout)
	check("kubelet-sync-frequency", f.KubeletSyncFrequency, want.KubeletSyncFrequency)
	if len(want.FeatureGates) > 0 && !maps.Equal(want.FeatureGates, f.FeatureGates) {
		out = append(out, fmt.Sprintf("feature gates: the cluster has %s, the run asks for %s", FormatGates(f.FeatureGates), FormatGates(want.FeatureGates)))
	}
	return out
}

// Write stores the facts in the cluster (creating or replacing the ConfigMap).
func Write(ctx context.Context, cs kubernetes.Interface, f Facts) error {
	raw, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: Name,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "faultline"}},
		Data: map[string]string{Key: string(raw)},
	}
	_, err = cs.CoreV1().ConfigMaps(Namespace).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = cs.CoreV1().ConfigMaps(Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write cluster facts %s/%s: %w", Namespace, Name, err)
	}
	return nil
}

// Read returns the facts faultline wrote into the cluster; found is false on
// a cluster faultline did not make.
func Read(ctx context.Context, cs kubernetes.Interface) (f Facts, found bool, err error) {
	cm, err := cs.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Facts{}, false, nil
	}
	if err != nil {
		return Facts{}, false, fmt.Errorf("read cluster facts %s/%s: %w", Namespace, Name, err)
	}
	raw, ok := cm.Data[Key]
	if !ok {
		return Facts{}, true, fmt.Errorf("cluster facts %s/%s: no %s in it", Namespace, Name, Key)
	}
	if err := json.Unmarshal([]byte(raw), &f); err != nil {
		return Facts{}, true, fmt.Errorf("cluster facts %s/%s: %w", Namespace, Name, err)
	}
	return f, true, nil
}

// FromNodes reads what it can of the facts off a cluster's nodes: the
// runtime and Kubernetes version from node status, the kubelet's
// runtimeRequestTimeout and syncFrequency from its /configz (vocab/kubelet). The runtime's NRI
// timeouts are not visible from the API: they are left at zero for the
// caller to fill (flags, or the defaults).
func FromNodes(ctx context.Context, cs kubernetes.Interface) (Facts, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Facts{}, err
	}
	if len(nodes.Items) == 0 {
		return Facts{}, fmt.Errorf("the cluster has no nodes")
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	var f Facts
	kinds := map[string]bool{}
	for _, n := range nodes.Items {
		rt, version, err := runtimes.FromNode(n.Status.NodeInfo.ContainerRuntimeVersion)
		if err != nil {
			return Facts{}, fmt.Errorf("node %s: %w", n.Name, err)
		}
		kinds[rt.Name] = true
		if f.Runtime == "" {
			f.Runtime, f.RuntimeVersion = rt.Name, version
			f.KubernetesVersion = n.Status.NodeInfo.KubeletVersion
			if cfg, err := kubelet.ReadConfig(ctx, cs, n.Name); err == nil {
				f.RuntimeRequestTimeout = configDuration(cfg.RuntimeRequestTimeout)
				f.KubeletSyncFrequency = configDuration(cfg.SyncFrequency)
			}
		}
	}
	if len(kinds) > 1 {
		names := make([]string, 0, len(kinds))
		for k := range kinds {
			names = append(names, k)
		}
		sort.Strings(names)
		return Facts{}, fmt.Errorf("the nodes run different runtimes (%s): run faultline against one kind of node", strings.Join(names, ", "))
	}
	return f, nil
}

// configDuration reads a duration of the kubelet's /configz; zero (unknown)
// when it has none or one that does not parse.
func configDuration(s string) Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0
	}
	return Duration(d)
}

// ParseGates reads feature gates written as Kubernetes flags do
// ("A=true,B=false"); several values are merged, a later one wins.
func ParseGates(values ...string) (map[string]bool, error) {
	gates := map[string]bool{}
	for _, v := range values {
		for _, kv := range strings.Split(v, ",") {
			kv = strings.TrimSpace(kv)
			if kv == "" {
				continue
			}
			name, val, ok := strings.Cut(kv, "=")
			name = strings.TrimSpace(name)
			if !ok || name == "" {
				return nil, fmt.Errorf("feature gate %q: want Name=true or Name=false", kv)
			}
			b, err := strconv.ParseBool(strings.TrimSpace(val))
			if err != nil {
				return nil, fmt.Errorf("feature gate %q: want Name=true or Name=false", kv)
			}
			gates[name] = b
		}
	}
	if len(gates) == 0 {
		return nil, nil
	}
	return gates, nil
}

// FormatGates writes gates as Kubernetes flags do, sorted ("none" when empty).
func FormatGates(gates map[string]bool) string {
	if len(gates) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(gates))
	for _, name := range slices.Sorted(maps.Keys(gates)) {
		parts = append(parts, fmt.Sprintf("%s=%t", name, gates[name]))
	}
	return strings.Join(parts, ",")
}
