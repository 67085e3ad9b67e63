package apiserver

import (
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

	"github.com/configasdata/cad/examples/internal/porchapi"
)

// gitCLI runs git in dir and returns its trimmed output.
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

// With Options.MaintainInterval, Run packs the open repositories on its
// schedule: the default repository, written through the API and given 20
// one-object packs by the git CLI, ends with few packs and no loose
// object, git fsck finds nothing wrong, and its revisions still read. A
// run that fails shows in ConditionMaintenanceFailed until one succeeds.
func TestScheduledMaintenance(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	gitDir := filepath.Join(dataDir, "git", "default.git")
	// Written first with the schedule off: what it packs is then known.
	ts := startServer(t, dataDir, func(o *Options) { o.MaintainInterval = -1 })
	for i := range 3 {
		require.Equal(t, 201, ts.doJSON("POST", prPath, initPR(fmt.Sprintf("pkg%d", i), "ws"), nil))
	}
	ts.stop()
	for i := range 20 {
		h := gitCLI(t, gitDir, fmt.Sprintf("blob %d\n", i), "hash-object", "-w", "--stdin")
		gitCLI(t, gitDir, h+"\n", "pack-objects", "-q", "objects/pack/pack")
	}
	packs, loose := countPacksLoose(t, gitDir)
	require.GreaterOrEqual(t, packs, 20)
	require.Greater(t, loose, 20)

	ts = startServer(t, dataDir, func(o *Options) { o.MaintainInterval = 50 * time.Millisecond })
	require.Eventually(t, func() bool {
		p, l := countPacksLoose(t, gitDir)
		return p <= 2 && l == 0
	}, 30*time.Second, 50*time.Millisecond, "not maintained")
	gitCLI(t, gitDir, "", "fsck", "--strict", "--no-dangling")
	for i := range 3 {
		var pr porchapi.PackageRevision
		require.Equal(t, 200, ts.doJSON("GET", prPath+fmt.Sprintf("/default.pkg%d.ws", i), nil, &pr))
	}

	// A pack whose objects do not read (a small one, which the
	// geometric rule merges) fails the run; it holds no object a
	// revision needs.
	h := gitCLI(t, gitDir, "unreachable\n", "hash-object", "-w", "--stdin")
	base := filepath.Join(gitDir, "objects", "pack", "pack-"+gitCLI(t, gitDir, h+"\n", "pack-objects", "-q", "objects/pack/pack"))
	require.NoError(t, os.Remove(filepath.Join(gitDir, "objects", h[:2], h[2:])))
	data, err := os.ReadFile(base + ".pack")
	require.NoError(t, err)
	for i := 12; i < len(data)-20; i++ {
		data[i] = 0
	}
	require.NoError(t, os.WriteFile(base+".pack", data, 0o444))
	gitCLI(t, gitDir, "loose\n", "hash-object", "-w", "--stdin") // so that the small pack is merged
	var got porchapi.Repository
	require.Eventually(t, func() bool {
		require.Equal(t, 200, ts.doJSON("GET", repoPath+"/default", nil, &got))
		return meta.FindStatusCondition(got.Status.Conditions, ConditionMaintenanceFailed) != nil
	}, 30*time.Second, 50*time.Millisecond, "no MaintenanceFailed condition")
	c := meta.FindStatusCondition(got.Status.Conditions, ConditionMaintenanceFailed)
	require.Equal(t, metav1.ConditionTrue, c.Status)
	require.Equal(t, ReasonMaintenanceError, c.Reason)
	require.NotEmpty(t, c.Message)
	ready := meta.FindStatusCondition(got.Status.Conditions, porchapi.RepositoryReady)
	require.Equal(t, metav1.ConditionTrue, ready.Status, ready.Message)

	for _, ext := range []string{".pack", ".idx"} {
		require.NoError(t, os.Remove(base+ext))
	}
	require.Eventually(t, func() bool {
		require.Equal(t, 200, ts.doJSON("GET", repoPath+"/default", nil, &got))
		return meta.FindStatusCondition(got.Status.Conditions, ConditionMaintenanceFailed) == nil
	}, 30*time.Second, 50*time.Millisecond, "MaintenanceFailed stays after a run succeeded")
	gitCLI(t, gitDir, "", "fsck", "--strict", "--no-dangling")
}
