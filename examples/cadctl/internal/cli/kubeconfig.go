package cli

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// NewClusterClient returns the Client of cluster mode: Porch's API reached
// through the Kubernetes API server of the kubeconfig file at path (its
// current context's server, TLS settings and credentials, including exec
// plugins), for namespace ns. There porch.kpt.dev/v1alpha1 is the
// aggregated API the reference server serves in cluster mode, and
// config.porch.kpt.dev the custom resources of cad's operator. It returns
// an error when the kubeconfig does not load.
func NewClusterClient(path, ns string) (*ServerClient, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return NewServerClient(cfg.Host, ns, &ServerOptions{HTTPClient: hc})
}

// kubeconfigNamespace returns the namespace of the current context of the
// kubeconfig file at path, or "" when it names none or does not load.
func kubeconfigNamespace(path string) string {
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{})
	ns, explicit, err := cc.Namespace()
	if err != nil || !explicit {
		return ""
	}
	return ns
}
