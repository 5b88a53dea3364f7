package preflight

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	admissionapi "k8s.io/pod-security-admission/api"

	"github.com/faultline-k8s/faultline/fakes/lib/scope"
	"github.com/faultline-k8s/faultline/vocab/facts"
	"github.com/faultline-k8s/faultline/vocab/kubelet"
	"github.com/faultline-k8s/faultline/vocab/needs"
)

// draResources are the resource.k8s.io/v1 resources the DRA suite and its
// fixtures use.
var draResources = []string{"deviceclasses", "resourceslices", "resourceclaims", "resourceclaimtemplates"}

const draGroupVersion = "resource.k8s.io/v1"

func (c *checker) draAPI() Condition {
	list, err := c.cs.Discovery().ServerResourcesForGroupVersion(draGroupVersion)
	if apierrors.IsNotFound(err) {
		return Condition{needs.DRAAPI, Missing, draGroupVersion + " is not served (discovery; DRA is GA and on from Kubernetes 1.34)"}
	}
	if err != nil {
		return Condition{needs.DRAAPI, Unknown, "discovery of " + draGroupVersion + ": " + err.Error()}
	}
	served := map[string]bool{}
	for _, r := range list.APIResources {
		served[r.Name] = true
	}
	var missing []string
	for _, r := range draResources {
		if !served[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return Condition{needs.DRAAPI, Missing, draGroupVersion + " does not serve " + strings.Join(missing, ", ")}
	}
	return Condition{needs.DRAAPI, OK, draGroupVersion + " serves " + strings.Join(draResources, ", ") + " (discovery)"}
}

// gate is a feature gate a spec relies on. GA is the minor from which the
// gate is locked on, so that its absence from a newer component means "on"
// (0: not GA).
type gate struct {
	Name string
	GA   uint
}

// The gates behind the DRA suite's Feature labels and skips (suites/dra
// suite.go, device.go, prepare.go).
var (
	kubeletGates = []struct {
		cond  string
		gates []gate
		what  string
	}{
		{needs.GateDRA, []gate{{"DynamicResourceAllocation", 34}}, "DRA in the kubelet"},
		{needs.GateHealth, []gate{{"ResourceHealthStatus", 0}, {"ResourceHealthStatusMessage", 0}}, "device health in pod status (the DRA suite skips without)"},
		{needs.GatePermanentFailures, []gate{{"DRAHandlePermanentDriverFailures", 0}}, "KEP-5322 in the kubelet (no released kubelet has it)"},
	}
	// The device taint eviction spec: the API server must keep a
	// ResourceSlice's device taints (DRADeviceTaints).
	apiServerDeviceTaints = gate{"DRADeviceTaints", 0}
)

// kubeletRead is what one kubelet showed: its gates (/metrics) and its
// configuration (/configz), with the errors.
type kubeletRead struct {
	node      string
	version   *utilversion.Version
	gates     map[string]bool
	gatesErr  error
	config    *kubelet.Config
	configErr error
}

// gates reads the kubelets of the usable nodes (at most MaxNodes; else the
// node the suites pick) and the API server's /metrics.
func (c *checker) gates(ctx context.Context) []Condition {
	nodes := c.usable
	if len(nodes) == 0 && c.testNode != "" {
		nodes = []string{c.testNode}
	}
	capped := len(nodes) > c.o.MaxNodes
	if capped {
		nodes = nodes[:c.o.MaxNodes]
	}
	c.configz = map[string]kubelet.Config{}
	var reads []kubeletRead
	for _, n := range nodes {
		r := kubeletRead{node: n, version: c.kubelets[n]}
		rctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
		raw, err := c.o.Endpoints.KubeletMetrics(rctx, n)
		if err == nil {
			r.gates, err = kubelet.ParseFeatureGates(raw)
		}
		r.gatesErr = err
		raw, err = c.o.Endpoints.KubeletConfigz(rctx, n)
		cancel()
		if err == nil {
			var cfg kubelet.Config
			if cfg, err = kubelet.ParseConfigz(raw); err == nil {
				r.config = &cfg
				c.configz[n] = cfg
			}
		}
		r.configErr = err
		reads = append(reads, r)
	}
	var out []Condition
	for _, k := range kubeletGates {
		cond := kubeletGateCondition(k.cond, k.what, k.gates, reads)
		if capped {
			cond.Reason += fmt.Sprintf(" (first %d usable nodes read)", c.o.MaxNodes)
		}
		out = append(out, cond)
	}
	return append(out, c.apiServerGate(ctx))
}

// gateState says how one kubelet stands on gates: /metrics first (every
// gate, effective), else what /configz sets explicitly.
func gateState(r kubeletRead, gates []gate) (State, string) {
	var parts []string
	state := OK
	worse := func(s State) {
		if s == Missing || (s == Unknown && state == OK) {
			state = s
		}
	}
	for _, g := range gates {
		switch enabled, known := r.gates[g.Name]; {
		case r.gatesErr == nil && known:
			parts = append(parts, fmt.Sprintf("%s=%v", g.Name, enabled))
			if !enabled {
				worse(Missing)
			}
		case r.gatesErr == nil && g.GA > 0 && r.version != nil && r.version.Minor() >= g.GA:
			parts = append(parts, fmt.Sprintf("%s GA (no longer a gate)", g.Name))
		case r.gatesErr == nil:
			parts = append(parts, g.Name+" unknown to the kubelet")
			worse(Missing)
		case r.config != nil && hasKey(r.config.FeatureGates, g.Name):
			enabled := r.config.FeatureGates[g.Name]
			parts = append(parts, fmt.Sprintf("%s=%v (/configz; /metrics: %v)", g.Name, enabled, r.gatesErr))
			if !enabled {
				worse(Missing)
			}
		default:
			parts = append(parts, fmt.Sprintf("%s not readable (/metrics: %v)", g.Name, r.gatesErr))
			worse(Unknown)
		}
	}
	return state, strings.Join(parts, " ")
}

func hasKey(m map[string]bool, k string) bool {
	_, ok := m[k]
	return ok
}

// kubeletGateCondition joins the kubelets' answers: nodes that answered the
// same are named together.
func kubeletGateCondition(name, what string, gates []gate, reads []kubeletRead) Condition {
	if len(reads) == 0 {
		return Condition{name, Unknown, what + ": no node to ask"}
	}
	state := OK
	byDetail := map[string][]string{}
	for _, r := range reads {
		s, detail := gateState(r, gates)
		if s == Missing || (s == Unknown && state == OK) {
			state = s
		}
		byDetail[detail] = append(byDetail[detail], r.node)
	}
	details := make([]string, 0, len(byDetail))
	for d, nodes := range byDetail {
		details = append(details, strings.Join(nodes, ", ")+": "+d)
	}
	sort.Strings(details)
	return Condition{name, state, what + "; kubelet /metrics via nodes/proxy on " + strings.Join(details, "; ")}
}

func (c *checker) apiServerGate(ctx context.Context) Condition {
	const tail = "; the eviction itself is kube-controller-manager's, whose gates the API does not show"
	g := apiServerDeviceTaints
	rctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	raw, err := c.o.Endpoints.APIServerMetrics(rctx)
	var gates map[string]bool
	if err == nil {
		gates, err = kubelet.ParseFeatureGates(raw)
	}
	if err != nil {
		return Condition{needs.GateDeviceTaints, Unknown, fmt.Sprintf("API server gate %s not readable (GET /metrics: %v)%s", g.Name, err, tail)}
	}
	enabled, known := gates[g.Name]
	switch {
	case !known:
		return Condition{needs.GateDeviceTaints, Missing, fmt.Sprintf("API server gate %s unknown to it (/metrics)%s", g.Name, tail)}
	case !enabled:
		return Condition{needs.GateDeviceTaints, Missing, fmt.Sprintf("API server gate %s=false (/metrics): device taints in ResourceSlices are dropped%s", g.Name, tail)}
	}
	return Condition{needs.GateDeviceTaints, OK, fmt.Sprintf("API server gate %s=true (/metrics)%s", g.Name, tail)}
}

const (
	nriNotVisible = "the NRI socket is on the node, not visible from the API; without it the NRI suite's plugin DaemonSet " +
		"never becomes ready (hostPath /var/run/nri, type Directory: FailedMount) and its specs fail, they do not skip"
	validatorNotVisible = "the runtime's NRI default validator is node configuration (containerd >= 2.2 default_validator enable, " +
		"CRI-O nri_enable_default_validator), not visible from the API; without it the required-plugin spec fails, it does not skip"
)

// nri: only the cluster's facts can say; a cluster faultline made has NRI
// and its default validator on by construction (its node images).
func (c *checker) nri() []Condition {
	where := "ConfigMap " + facts.Namespace + "/" + facts.Name
	var nri, validator Condition
	switch {
	case c.factsErr != nil:
		nri = Condition{needs.NRI, Unknown, fmt.Sprintf("%v; %s", c.factsErr, nriNotVisible)}
		validator = Condition{needs.NRIValidator, Unknown, validatorNotVisible}
	case c.faultlineMade():
		f := c.facts
		nri = Condition{needs.NRI, OK, fmt.Sprintf("cluster made by faultline (%s): %s %s with NRI on (its node image), request timeout %s, registration timeout %s",
			where, f.Runtime, f.RuntimeVersion, orDefault(f.NRIRequestTimeout, facts.DefaultNRIRequestTimeout), orDefault(f.NRIRegistrationTimeout, facts.DefaultNRIRegistrationTimeout))}
		validator = Condition{needs.NRIValidator, OK, fmt.Sprintf("cluster made by faultline (%s): the default validator is on (its node image)", where)}
	default:
		nri = Condition{needs.NRI, Unknown, nriNotVisible}
		validator = Condition{needs.NRIValidator, Unknown, validatorNotVisible}
	}
	return []Condition{nri, validator, c.containerSlowdown(nri)}
}

func orDefault(d facts.Duration, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return time.Duration(d)
}

// containerSlowdown: the CRI suite's container stage slows CreateContainer
// with runc-slow where the runtime runs the OCI create there (CRI-O), else
// through the fake NRI plugin (containerd), which needs NRI.
func (c *checker) containerSlowdown(nri Condition) Condition {
	switch {
	case c.runtime == nil:
		return Condition{needs.ContainerSlowdown, Unknown, "the runtime is not recognised, so how its CreateContainer is slowed is not known"}
	case c.runtime.CreateContainerRunsOCICreate:
		return Condition{needs.ContainerSlowdown, OK, c.runtime.Name + " runs the OCI create in CreateContainer: runc-slow slows it"}
	}
	return Condition{needs.ContainerSlowdown, nri.State, fmt.Sprintf("%s's CreateContainer is slowed through the fake NRI plugin: needs NRI (%s)", c.runtime.Name, nri.State)}
}

// runtimeRequestTimeout: the kubelet-level CRI spec times its delays by it;
// the suites take it from the facts, else the kubelet's /configz.
func (c *checker) runtimeRequestTimeout() Condition {
	if c.factsErr == nil && c.factsFound && c.facts.RuntimeRequestTimeout > 0 {
		return Condition{needs.RuntimeRequestTimeout, OK, fmt.Sprintf("%s (ConfigMap %s/%s)", c.facts.RuntimeRequestTimeout, facts.Namespace, facts.Name)}
	}
	if cfg, ok := c.configz[c.testNode]; ok {
		if d, err := time.ParseDuration(cfg.RuntimeRequestTimeout); err == nil {
			return Condition{needs.RuntimeRequestTimeout, OK, fmt.Sprintf("%s (kubelet /configz on %s)", d, c.testNode)}
		}
	}
	return Condition{needs.RuntimeRequestTimeout, Unknown, fmt.Sprintf("neither the cluster's facts nor the kubelet /configz on %q give runtimeRequestTimeout: "+
		"the kubelet-level CRI spec fails unless --faultline.runtime-request-timeout gives it", c.testNode)}
}

// podSecurity dry-runs the namespaces the suites create: one labelled as
// the fixtures' (privileged) and one as the specs' (restricted, with the
// fault scope label). It proves the admission chain (Pod Security's label
// check, webhooks and policies that support dry run) accepts them; it does
// not prove their pods are admitted: policies on pods are not asked.
func (c *checker) podSecurity(ctx context.Context) Condition {
	const limits = "not proven: that their pods (privileged, hostPath; restricted test pods) are admitted, as no pod is dry-run; the cluster's default level (AdmissionConfiguration) is not visible"
	tries := []struct {
		what   string
		labels map[string]string
	}{
		{"fixtures' (enforce=privileged)", psaLabels(admissionapi.LevelPrivileged, map[string]string{"app.kubernetes.io/part-of": "faultline"})},
		{"specs' (enforce=restricted, " + scope.NamespaceLabel + "=" + scope.NamespaceLabelValue + ")",
			psaLabels(admissionapi.LevelRestricted, map[string]string{scope.NamespaceLabel: scope.NamespaceLabelValue, "e2e-framework": "preflight"})},
	}
	var refused, unknown, admitted []string
	for _, t := range tries {
		rctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
		ns, err := c.cs.CoreV1().Namespaces().Create(rctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{
			GenerateName: "faultline-preflight-", Labels: t.labels,
		}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		cancel()
		switch {
		case err != nil && (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) && strings.Contains(err.Error(), "cannot create resource"):
			unknown = append(unknown, t.what+": RBAC refused the dry run (see "+CondPermissions+")")
		case err != nil && (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)):
			refused = append(refused, t.what+": "+oneLine(err.Error()))
		case err != nil:
			unknown = append(unknown, t.what+": "+oneLine(err.Error()))
		default:
			if changed := changedLabels(t.labels, ns.Labels); changed != "" {
				refused = append(refused, t.what+": admitted, but admission changed "+changed)
			} else {
				admitted = append(admitted, t.what)
			}
		}
	}
	defaults := c.defaultNamespaceLevel(ctx)
	switch {
	case len(refused) > 0:
		return Condition{CondPodSecurity, Missing, "dry-run namespace create refused: " + strings.Join(append(refused, unknown...), "; ")}
	case len(unknown) > 0:
		return Condition{CondPodSecurity, Unknown, "dry-run namespace create: " + strings.Join(unknown, "; ")}
	}
	return Condition{CondPodSecurity, OK, fmt.Sprintf("dry-run creates of namespaces labelled as the %s were admitted; %s; %s", strings.Join(admitted, " and "), defaults, limits)}
}

func psaLabels(level admissionapi.Level, with map[string]string) map[string]string {
	l := map[string]string{
		admissionapi.EnforceLevelLabel: string(level),
		admissionapi.AuditLevelLabel:   string(level),
		admissionapi.WarnLevelLabel:    string(level),
	}
	for k, v := range with {
		l[k] = v
	}
	return l
}

// changedLabels names the Pod Security labels a mutating admission changed.
func changedLabels(sent, got map[string]string) string {
	var out []string
	for _, k := range []string{admissionapi.EnforceLevelLabel, admissionapi.AuditLevelLabel, admissionapi.WarnLevelLabel} {
		if got != nil && got[k] != sent[k] {
			out = append(out, fmt.Sprintf("%s to %q", k, got[k]))
		}
	}
	return strings.Join(out, ", ")
}

// defaultNamespaceLevel reports the enforce label of namespace "default",
// the one hint the API gives of how this cluster sets levels.
func (c *checker) defaultNamespaceLevel(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	ns, err := c.cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	switch {
	case err != nil:
		return "namespace default not readable"
	case ns.Labels[admissionapi.EnforceLevelLabel] == "":
		return "namespace default has no " + admissionapi.EnforceLevelLabel + " label"
	}
	return fmt.Sprintf("namespace default: %s=%s", admissionapi.EnforceLevelLabel, ns.Labels[admissionapi.EnforceLevelLabel])
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
