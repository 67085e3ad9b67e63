package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

// kubectl runs the real kubectl against a test server, with a kubeconfig
// and caches of its own.
type kubectl struct {
	t          *testing.T
	bin        string
	kubeconfig string
	home       string
}

func newKubectl(t *testing.T, url string) *kubectl {
	t.Helper()
	return newKubectlAs(t, url, "{}", "")
}

// newKubectlAs is newKubectl with the kubeconfig's user (a YAML flow
// mapping such as {token: abc}) and extra cluster fields (such as
// "certificate-authority-data: ...").
func newKubectlAs(t *testing.T, url, user, cluster string) *kubectl {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed (not on PATH); install it to run the kubectl tests")
	}
	home := t.TempDir()
	cfg := filepath.Join(home, "kubeconfig")
	if cluster != "" {
		cluster = "\n    " + cluster
	}
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: cad
  cluster:
    server: %s%s
users:
- name: cad
  user: %s
contexts:
- name: cad
  context:
    cluster: cad
    user: cad
    namespace: default
current-context: cad
`, url, cluster, user)
	if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return &kubectl{t: t, bin: bin, kubeconfig: cfg, home: home}
}

func (k *kubectl) cmd(ctx context.Context, stdin string, args ...string) *exec.Cmd {
	args = append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", filepath.Join(k.home, "cache"), "--request-timeout", "30s"}, args...)
	c := exec.CommandContext(ctx, k.bin, args...)
	c.Env = append(os.Environ(), "HOME="+k.home, "KUBECONFIG="+k.kubeconfig, "KUBECTL_INTERACTIVE_DELETE=false")
	if stdin != "" {
		c.Stdin = strings.NewReader(stdin)
	}
	return c
}

// run runs kubectl and returns stdout, stderr and the error.
func (k *kubectl) run(stdin string, args ...string) (string, string, error) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := k.cmd(ctx, stdin, args...)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	return out.String(), errOut.String(), err
}

// ok runs kubectl and fails the test when it fails.
func (k *kubectl) ok(stdin string, args ...string) string {
	k.t.Helper()
	out, errOut, err := k.run(stdin, args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// fails runs kubectl, expects it to fail and returns its stderr.
func (k *kubectl) fails(stdin string, args ...string) string {
	k.t.Helper()
	out, errOut, err := k.run(stdin, args...)
	if err == nil {
		k.t.Fatalf("kubectl %s succeeded, want a failure\nstdout: %s", strings.Join(args, " "), out)
	}
	return errOut
}

// watcher is a kubectl get --watch running in the background.
type watcher struct {
	lines  chan string
	cancel context.CancelFunc
	done   chan error
}

func (k *kubectl) watch(args ...string) *watcher {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	c := k.cmd(ctx, "", args...)
	stdout, err := c.StdoutPipe()
	if err != nil {
		k.t.Fatal(err)
	}
	var errOut bytes.Buffer
	c.Stderr = &errOut
	if err := c.Start(); err != nil {
		k.t.Fatal(err)
	}
	w := &watcher{lines: make(chan string, 100), cancel: cancel, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
		w.done <- c.Wait()
	}()
	k.t.Cleanup(func() { cancel(); <-w.done })
	return w
}

// expect waits for a line containing every one of want.
func (w *watcher) expect(t *testing.T, timeout time.Duration, want ...string) string {
	t.Helper()
	deadline := time.After(timeout)
	var seen []string
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				t.Fatalf("watch ended before a line with %q; saw %q", want, seen)
			}
			seen = append(seen, line)
			all := true
			for _, s := range want {
				all = all && strings.Contains(line, s)
			}
			if all {
				return line
			}
		case <-deadline:
			t.Fatalf("no watch line with %q within %s; saw %q", want, timeout, seen)
		}
	}
}

const kubectlInitPR = `apiVersion: porch.kpt.dev/v1alpha1
kind: PackageRevision
metadata:
  namespace: default
  labels:
    team: blue
spec:
  packageName: basens
  repository: default
  workspaceName: ws1
  tasks:
  - type: init
    init:
      description: a namespace package
`

const kubectlCopyPR = `apiVersion: porch.kpt.dev/v1alpha1
kind: PackageRevision
metadata:
  name: default.basens.ws2
  namespace: default
  labels:
    stage: %s
spec:
  packageName: basens
  repository: default
  workspaceName: ws2
  tasks:
  - type: edit
    edit:
      sourceRef:
        name: default.basens.ws1
`

func TestKubectl(t *testing.T) {
	ts := startServer(t, "", nil)
	k := newKubectl(t, ts.URL)
	const name = "default.basens.ws1"

	// Empty to start with.
	out, errOut, err := k.run("", "get", "packagerevisions")
	if err != nil || !strings.Contains(out+errOut, "No resources found") {
		t.Fatalf("get on an empty server: %v %q %q", err, out, errOut)
	}

	// create -f with an init task.
	if out := k.ok(kubectlInitPR, "create", "-f", "-"); !strings.Contains(out, "packagerevision.porch.kpt.dev/"+name+" created") {
		t.Fatalf("create: %q", out)
	}
	out = k.ok("", "get", "packagerevisions")
	for _, want := range []string{"NAME", "PACKAGE", "WORKSPACENAME", "REVISION", "LATEST", "LIFECYCLE", "REPOSITORY", name, "basens", "Draft"} {
		if !strings.Contains(out, want) {
			t.Errorf("get table lacks %q:\n%s", want, out)
		}
	}
	if out := k.ok("", "get", "rpkg", name, "-o", "jsonpath={.metadata.labels.team}"); out != "blue" {
		t.Errorf("label team = %q", out)
	}

	// get packagerevisionresources -o yaml, edit, replace.
	prr := k.ok("", "get", "packagerevisionresources", name, "-o", "yaml")
	if !strings.Contains(prr, "Kptfile: |") || !strings.Contains(prr, "resourceVersion:") {
		t.Fatalf("prr yaml:\n%s", prr)
	}
	edited := strings.Replace(prr, "    Kptfile: |", "    cm.yaml: |\n      apiVersion: v1\n      kind: ConfigMap\n      metadata:\n        name: settings\n      data:\n        color: blue\n    Kptfile: |", 1)
	if out := k.ok(edited, "replace", "-f", "-"); !strings.Contains(out, "replaced") {
		t.Fatalf("replace: %q", out)
	}
	var res porchapi.PackageRevisionResources
	if err := json.Unmarshal([]byte(k.ok("", "get", "prr", name, "-o", "json")), &res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Spec.Resources["cm.yaml"], "color: blue") || res.Spec.Resources["Kptfile"] == "" {
		t.Fatalf("resources after replace: %v", res.Spec.Resources)
	}
	// Replacing from the stale copy is a conflict.
	if errOut := k.fails(edited, "replace", "-f", "-"); !strings.Contains(errOut, "Conflict") {
		t.Errorf("stale replace: %q", errOut)
	}

	// A watch sees the proposal.
	table := k.watch("get", "packagerevisions", "--watch")
	table.expect(t, 20*time.Second, name, "Draft")
	names := k.watch("get", "packagerevisions", "--watch-only", "-o", `jsonpath={.metadata.name} {.spec.lifecycle}{"\n"}`)
	ts.waitWatchers(t, 2)
	k.ok("", "patch", "packagerevision", name, "--type", "merge", "-p", `{"spec":{"lifecycle":"Proposed"}}`)
	table.expect(t, 20*time.Second, name, "Proposed")
	names.expect(t, 20*time.Second, name+" Proposed")

	// Approve through the approval subresource.
	var pr porchapi.PackageRevision
	if err := json.Unmarshal([]byte(k.ok("", "get", "packagerevision", name, "-o", "json")), &pr); err != nil {
		t.Fatal(err)
	}
	pr.Spec.Lifecycle = porchapi.LifecyclePublished
	approve, _ := json.Marshal(&pr)
	approveOut, approveErr, err := k.run(string(approve), "replace", "--subresource=approval", "-f", "-")
	if err != nil {
		// Older kubectl refuses subresources it does not know: use --raw.
		t.Logf("kubectl replace --subresource=approval: %v %s; using --raw", err, approveErr)
		approveOut = k.ok(string(approve), "replace", "--raw", "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisions/"+name+"/approval", "-f", "-")
	}
	t.Logf("approve: %s", approveOut)
	table.expect(t, 20*time.Second, name, "Published", "true")
	names.expect(t, 20*time.Second, name+" Published")

	// -o json decodes into the API types.
	var list porchapi.PackageRevisionList
	if err := json.Unmarshal([]byte(k.ok("", "get", "packagerevisions", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	byName := map[string]porchapi.PackageRevision{}
	for _, it := range list.Items {
		byName[it.Name] = it
	}
	if p := byName[name]; p.Spec.Revision != 1 || p.Spec.Lifecycle != porchapi.LifecyclePublished || !porchapi.IsLatest(&p) ||
		p.Labels["team"] != "blue" || p.Status.PublishedAt.IsZero() {
		t.Errorf("published revision: %+v", p)
	}
	if p, ok := byName["default.basens.main"]; !ok || p.Spec.Revision != -1 || porchapi.IsLatest(&p) {
		t.Errorf("placeholder revision: %+v (%v)", p, ok)
	}

	// Label and field selectors.
	if out := k.ok("", "get", "packagerevisions", "-l", "kpt.dev/latest-revision=true", "-o", "name"); strings.TrimSpace(out) != "packagerevision.porch.kpt.dev/"+name {
		t.Errorf("latest selector: %q", out)
	}
	if out := k.ok("", "get", "packagerevisions", "-l", "team=blue,kpt.dev/latest-revision", "-o", "name"); !strings.Contains(out, name) {
		t.Errorf("label selector: %q", out)
	}
	if out := k.ok("", "get", "packagerevisions", "-l", "team=red", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("label selector matched: %q", out)
	}
	out = k.ok("", "get", "packagerevisions", "--field-selector", "spec.packageName=basens,spec.revision=-1", "-o", "name")
	if strings.TrimSpace(out) != "packagerevision.porch.kpt.dev/default.basens.main" {
		t.Errorf("field selector revision: %q", out)
	}
	for _, sel := range []string{"spec.lifecycle=Published,spec.workspaceName=ws1", "metadata.name=" + name, "spec.repository=default,spec.revision=1"} {
		if out := k.ok("", "get", "packagerevisions", "--field-selector", sel, "-o", "name"); strings.TrimSpace(out) != "packagerevision.porch.kpt.dev/"+name {
			t.Errorf("field selector %s: %q", sel, out)
		}
	}
	if errOut := k.fails("", "get", "packagerevisions", "--field-selector", "spec.color=blue"); !strings.Contains(errOut, "field label not supported") {
		t.Errorf("unknown field selector: %q", errOut)
	}

	// apply: create a new revision by copying, then change a label.
	if out := k.ok(fmt.Sprintf(kubectlCopyPR, "dev"), "apply", "-f", "-"); !strings.Contains(out, "default.basens.ws2 created") {
		t.Fatalf("apply create: %q", out)
	}
	if out := k.ok(fmt.Sprintf(kubectlCopyPR, "prod"), "apply", "-f", "-"); !strings.Contains(out, "default.basens.ws2 configured") {
		t.Fatalf("apply update: %q", out)
	}
	if out := k.ok("", "get", "rpkg", "default.basens.ws2", "-o", "jsonpath={.metadata.labels.stage} {.spec.lifecycle}"); out != "prod Draft" {
		t.Errorf("after apply: %q", out)
	}
	if out := k.ok("", "get", "prr", "default.basens.ws2", "-o", "jsonpath={.spec.resources.cm\\.yaml}"); !strings.Contains(out, "color: blue") {
		t.Errorf("copied content: %q", out)
	}
	k.ok("", "label", "rpkg", "default.basens.ws2", "owner=me")
	if out := k.ok("", "get", "rpkg", "-l", "owner=me", "-o", "name"); !strings.Contains(out, "default.basens.ws2") {
		t.Errorf("kubectl label: %q", out)
	}

	// delete: a published revision is refused until proposed for deletion.
	if errOut := k.fails("", "delete", "packagerevision", name); !strings.Contains(errOut, "Forbidden") || !strings.Contains(errOut, "DeletionProposed") {
		t.Errorf("delete published: %q", errOut)
	}
	k.ok("", "patch", "packagerevision", name, "--type", "merge", "-p", `{"spec":{"lifecycle":"DeletionProposed"}}`)
	table.expect(t, 20*time.Second, name, "DeletionProposed")
	if out := k.ok("", "delete", "packagerevision", name); !strings.Contains(out, `"`+name+`" deleted`) {
		t.Errorf("delete: %q", out)
	}
	if out := k.ok("", "delete", "packagerevision", "default.basens.ws2"); !strings.Contains(out, "deleted") {
		t.Errorf("delete draft: %q", out)
	}
	if errOut := k.fails("", "get", "packagerevision", name); !strings.Contains(errOut, "NotFound") {
		t.Errorf("get deleted: %q", errOut)
	}

	// Namespaces and repositories.
	k.ok("", "create", "namespace", "team-a")
	if out := k.ok("", "get", "namespaces"); !strings.Contains(out, "team-a") || !strings.Contains(out, "default") {
		t.Errorf("namespaces: %q", out)
	}
	bare := filepath.Join(t.TempDir(), "team.git")
	repo := fmt.Sprintf(`apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata:
  name: default
  namespace: team-a
spec:
  type: git
  content: Package
  git:
    repo: %s
    branch: main
    createBranch: true
`, bare)
	if _, err := exec.Command("git", "init", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
		t.Skipf("git init --bare: %v", err)
	}
	k.ok(repo, "create", "-f", "-")
	if out := k.ok("", "get", "repositories", "-n", "team-a"); !strings.Contains(out, "True") || !strings.Contains(out, bare) {
		t.Errorf("repositories: %q", out)
	}
	if out := k.ok(strings.Replace(kubectlInitPR, "namespace: default", "namespace: team-a", 1), "create", "-f", "-"); !strings.Contains(out, "default.basens.ws1 created") {
		t.Errorf("create in team-a: %q", out)
	}
	out = k.ok("", "get", "packagerevisions", "-A")
	if !strings.Contains(out, "team-a") || !strings.Contains(out, "NAMESPACE") {
		t.Errorf("all namespaces: %q", out)
	}
	if out := k.ok("", "get", "packagerevisions", "-n", "default", "-o", "name"); strings.Contains(out, "ws1") {
		t.Errorf("namespace default sees team-a's revision: %q", out)
	}

	if out := k.ok("", "delete", "namespace", "team-a"); !strings.Contains(out, "deleted") {
		t.Errorf("delete namespace: %q", out)
	}
	if out := k.ok("", "get", "repositories", "-A", "-o", "name"); strings.TrimSpace(out) != "repository.config.porch.kpt.dev/default" {
		t.Errorf("repositories after deleting team-a: %q", out)
	}
}
