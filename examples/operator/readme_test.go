package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
)

// walkthroughBlocks returns the shell blocks of README.md's operator
// walkthrough, in order.
func walkthroughBlocks(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	s := string(data)
	start := strings.Index(s, "### Walkthrough: from an empty cluster")
	require.GreaterOrEqual(t, start, 0, "README.md has no operator walkthrough")
	s = s[start:]
	if end := strings.Index(s, "\nObjects and git:"); end > 0 {
		s = s[:end]
	}
	var blocks []string
	for {
		i := strings.Index(s, "```sh\n")
		if i < 0 {
			break
		}
		s = s[i+len("```sh\n"):]
		j := strings.Index(s, "```")
		require.GreaterOrEqual(t, j, 0, "an unclosed block")
		blocks = append(blocks, s[:j])
		s = s[j+3:]
	}
	require.GreaterOrEqual(t, len(blocks), 6, "the walkthrough's shell blocks")
	return blocks
}

// TestREADMEOperatorWalkthrough runs README.md's operator walkthrough as
// written, with kubectl against the test cluster: its own namespace for
// "default", a temporary directory for /tmp/cad-repos, and the operator
// started in the test process with the flags the README gives it. Each
// command is retried for a while, as a user waits for the operator
// between steps; at the end the upgraded package is published and the
// deleted revision is gone.
func TestREADMEOperatorWalkthrough(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH")
	}
	cfg, kubeconfig := startCluster(t)
	s, err := scheme()
	require.NoError(t, err)
	require.NoError(t, coordinationv1.AddToScheme(s))
	c, err := client.New(cfg, client.Options{Scheme: s})
	require.NoError(t, err)
	e := &env{t: t, cfg: cfg, kubeconfig: kubeconfig, c: c, ns: namespaceFor(t)}
	require.NoError(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}))
	repos := t.TempDir()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)

	// A fake home whose ~/.kube/config is the test cluster's.
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".kube"), 0o755))
	kc, err := os.ReadFile(kubeconfig)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(home, ".kube", "config"), kc, 0o600))
	bin := t.TempDir()
	// kubectl in the walkthrough's namespace.
	require.NoError(t, os.WriteFile(filepath.Join(bin, "kubectl"),
		[]byte("#!/bin/sh\nexec "+kubectl+" --namespace "+e.ns+" \"$@\"\n"), 0o755))

	started := false
	for i, block := range walkthroughBlocks(t) {
		if strings.Contains(block, "$TOKEN") {
			continue // the remote repository's credentials: not part of the local walkthrough
		}
		var script []string
		for _, line := range strings.Split(strings.ReplaceAll(block, "\\\n", ""), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "go run ./examples/operator") {
				// The operator with the README's flags, in this process.
				require.Contains(t, line, "--repository-root /tmp/cad-repos", "the README starts the operator with a repository root")
				e.run(Options{RepositoryRoots: []string{repos}})
				started = true
				continue
			}
			script = append(script, line)
		}
		text := strings.Join(script, "\n")
		text = strings.ReplaceAll(text, "/tmp/cad-repos", repos)
		text = strings.ReplaceAll(text, "namespace: default", "namespace: "+e.ns)
		runStep(t, i, text, root, home, bin)
	}
	require.True(t, started, "the walkthrough starts the operator")

	e.wait("blueprints.edge.v2", "published", readyAt(porchv1alpha2.LifecyclePublished))
	e.wait("blueprints.app.v2", "published", readyAt(porchv1alpha2.LifecyclePublished))
	var pr porchv1alpha2.PackageRevision
	err = c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "blueprints.edge.v1"}, &pr)
	require.True(t, client.IgnoreNotFound(err) == nil && err != nil, "blueprints.edge.v1 was deleted: %v", err)
}

// runStep runs one block of the walkthrough under bash -e, again until it
// succeeds or a minute has passed.
func runStep(t *testing.T, i int, script, dir, home, bin string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		cmd := exec.Command("bash", "-e", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+home, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Logf("block %d:\n%s\n%s", i, script, out)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("block %d failed for a minute: %v\n%s\n%s", i, err, script, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
