package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/configasdata/cad/examples/internal/secretauth"
	"github.com/configasdata/cad/examples/server/internal/apiserver"
	"github.com/configasdata/cad/repository"
)

// The cluster mode (--kubeconfig or --in-cluster): the server as the
// aggregated API of a Kubernetes cluster whose PackageRevisions are custom
// resources (examples/operator). See apiserver's "The server behind a
// Kubernetes cluster".

var repositoriesGVR = schema.GroupVersionResource{Group: "config.porch.kpt.dev", Version: "v1alpha1", Resource: "repositories"}

// clusterConfig is what the cluster mode needs from the flags.
type clusterConfig struct {
	kubeconfig        string
	inCluster         bool
	requestHeaderCA   string // --requestheader-client-ca-file; empty reads the cluster's
	requestHeaderName []string
}

func (c clusterConfig) enabled() bool { return c.kubeconfig != "" || c.inCluster }

// cluster is a connection to the cluster and what the server takes from
// it.
type cluster struct {
	client  kubernetes.Interface
	dynamic dynamic.Interface
	// requestHeaderPEM is the CA of the aggregator's client certificate.
	requestHeaderPEM []byte
}

func connect(cc clusterConfig) (*cluster, error) {
	var cfg *rest.Config
	var err error
	if cc.inCluster {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", cc.kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &cluster{client: kc, dynamic: dc}, nil
}

// configure sets the options of the cluster mode: mirrored repositories,
// Secrets, delegated authorization (a SubjectAccessReview per request,
// answers remembered briefly: allowed for ten seconds, denied for two, as
// kube-apiserver's webhook authorizer does) and the aggregator's request
// headers.
func (c *cluster) configure(ctx context.Context, cc clusterConfig, opts *apiserver.Options) error {
	opts.ExternalRepositories = true
	opts.Secrets = c.secret
	az, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: c.client.AuthorizationV1(),
		AllowCacheTTL:             10 * time.Second,
		DenyCacheTTL:              2 * time.Second,
		WebhookRetryBackoff:       &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5},
	}.New()
	if err != nil {
		return err
	}
	opts.Authorizer = az
	rh, err := c.requestHeader(ctx, cc)
	if err != nil {
		return err
	}
	opts.RequestHeader = rh
	return nil
}

// secret returns the data of a Secret.
func (c *cluster) secret(ctx context.Context, ns, name string) (map[string][]byte, error) {
	s, err := c.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: Secret %s/%s", repository.ErrNotFound, ns, name)
	}
	if err != nil {
		return nil, err
	}
	return secretauth.Data(s), nil
}

// requestHeader reads the CA and allowed names of the aggregator's client
// certificate: from the flags, else from the ConfigMap kube-apiserver
// publishes for extension API servers
// (kube-system/extension-apiserver-authentication).
func (c *cluster) requestHeader(ctx context.Context, cc clusterConfig) (*apiserver.RequestHeader, error) {
	var caPEM []byte
	names := cc.requestHeaderName
	if cc.requestHeaderCA != "" {
		b, err := os.ReadFile(cc.requestHeaderCA)
		if err != nil {
			return nil, fmt.Errorf("--requestheader-client-ca-file: %w", err)
		}
		caPEM = b
	} else {
		cm, err := c.client.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("cluster: reading kube-system/extension-apiserver-authentication (give --requestheader-client-ca-file instead): %w", err)
		}
		caPEM = []byte(cm.Data["requestheader-client-ca-file"])
		if len(caPEM) == 0 {
			return nil, errors.New("cluster: kube-apiserver publishes no requestheader-client-ca-file: start it with --requestheader-client-ca-file to use aggregation")
		}
		if len(names) == 0 && cm.Data["requestheader-allowed-names"] != "" {
			if err := json.Unmarshal([]byte(cm.Data["requestheader-allowed-names"]), &names); err != nil {
				return nil, fmt.Errorf("cluster: requestheader-allowed-names: %w", err)
			}
		}
	}
	c.requestHeaderPEM = caPEM
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("cluster: the request header CA holds no PEM certificate")
	}
	return &apiserver.RequestHeader{ClientCAs: pool, AllowedNames: names}, nil
}

// watchRepositories mirrors the cluster's Repository objects into srv
// until ctx is done. It returns once the first list has been applied.
func (c *cluster) watchRepositories(ctx context.Context, srv *apiserver.Server, logf func(string, ...any)) error {
	f := dynamicinformer.NewDynamicSharedInformerFactory(c.dynamic, 10*time.Minute)
	inf := f.ForResource(repositoriesGVR).Informer()
	apply := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		if err := srv.ApplyRepository(ctx, u); err != nil {
			logf("repository %s/%s: %v", u.GetNamespace(), u.GetName(), err)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    apply,
		UpdateFunc: func(_, obj any) { apply(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				srv.RemoveRepository(u.GetNamespace(), u.GetName())
			}
		},
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("cluster: the Repository informer did not sync (is the config.porch.kpt.dev Repository CRD installed?): %w", ctx.Err())
	}
	return nil
}

// selfSignedTLS returns the serving certificate kept in dir (made on the
// first start): self-signed, for the host names and addresses given, as
// aggregated API servers serve when none is given (the APIService then
// names its CA or skips verification).
func selfSignedTLS(dir string, hosts []string) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil {
		return certFile, keyFile, nil
	}
	var ips []net.IP
	var names []string
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else if h != "" {
			names = append(names, h)
		}
	}
	cert, key, err := certutil.GenerateSelfSignedCertKey("cad-reference-server", ips, names)
	if err == nil {
		err = certutil.WriteCert(certFile, cert)
	}
	if err == nil {
		err = keyutil.WriteKey(keyFile, key)
	}
	return certFile, keyFile, err
}
