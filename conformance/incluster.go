package conformance

import (
	"fmt"
	"net"
	"os"

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
