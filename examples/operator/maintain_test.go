package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
)

// gitCLI runs git in dir with stdin and returns its trimmed output.
func gitCLI(t *testing.T, dir string, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// countPacksLoose counts the packs and the loose objects of gitDir.
func countPacksLoose(t *testing.T, gitDir string) (packs, loose int) {
	t.Helper()
	idx, err := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.idx"))
	require.NoError(t, err)
	obj, err := filepath.Glob(filepath.Join(gitDir, "objects", "[0-9a-f][0-9a-f]", "*"))
	require.NoError(t, err)
	return len(idx), len(obj)
}

// With Options.MaintainInterval the leader packs the open repositories on
// its schedule: a repository given 20 one-object packs and loose objects
// by the git CLI ends with few packs and no loose object, and git fsck
// finds nothing wrong. A run that fails shows in the Repository's
// ConditionMaintenanceFailed, which goes when a run succeeds.
func TestScheduledMaintenance(t *testing.T) {
	e := newEnv(t)
	for i := range 20 {
		h := gitCLI(t, e.gitDir, fmt.Sprintf("blob %d\n", i), "hash-object", "-w", "--stdin")
		gitCLI(t, e.gitDir, h+"\n", "pack-objects", "-q", "objects/pack/pack")
	}
	packs, loose := countPacksLoose(t, e.gitDir)
	require.Equal(t, 20, packs)
	require.Equal(t, 20, loose)
	e.run(Options{MaintainInterval: 50 * time.Millisecond})
	e.create("blueprints.app.ws", "app", "ws", &porchv1alpha2.PackageSource{Init: &porchv1alpha2.PackageInitSpec{Description: "the app"}})
	e.wait("blueprints.app.ws", "a ready draft", readyAt(porchv1alpha2.LifecycleDraft))
	require.Eventually(t, func() bool {
		p, l := countPacksLoose(t, e.gitDir)
		return p <= 2 && l == 0
	}, 60*time.Second, 50*time.Millisecond, "not maintained")
	gitCLI(t, e.gitDir, "", "fsck", "--strict", "--no-dangling")

	// A small pack whose objects do not read, with a loose object beside
	// it so that the geometric rule merges it, fails the run.
	h := gitCLI(t, e.gitDir, "unreachable\n", "hash-object", "-w", "--stdin")
	base := filepath.Join(e.gitDir, "objects", "pack", "pack-"+gitCLI(t, e.gitDir, h+"\n", "pack-objects", "-q", "objects/pack/pack"))
	require.NoError(t, os.Remove(filepath.Join(e.gitDir, "objects", h[:2], h[2:])))
	data, err := os.ReadFile(base + ".pack")
	require.NoError(t, err)
	for i := 12; i < len(data)-20; i++ {
		data[i] = 0
	}
	require.NoError(t, os.WriteFile(base+".pack", data, 0o444))
	gitCLI(t, e.gitDir, "loose\n", "hash-object", "-w", "--stdin")
	repo := &configv1alpha1.Repository{}
	condition := func() *metav1.Condition {
		require.NoError(t, e.c.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: "blueprints"}, repo))
		return meta.FindStatusCondition(repo.Status.Conditions, ConditionMaintenanceFailed)
	}
	require.Eventually(t, func() bool { return condition() != nil }, 60*time.Second, 50*time.Millisecond, "no MaintenanceFailed condition")
	c := condition()
	require.Equal(t, metav1.ConditionTrue, c.Status)
	require.Equal(t, ReasonMaintenanceError, c.Reason)
	require.Contains(t, c.Message, filepath.Base(base))
	rc := meta.FindStatusCondition(repo.Status.Conditions, configv1alpha1.RepositoryReady)
	require.Equal(t, metav1.ConditionTrue, rc.Status, rc.Message)

	for _, ext := range []string{".pack", ".idx"} {
		require.NoError(t, os.Remove(base+ext))
	}
	require.Eventually(t, func() bool { return condition() == nil }, 60*time.Second, 50*time.Millisecond, "MaintenanceFailed stays after a run succeeded")
	gitCLI(t, e.gitDir, "", "fsck", "--strict", "--no-dangling")
}
