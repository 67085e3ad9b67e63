package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/configasdata/cad/examples/internal/kubetest"
)

// hostIP returns a non-loopback IPv4 address of this machine: the
// aggregation layer refuses loopback endpoints.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no non-loopback IPv4 address: the aggregated API test needs one")
	}
	t.Skip("no non-loopback IPv4 address: the aggregated API test needs one")
	return ""
}

var (
	gvrEndpoints = schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}
	gvrSlices    = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}
	gvrAPIServ   = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	gvrPR        = schema.GroupVersionResource{Group: "porch.kpt.dev", Version: "v1alpha1", Resource: "packagerevisions"}
	gvrPRR       = schema.GroupVersionResource{Group: "porch.kpt.dev", Version: "v1alpha1", Resource: "packagerevisionresources"}
)

func obj(s string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(s), &u.Object); err != nil {
		panic(err)
	}
	return u
}

// TestClusterMode runs the server as the aggregated porch.kpt.dev/v1alpha1
// API of a real kube-apiserver: Repositories are the cluster's objects,
// kubectl reaches PackageRevisionResources through the cluster, a push
// through the cluster lands in git with the cluster user as its author,
// and the server's own API refuses to change the mirrored repositories.
func TestClusterMode(t *testing.T) {
	c := kubetest.Start(t)
	c.ApplyCRDs(t, filepath.Join("..", "..", "api", "crds", "config.porch.kpt.dev_repositories.yaml"))
	ip := hostIP(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	root := t.TempDir()
	gitDir := filepath.Join(root, "blueprints.git")
	_, err := git.PlainInitWithOptions(gitDir, &git.PlainInitOptions{Bare: true,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")}})
	require.NoError(t, err)

	// The deployment manifest's service account and permissions, Service
	// and APIService; the server runs as that account.
	kubectl, err := exec.LookPath("kubectl")
	require.NoError(t, err, "kubectl is needed (scripts/install-test-deps.sh installs it)")
	admin := func(args ...string) {
		t.Helper()
		out, err := exec.Command(kubectl, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	admin("create", "namespace", "cad-system")
	admin("apply", "-f", filepath.Join("deploy", "cluster-mode.yaml"))
	kcfg, err := os.ReadFile(c.Kubeconfig)
	require.NoError(t, err)
	saKubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(saKubeconfig, []byte(strings.Replace(string(kcfg), "    token: ",
		"    as: system:serviceaccount:cad-system:cad-server\n    as-groups: [system:serviceaccounts, system:serviceaccounts:cad-system, system:authenticated]\n    token: ", 1)), 0o600))

	l, err := net.Listen("tcp", ip+":0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--kubeconfig", saKubeconfig, "--listen", net.JoinHostPort(ip, strconv.Itoa(port)),
			"--data-dir", t.TempDir(), "--repository-root", root}, io.Discard, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("run did not stop")
		}
	})

	dc, err := dynamic.NewForConfig(c.Config)
	require.NoError(t, err)
	create := func(gvr schema.GroupVersionResource, ns string, u *unstructured.Unstructured) {
		t.Helper()
		_, err := dc.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// The manifest's Service gets the server's address as its endpoint by
	// hand: no endpoints controller or kube-proxy runs, and the aggregator
	// routes to endpoints.
	create(gvrEndpoints, "cad-system", obj(fmt.Sprintf(`{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"cad-server"},
		"subsets":[{"addresses":[{"ip":%q}],"ports":[{"port":%d}]}]}`, ip, port)))
	create(gvrSlices, "cad-system", obj(fmt.Sprintf(`{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice",
		"metadata":{"name":"cad-server-1","labels":{"kubernetes.io/service-name":"cad-server"}},"addressType":"IPv4",
		"endpoints":[{"addresses":[%q],"conditions":{"ready":true}}],"ports":[{"port":%d,"protocol":"TCP"}]}`, ip, port)))
	create(schema.GroupVersionResource{Group: "config.porch.kpt.dev", Version: "v1alpha1", Resource: "repositories"}, "default",
		obj(fmt.Sprintf(`{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"Repository","metadata":{"name":"blueprints"},
		"spec":{"type":"git","content":"Package","git":{"repo":%q,"branch":"main","createBranch":true}}}`, gitDir)))

	// The APIService becomes available once the aggregator reaches the
	// server's discovery with its client certificate.
	require.Eventually(t, func() bool {
		u, err := dc.Resource(gvrAPIServ).Get(ctx, "v1alpha1.porch.kpt.dev", metav1.GetOptions{})
		if err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Available" && m["status"] == "True" {
				return true
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond, "APIService v1alpha1.porch.kpt.dev never became Available")

	// A draft through the cluster (porchctl rpkg init): the mirrored
	// repository is open once the server's informer has seen it.
	pr := obj(`{"apiVersion":"porch.kpt.dev/v1alpha1","kind":"PackageRevision","metadata":{"namespace":"default"},
		"spec":{"packageName":"app","workspaceName":"ws1","repository":"blueprints","lifecycle":"Draft",
		"tasks":[{"type":"init","init":{"description":"an app"}}]}}`)
	var lastErr error
	require.Eventually(t, func() bool {
		_, lastErr = dc.Resource(gvrPR).Namespace("default").Create(ctx, pr, metav1.CreateOptions{})
		return lastErr == nil
	}, 30*time.Second, 200*time.Millisecond, "creating a draft through the cluster")
	require.NoError(t, lastErr)

	k := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(kubectl, append([]string{"--kubeconfig", c.Kubeconfig, "-n", "default"}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	out := k("get", "packagerevisionresources")
	require.Contains(t, out, "blueprints.app.ws1")

	// A push through the cluster (porchctl rpkg push): a new file.
	prr, err := dc.Resource(gvrPRR).Namespace("default").Get(ctx, "blueprints.app.ws1", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(prr.Object,
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n", "spec", "resources", "settings.yaml"))
	_, err = dc.Resource(gvrPRR).Namespace("default").Update(ctx, prr, metav1.UpdateOptions{})
	require.NoError(t, err)
	out = k("get", "packagerevisionresources", "blueprints.app.ws1", "-o", "jsonpath={.spec.resources.settings\\.yaml}")
	require.Contains(t, out, "color: blue")

	// cadctl (porchctl's verbs) through the cluster: get, pull, push.
	cadctl := filepath.Join(t.TempDir(), "cadctl")
	if out, err := exec.Command("go", "build", "-o", cadctl, "../cadctl").CombinedOutput(); err != nil {
		t.Fatalf("building cadctl: %v\n%s", err, out)
	}
	cad := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(cadctl, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	require.Contains(t, cad("rpkg", "get"), "blueprints.app.ws1")
	pkgDir := filepath.Join(t.TempDir(), "app")
	cad("rpkg", "pull", "blueprints.app.ws1", pkgDir)
	b, err := os.ReadFile(filepath.Join(pkgDir, "settings.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(b), "color: blue")
	require.NoError(t, os.WriteFile(filepath.Join(pkgDir, "settings.yaml"), []byte(strings.Replace(string(b), "blue", "green", 1)), 0o644))
	cad("rpkg", "push", "blueprints.app.ws1", pkgDir)
	require.Contains(t, k("get", "packagerevisionresources", "blueprints.app.ws1", "-o", "jsonpath={.spec.resources.settings\\.yaml}"), "color: green")

	// It is in git, authored by the cluster's user.
	g, err := git.PlainOpen(gitDir)
	require.NoError(t, err)
	ref, err := g.Reference(plumbing.NewBranchReferenceName("drafts/app/ws1"), true)
	require.NoError(t, err)
	cm, err := g.CommitObject(ref.Hash())
	require.NoError(t, err)
	require.Equal(t, "admin", cm.Author.Name)

	// The server's own API refuses to change the cluster's repositories,
	// and refuses anyone who does not come through the aggregator.
	base := "https://" + net.JoinHostPort(ip, strconv.Itoa(port))
	hc := insecureClient()
	resp, err := hc.Get(base + "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisions")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// A request that comes with the aggregator's certificate is
	// authorized by the cluster (a SubjectAccessReview): a user without
	// RBAC is refused, and an admin is not.
	cert, err := tls.LoadX509KeyPair(c.FrontProxyCert, c.FrontProxyKey)
	require.NoError(t, err)
	proxy := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}}}
	as := func(user, group string) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisionresources", nil)
		req.Header.Set("X-Remote-User", user)
		if group != "" {
			req.Header.Set("X-Remote-Group", group)
		}
		resp, err := proxy.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusForbidden, as("mallory", ""))
	require.Equal(t, http.StatusOK, as("root", "system:masters"))
	req, _ := http.NewRequest(http.MethodPost, base+"/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/repositories",
		strings.NewReader(`{"apiVersion":"config.porch.kpt.dev/v1alpha1","kind":"Repository","metadata":{"name":"other"},"spec":{"type":"git","git":{"repo":"/tmp/x.git"}}}`))
	req.Header.Set("X-Remote-User", "root")
	req.Header.Set("X-Remote-Group", "system:masters")
	req.Header.Set("Content-Type", "application/json")
	resp, err = proxy.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, string(body))
	require.Contains(t, string(body), "managed in the Kubernetes cluster")

	// Deleting the Repository in the cluster removes it from the server.
	require.NoError(t, dc.Resource(schema.GroupVersionResource{Group: "config.porch.kpt.dev", Version: "v1alpha1", Resource: "repositories"}).
		Namespace("default").Delete(ctx, "blueprints", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		out, err := exec.Command(kubectl, "--kubeconfig", c.Kubeconfig, "-n", "default", "get", "packagerevisionresources", "-o", "name").CombinedOutput()
		return err == nil && !strings.Contains(string(out), "blueprints.app.ws1")
	}, 30*time.Second, 200*time.Millisecond)
}

// insecureClient is an HTTPS client that skips verification and presents
// no client certificate.
func insecureClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}
