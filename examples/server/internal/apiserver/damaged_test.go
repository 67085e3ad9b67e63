package apiserver

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/repository/repotest"
)

// A damaged repository is served, not hidden: beside a tag naming a
// missing object, the good package's revisions are listed, and the
// Repository stays Ready with a Damaged condition naming the tag.
func TestDamagedRepositoryServed(t *testing.T) {
	ts := startServer(t, "", nil)
	dir := repotest.DamagedGitRepo(t)
	repo := map[string]any{"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
		"metadata": map[string]any{"name": "damaged"},
		"spec":     map[string]any{"type": "git", "git": map[string]any{"repo": dir, "branch": "main"}}}
	require.Equal(t, 201, ts.doJSON("POST", repoPath, repo, nil))
	_, data := listBody(t, ts, prPath, "")
	var names []string
	for _, it := range decodeListed(t, data).Items {
		if strings.HasPrefix(it.Metadata.Name, "damaged.") {
			names = append(names, it.Metadata.Name)
		}
	}
	slices.Sort(names)
	// The tags whose Kptfiles do not parse are served as before, without
	// what their Kptfile would say; the missing tag is not.
	require.Equal(t, []string{"damaged.bomb.v1", "damaged.good.main", "damaged.good.v1", "damaged.unclosed.v1"}, names)
	var got porchapi.Repository
	require.Eventually(t, func() bool {
		require.Equal(t, 200, ts.doJSON("GET", repoPath+"/damaged", nil, &got))
		return meta.FindStatusCondition(got.Status.Conditions, ConditionDamaged) != nil
	}, 10*time.Second, 50*time.Millisecond, "no Damaged condition")
	ready := meta.FindStatusCondition(got.Status.Conditions, porchapi.RepositoryReady)
	require.Equal(t, metav1.ConditionTrue, ready.Status, ready.Message)
	require.Contains(t, ready.Message, ConditionDamaged)
	d := meta.FindStatusCondition(got.Status.Conditions, ConditionDamaged)
	require.Equal(t, metav1.ConditionTrue, d.Status)
	require.Equal(t, ReasonDamagedRevisions, d.Reason)
	require.Contains(t, d.Message, repotest.DamagedMissingRef)
	// The good package reads in full.
	var pr porchapi.PackageRevision
	require.Equal(t, 200, ts.doJSON("GET", prPath+"/damaged.good.v1", nil, &pr))
	require.Equal(t, 1, pr.Spec.Revision)
}
