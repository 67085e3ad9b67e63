package revision_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/configasdata/cad/revision"
)

func TestPackageFileRoundTrip(t *testing.T) {
	p := revision.NewPackageFile("app")
	p.UpstreamLock = &revision.UpstreamLock{Type: revision.GitOrigin, Git: &revision.GitLock{Repo: "r", Directory: "d", Ref: "d/v1", Commit: "abc"}}
	data, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"apiVersion: cad.configasdata.dev/v1alpha1", "kind: Package", "name: app", "local-config", "commit: abc"} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("missing %q in\n%s", want, data)
		}
	}
	back, err := revision.ParsePackageFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Name != "app" || back.UpstreamLock.Git.Commit != "abc" {
		t.Fatalf("read back %+v", back)
	}
}

func TestPackageFileKeepsUnknownFieldsAndComments(t *testing.T) {
	src := `# the package
apiVersion: cad.configasdata.dev/v1alpha1
kind: Package
metadata:
  name: app # its name
spec:
  pipeline:
    mutators:
    - image: set-labels:v0.2
      condition: "true"
  readinessGates:
  - conditionType: Tested
`
	p, err := revision.ParsePackageFile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	same, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if string(same) != src {
		t.Fatalf("unchanged encode differs:\n%s", same)
	}
	p.Conditions = []revision.Condition{{Type: "Tested", Status: revision.ConditionTrue}}
	p.ReadinessGates = nil
	out, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{"# the package", "# its name", "condition: \"true\"", "status: \"True\""} {
		if !strings.Contains(s, want) {
			t.Fatalf("missing %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "readinessGates") {
		t.Fatalf("gates not removed:\n%s", s)
	}
	info, err := revision.InfoFromFiles(revision.MustFiles(map[string]string{revision.PackageFileName: s}))
	if err != nil || len(info.Conditions) != 1 {
		t.Fatalf("info %+v %v", info, err)
	}
}

func TestPackageFileInvalid(t *testing.T) {
	for _, src := range []string{"", "- a\n", "apiVersion: v1\nkind: ConfigMap\n", "apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nspec:\n  upstream: 3\n"} {
		if _, err := revision.ParsePackageFile([]byte(src)); !errors.Is(err, revision.ErrInvalid) {
			t.Errorf("%q: %v, want ErrInvalid", src, err)
		}
	}
}

func TestInfoKptfileWins(t *testing.T) {
	files := revision.MustFiles(map[string]string{
		revision.KptfileName:     "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\ninfo:\n  readinessGates:\n  - conditionType: FromKptfile\n",
		revision.PackageFileName: "apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nspec:\n  readinessGates:\n  - conditionType: FromCad\n",
	})
	info, err := revision.InfoFromFiles(files)
	if err != nil || len(info.ReadinessGates) != 1 || info.ReadinessGates[0].ConditionType != "FromKptfile" {
		t.Fatalf("info %+v %v", info, err)
	}
}
