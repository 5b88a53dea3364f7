package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The service account's files in every pod that mounts its token.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// WriteInClusterKubeconfig writes a kubeconfig for the pod's service
// account: the suites take --kubeconfig only, as e2e.test does.
func WriteInClusterKubeconfig(path string) (string, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return "", fmt.Errorf("no KUBECONFIG, and not in a pod (KUBERNETES_SERVICE_HOST is not set)")
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["in-cluster"] = &clientcmdapi.Cluster{
		Server:               "https://" + net.JoinHostPort(host, port),
		CertificateAuthority: serviceAccountDir + "/ca.crt",
	}
	cfg.AuthInfos["service-account"] = &clientcmdapi.AuthInfo{TokenFile: serviceAccountDir + "/token"}
	cfg.Contexts["in-cluster"] = &clientcmdapi.Context{Cluster: "in-cluster", AuthInfo: "service-account"}
	cfg.CurrentContext = "in-cluster"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", err
	}
	return path, nil
}

// RemoveRBACEnv names the ClusterRole and the ClusterRoleBinding (one name
// for both) that grant the runner its permissions: the Job manifest sets
// it, and the runner removes both when the run ends. sonobuoy and
// hydrophone bind their own accounts, which are theirs to remove, so their
// runs leave it unset.
const RemoveRBACEnv = "FAULTLINE_REMOVE_RBAC"

// RemoveOwnRBAC removes the ClusterRole name and the ClusterRoleBinding
// name that grants it to the runner. Whichever of the two goes first takes
// the permission to delete the other with it, so the runner makes the role
// the binding's owner and deletes the role: the garbage collector, which
// needs no permission of ours, then deletes the binding. Setting an owner
// is a change RBAC's escalation check lets through. It needs get and
// delete of that ClusterRole and patch of that binding, by name
// (access.JobSelfRemoval). A role already gone is fine.
func RemoveOwnRBAC(ctx context.Context, cs kubernetes.Interface, name string) error {
	role, err := cs.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read ClusterRole %s: %w", name, err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{{
		APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole", Name: role.Name, UID: role.UID,
	}}}})
	if err != nil {
		return err
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("make ClusterRole %s the owner of ClusterRoleBinding %s: %w", name, name, err)
	}
	background := metav1.DeletePropagationBackground
	err = cs.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &role.UID}, PropagationPolicy: &background,
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ClusterRole %s: %w", name, err)
	}
	return nil
}
