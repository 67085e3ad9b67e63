// Package kubetest starts a real Kubernetes control plane for tests: etcd
// and kube-apiserver, on free loopback ports, with their data in a
// temporary directory, as controller-runtime's envtest does but without its
// download step. The binaries are built once by
// scripts/install-test-deps.sh (kube-apiserver from k8s.io/kubernetes
// v1.37.2, etcd from go.etcd.io/etcd/server/v3, through the tools/kube
// module) into $HOME/.cache/cad/kube-v1.37.2/bin; CAD_KUBE_BIN names another
// directory, and the PATH is the last resort.
//
// Without the binaries, [Start] skips the test with a message saying how to
// get them; under CI (CI set) it fails instead, so that a missing install
// step never passes unnoticed.
//
// The API server authenticates one user, "admin" in group system:masters,
// by a bearer token; [Cluster.Config] and the kubeconfig file written by
// [Start] carry it. TLS is the API server's self-signed certificate: both
// trust it through its CA file.
package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Version is the Kubernetes release whose kube-apiserver the tests run.
const Version = "v1.37.2"

// ErrNoBinaries is returned by [New] when kube-apiserver or etcd is not
// found.
var ErrNoBinaries = errors.New("kubetest: kube-apiserver or etcd not found (run scripts/install-test-deps.sh, or set CAD_KUBE_BIN)")

// Cluster is a running etcd and kube-apiserver.
type Cluster struct {
	// Config reaches the API server as the admin user.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for kubectl, with the
	// same user and server as Config.
	Kubeconfig string
	// URL is the API server's address, https://127.0.0.1:port.
	URL string
	// Dir holds the cluster's data, certificates and logs.
	Dir string
	// FrontProxyCA is the path of the CA certificate (PEM) that signs the
	// client certificate the API server's aggregator presents to
	// aggregated API servers (CN front-proxy-client); such a server trusts
	// the X-Remote-User and X-Remote-Group headers of requests that come
	// with it.
	FrontProxyCA string
	// FrontProxyCert and FrontProxyKey are that client certificate and
	// its key (PEM files), for tests that act as the aggregator.
	FrontProxyCert, FrontProxyKey string

	procs    []*proc
	stopOnce sync.Once
}

// proc is a started process; done closes when it has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// BinDir returns the directory holding kube-apiserver and etcd: CAD_KUBE_BIN
// when set, else the install script's cache directory when it holds both,
// else "" (look them up on the PATH).
func BinDir() string {
	if d := os.Getenv("CAD_KUBE_BIN"); d != "" {
		return d
	}
	if home, err := os.UserHomeDir(); err == nil {
		d := filepath.Join(home, ".cache", "cad", "kube-"+Version, "bin")
		if isExec(filepath.Join(d, "kube-apiserver")) && isExec(filepath.Join(d, "etcd")) {
			return d
		}
	}
	return ""
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// binaries returns the paths of kube-apiserver and etcd, or ErrNoBinaries.
func binaries() (apiserver, etcd string, err error) {
	if d := BinDir(); d != "" {
		apiserver, etcd = filepath.Join(d, "kube-apiserver"), filepath.Join(d, "etcd")
		if isExec(apiserver) && isExec(etcd) {
			return apiserver, etcd, nil
		}
		return "", "", fmt.Errorf("%w: not in %s", ErrNoBinaries, d)
	}
	if apiserver, err = exec.LookPath("kube-apiserver"); err != nil {
		return "", "", ErrNoBinaries
	}
	if etcd, err = exec.LookPath("etcd"); err != nil {
		return "", "", ErrNoBinaries
	}
	return apiserver, etcd, nil
}

// Start starts a cluster for tb and stops it when tb ends. It skips tb
// when the binaries are missing, or fails it when CI is set.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		tb.Fatal(err)
	}
	c, err := New(context.Background(), dir)
	if errors.Is(err, ErrNoBinaries) {
		os.RemoveAll(dir)
		if os.Getenv("CI") != "" {
			tb.Fatalf("%v; CI must install them", err)
		}
		tb.Skip(err)
	}
	if err != nil {
		os.RemoveAll(dir)
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.Stop()
		if !tb.Failed() {
			os.RemoveAll(dir)
		} else {
			tb.Logf("kubetest: cluster data and logs kept in %s", dir)
		}
	})
	return c
}

// New starts etcd and kube-apiserver with their data under dir and waits
// until the API server is ready. It returns ErrNoBinaries when they are
// missing, or an error carrying the end of the failing process's log. The
// caller stops the cluster with [Cluster.Stop].
func New(ctx context.Context, dir string) (*Cluster, error) {
	apiserverBin, etcdBin, err := binaries()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()

	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	if err := c.start(etcdBin, "etcd",
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL,
		"--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		"--initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", ports[1]),
		"--unsafe-no-fsync",
		"--log-level", "warn",
	); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, time.Minute, c.procs[0], filepath.Join(dir, "etcd.log"), func() bool {
		resp, err := http.Get(etcdURL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}); err != nil {
		return nil, fmt.Errorf("kubetest: etcd: %w", err)
	}

	token, err := randomToken()
	if err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(token+",admin,admin-uid,\"system:masters\"\n"), 0o600); err != nil {
		return nil, err
	}
	saKey := filepath.Join(dir, "sa.key")
	if err := writeRSAKey(saKey); err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	c.FrontProxyCA = filepath.Join(certDir, "front-proxy-ca.crt")
	proxyCert, proxyKey := filepath.Join(certDir, "front-proxy-client.crt"), filepath.Join(certDir, "front-proxy-client.key")
	c.FrontProxyCert, c.FrontProxyKey = proxyCert, proxyKey
	if err := writeFrontProxyCerts(c.FrontProxyCA, proxyCert, proxyKey); err != nil {
		return nil, err
	}
	c.URL = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	if err := c.start(apiserverBin, "kube-apiserver",
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1",
		"--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[2]),
		"--cert-dir", certDir,
		"--token-auth-file", tokenFile,
		"--authorization-mode", "RBAC",
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--service-account-issuer", "https://127.0.0.1",
		"--service-account-key-file", saKey,
		"--service-account-signing-key-file", saKey,
		"--disable-admission-plugins", "ServiceAccount",
		"--allow-privileged",
		// The kubernetes Service's endpoint would be 127.0.0.1, which it
		// refuses; nothing here needs that Service.
		"--endpoint-reconciler-type", "none",
		// The aggregation layer, for APIServices served outside: it
		// proxies with a client certificate and the user in headers, and
		// routes to a Service's endpoints (there is no kube-proxy).
		"--requestheader-client-ca-file", c.FrontProxyCA,
		"--requestheader-allowed-names", "front-proxy-client",
		"--requestheader-username-headers", "X-Remote-User",
		"--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
		"--proxy-client-cert-file", proxyCert,
		"--proxy-client-key-file", proxyKey,
		"--enable-aggregator-routing=true",
		"--v", "0",
	); err != nil {
		return nil, err
	}
	apiLog := filepath.Join(dir, "kube-apiserver.log")
	var ca []byte
	if err := waitFor(ctx, 3*time.Minute, c.procs[1], apiLog, func() bool {
		if ca == nil {
			// The self-signed serving certificate, which also holds its CA.
			b, err := os.ReadFile(filepath.Join(certDir, "apiserver.crt"))
			if err != nil {
				return false
			}
			ca = b
		}
		return c.ready(ca, token)
	}); err != nil {
		return nil, fmt.Errorf("kubetest: kube-apiserver: %w", err)
	}
	c.Config = &rest.Config{
		Host:            c.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		QPS:             1000,
		Burst:           2000,
	}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, kubeconfig(c.URL, token, filepath.Join(certDir, "apiserver.crt")), 0o600); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// ready reports whether the API server answers /readyz with ok.
func (c *Cluster) ready(ca []byte, token string) bool {
	cfg := &rest.Config{Host: c.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, Timeout: 5 * time.Second}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return false
	}
	req, _ := http.NewRequest(http.MethodGet, c.URL+"/readyz", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && strings.TrimSpace(string(b)) == "ok"
}

// start runs bin with args, its output in <dir>/<name>.log. The process
// dies with the test binary (Pdeathsig) even when the test binary is
// killed.
func (c *Cluster) start(bin, name string, args ...string) error {
	logf, err := os.Create(filepath.Join(c.Dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("kubetest: start %s: %w", name, err)
	}
	logf.Close()
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.procs = append(c.procs, p)
	return nil
}

// Stop stops kube-apiserver and etcd (SIGTERM, then SIGKILL after five
// seconds) and waits for them. It is safe to call more than once.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		for i := len(c.procs) - 1; i >= 0; i-- {
			p := c.procs[i]
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
				<-p.done
			}
		}
	})
}

// waitFor polls cond until it holds, the process exits, or timeout passes;
// errors carry the end of logPath.
func waitFor(ctx context.Context, timeout time.Duration, p *proc, logPath string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited before it was ready:\n%s", tail(logPath))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s:\n%s", timeout, tail(logPath))
		}
	}
}

// tail returns the last lines of a log file.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// freePorts returns n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writeRSAKey writes a new RSA private key in PEM, for service account
// tokens (the API server refuses to start without one).
func writeRSAKey(path string) error {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	return os.WriteFile(path, b, 0o600)
}

// writeFrontProxyCerts writes a new CA and a client certificate it signs
// for CN front-proxy-client, with its key, all in PEM.
func writeFrontProxyCerts(caPath, certPath, keyPath string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubetest-front-proxy-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "front-proxy-client"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	for path, b := range map[string][]byte{
		caPath:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPath: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPath:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func kubeconfig(server, token, caFile string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: kubetest
  context:
    cluster: kubetest
    user: admin
current-context: kubetest
`, server, caFile, token))
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ApplyCRDs creates or updates the CustomResourceDefinitions in the YAML
// files at paths (several documents per file are allowed; other kinds are
// an error) and waits until each is established. It fails tb on error.
func (c *Cluster) ApplyCRDs(tb testing.TB, paths ...string) {
	tb.Helper()
	if err := c.applyCRDs(context.Background(), paths...); err != nil {
		tb.Fatal(err)
	}
}

func (c *Cluster) applyCRDs(ctx context.Context, paths ...string) error {
	dc, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	crds := dc.Resource(crdGVR)
	var names []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("kubetest: %s: %w", p, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			u := &unstructured.Unstructured{}
			if err := utilyaml.Unmarshal(doc, &u.Object); err != nil {
				return fmt.Errorf("kubetest: %s: %w", p, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if u.GetKind() != "CustomResourceDefinition" {
				return fmt.Errorf("kubetest: %s: a %s, not a CustomResourceDefinition", p, u.GetKind())
			}
			_, err = crds.Create(ctx, u, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				cur, gerr := crds.Get(ctx, u.GetName(), metav1.GetOptions{})
				if gerr != nil {
					return gerr
				}
				u.SetResourceVersion(cur.GetResourceVersion())
				_, err = crds.Update(ctx, u, metav1.UpdateOptions{})
			}
			if err != nil {
				return fmt.Errorf("kubetest: CRD %s: %w", u.GetName(), err)
			}
			names = append(names, u.GetName())
		}
	}
	// Established is not yet served: "there can be a delay between when
	// CustomResourceDefinitions are created and when they are available",
	// and a client that builds its REST mapping from discovery in that
	// window fails with "no matches for kind". Wait for both.
	disc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, n := range names {
		for {
			u, err := crds.Get(ctx, n, metav1.GetOptions{})
			if err == nil && established(u) {
				if err = served(disc, u); err == nil {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("kubetest: CRD %s not established and served after 60s (last error: %v)", n, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// served returns nil when discovery lists the resource of the CRD u in
// every version it serves.
func served(disc discovery.DiscoveryInterface, u *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if m == nil || m["served"] != true {
			continue
		}
		name, _ := m["name"].(string)
		list, err := disc.ServerResourcesForGroupVersion(group + "/" + name)
		if err != nil {
			return err
		}
		found := false
		for _, r := range list.APIResources {
			found = found || r.Name == plural
		}
		if !found {
			return fmt.Errorf("%s/%s does not list %s yet", group, name, plural)
		}
	}
	return nil
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
