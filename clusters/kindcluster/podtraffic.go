package kindcluster

// The proof that pods on different nodes reach each other. routePodNetworks
// sets the routes and checks the CNI configs; only traffic proves they work.
// Each node runs a pod that answers TCP connections with its node's name and
// a pod that dials the answering pods of every other node. The API's pod
// phase is the verdict (the dialing pod exits 0 only when every other node
// answered); its log says which did not.

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	// podTrafficNamespace holds the check's pods, and goes with them.
	podTrafficNamespace = "faultline-pod-network-check"
	// podTrafficPort is where the answering pods listen, on their pod IP
	// only, for the check's few seconds; they answer one fixed line.
	podTrafficPort = 8080
	// podTrafficTimeout bounds the whole check: pods of an image already on
	// the node start in seconds; the dialing pods try for a minute.
	podTrafficTimeout = 3 * time.Minute
	podTrafficReach   = time.Minute
)

// CheckPodTraffic proves that on cluster name a pod on each node reaches a
// pod on every other node, with the fakes image (already loaded into the
// nodes). A one-node cluster needs no check.
func CheckPodTraffic(ctx context.Context, name, image string) error {
	cs, err := clientset(name)
	if err != nil {
		return err
	}
	return checkPodTraffic(ctx, cs, image)
}

func checkPodTraffic(ctx context.Context, cs kubernetes.Interface, image string) error {
	ctx, cancel := context.WithTimeout(ctx, podTrafficTimeout)
	defer cancel()
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(list.Items) < 2 {
		return nil
	}
	nodeNames := make([]string, 0, len(list.Items))
	for _, n := range list.Items {
		nodeNames = append(nodeNames, n.Name)
	}
	pods := cs.CoreV1().Pods(podTrafficNamespace)
	if err := removeNamespace(ctx, cs); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podTrafficNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", podTrafficNamespace, err)
	}
	defer func() {
		// Also after a failure or an interrupt: nothing of the check stays.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer dcancel()
		_ = cs.CoreV1().Namespaces().Delete(dctx, podTrafficNamespace, metav1.DeleteOptions{})
	}()

	for i, node := range nodeNames {
		pod := podTrafficPod(checkPodName("answer", i), node, image,
			"--message", "pod network check: answered on "+node, "--serve", fmt.Sprintf(":%d", podTrafficPort))
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("answering pod on %s: %w", node, err)
		}
	}
	answering, err := waitPods(ctx, cs, "answer", len(nodeNames), func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != ""
	})
	if err != nil {
		return fmt.Errorf("answering pods not running: %w", err)
	}

	for i, node := range nodeNames {
		var targets []string
		for j, other := range answering {
			if j != i {
				targets = append(targets, fmt.Sprintf("%s:%d", other.Status.PodIP, podTrafficPort))
			}
		}
		pod := podTrafficPod(checkPodName("dial", i), node, image,
			"--reach", strings.Join(targets, ","), "--reach-timeout", podTrafficReach.String())
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("dialing pod on %s: %w", node, err)
		}
	}
	dialing, err := waitPods(ctx, cs, "dial", len(nodeNames), func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if err != nil {
		return fmt.Errorf("dialing pods did not finish: %w", err)
	}
	var failed []string
	for i, pod := range dialing {
		if pod.Status.Phase == corev1.PodFailed {
			failed = append(failed, fmt.Sprintf("from %s: %s", nodeNames[i], podLog(ctx, cs, pod.Name)))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("pods do not reach each other across nodes:\n  %s", strings.Join(failed, "\n  "))
	}
	return nil
}

// checkPodName names the check's pod of one role on the i-th node.
func checkPodName(role string, i int) string { return fmt.Sprintf("%s-%d", role, i) }

// waitPods polls the check's pods of a role, one per node, until done holds
// for each, and returns them in node order. A failed read of the API is
// retried; the deadline decides, and its error names the last one.
func waitPods(ctx context.Context, cs kubernetes.Interface, role string, n int, done func(*corev1.Pod) bool) ([]*corev1.Pod, error) {
	pods := make([]*corev1.Pod, n)
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		settled := 0
		for i := range pods {
			pod, err := cs.CoreV1().Pods(podTrafficNamespace).Get(ctx, checkPodName(role, i), metav1.GetOptions{})
			if err != nil {
				lastErr = err
				return false, nil //nolint:nilerr // named in the error at the deadline
			}
			if pods[i] = pod; done(pod) {
				settled++
			}
		}
		return settled == n, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%v (last API error: %v)%s", err, lastErr, podStates(ctx, cs))
	}
	return pods, nil
}

// removeNamespace deletes the check's namespace left by an earlier check
// that was cut short (a reused cluster) and waits until it is gone.
func removeNamespace(ctx context.Context, cs kubernetes.Interface) error {
	err := cs.CoreV1().Namespaces().Delete(ctx, podTrafficNamespace, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("namespace %s of an earlier check: %w", podTrafficNamespace, err)
	}
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, podTrafficNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s of an earlier check is not gone: %w", podTrafficNamespace, err)
	}
	return nil
}

// podTrafficPod runs testpod with args on node, under the restricted Pod
// Security level, tolerating the control plane's taint.
func podTrafficPod(name, node, image string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: podTrafficNamespace},
		Spec: corev1.PodSpec{
			NodeName:      node,
			RestartPolicy: corev1.RestartPolicyNever,
			Tolerations:   []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65534),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "testpod",
				Image:           image,
				ImagePullPolicy: corev1.PullNever, // loaded into the nodes
				Command:         append([]string{"/usr/local/bin/testpod"}, args...),
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
}

// podLog is a pod's log, or why it could not be read.
func podLog(ctx context.Context, cs kubernetes.Interface, name string) string {
	raw, err := cs.CoreV1().Pods(podTrafficNamespace).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return fmt.Sprintf("(its log: %v)", err)
	}
	return strings.TrimSpace(string(raw))
}

// podStates lists the check's pods with phase and node, for errors.
func podStates(ctx context.Context, cs kubernetes.Interface) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	list, err := cs.CoreV1().Pods(podTrafficNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range list.Items {
		fmt.Fprintf(&b, "\n  %s on %s: %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil {
				fmt.Fprintf(&b, " (%s: %s)", w.Reason, w.Message)
			}
		}
	}
	return b.String()
}
