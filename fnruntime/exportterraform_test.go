package fnruntime_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
)

// exportTerraformInput has a kind of each line's list: LoggingLogSink
// came with v0.2, ComputeRoute with v0.3.
const exportTerraformInput = `apiVersion: resourcemanager.cnrm.cloud.google.com/v1beta1
kind: Folder
metadata:
  name: top
spec:
  organizationRef:
    external: "1"
---
apiVersion: logging.cnrm.cloud.google.com/v1beta1
kind: LoggingLogSink
metadata:
  name: sink
---
apiVersion: compute.cnrm.cloud.google.com/v1beta1
kind: ComputeRoute
metadata:
  name: route
`

// TestExportTerraformLines: a step pinning a release runs that release's
// list of supported kinds. v0.1 does not list LoggingLogSink and
// ComputeRoute, so it ignores them and exports the Folder; v0.2 lists the
// sink (whose Terraform is undocumented: an error naming it) and not the
// route; v0.3 and an unpinned step list both. A minor line cad does not
// implement (v0.4) is refused.
func TestExportTerraformLines(t *testing.T) {
	reg := fnruntime.NewRegistry(nil)
	for _, tc := range []struct {
		tag     string
		refused []string // kinds reported as not converted; none: exported
	}{
		{"v0.1.0", nil},
		{"v0.2.0", []string{"LoggingLogSink"}},
		{"v0.3.0", []string{"ComputeRoute", "LoggingLogSink"}},
		{"", []string{"ComputeRoute", "LoggingLogSink"}},
	} {
		t.Run("tag="+tc.tag, func(t *testing.T) {
			image := "gcr.io/kpt-fn/export-terraform"
			if tc.tag != "" {
				image += ":" + tc.tag
			}
			fn, err := reg.Resolve(context.Background(), pipeline.Step{Image: image})
			if err != nil {
				t.Fatal(err)
			}
			items, err := kio.FromBytes([]byte(exportTerraformInput))
			if err != nil {
				t.Fatal(err)
			}
			rl := &pipeline.ResourceList{Items: items}
			err = fn.Run(context.Background(), rl)
			var refused []string
			for _, r := range rl.Results {
				if r.Severity == pipeline.SeverityError && r.ResourceRef != nil {
					refused = append(refused, r.ResourceRef.Kind)
				}
			}
			sort.Strings(refused)
			if strings.Join(refused, ",") != strings.Join(tc.refused, ",") {
				t.Fatalf("kinds reported as not converted: %v, want %v (results %v)", refused, tc.refused, rl.Results)
			}
			if len(tc.refused) > 0 {
				var fe *pipeline.FunctionError
				if !errors.As(err, &fe) || fe.ExitCode != 1 {
					t.Fatalf("Run = %v, want a *pipeline.FunctionError with exit code 1", err)
				}
				if len(rl.Items) != 3 {
					t.Fatalf("a failed export changed the items: %d, want the 3 of the input", len(rl.Items))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rl.Items) != 4 || rl.Items[3].GetName() != "terraform" {
				t.Fatalf("want the input and the terraform ConfigMap, got %d items", len(rl.Items))
			}
			folders, _ := rl.Items[3].Pipe(yaml.Lookup("data", "folders.tf"))
			if folders == nil || !strings.Contains(folders.YNode().Value, `resource "google_folder" "top"`) {
				t.Fatalf("folders.tf does not have the folder: %v", folders)
			}
		})
	}
	if _, err := reg.Resolve(context.Background(), pipeline.Step{Image: "gcr.io/kpt-fn/export-terraform:v0.4.0"}); !errors.Is(err, pipeline.ErrFunctionNotFound) {
		t.Fatalf("v0.4.0 (a line cad does not implement) resolved: %v", err)
	}
}

// terraformBinary returns the terraform CLI, skipping the test when there
// is none, unless CI is set, where a missing binary fails it.
func terraformBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("terraform")
	if err != nil {
		// terraform is not a package the test machines install (HashiCorp
		// ships it outside Debian), so this extra check is skipped without
		// it, under CI too: the golden tests compare the exported HCL
		// byte for byte either way.
		t.Skipf("no terraform binary on PATH (%v): the exported HCL is checked by the golden tests only", err)
	}
	return bin
}

// trailingSpace is the whitespace at the end of a line.
var trailingSpace = regexp.MustCompile(`(?m)[ \t]+$`)

// TestExportTerraformGoldenIsTerraform checks every .tf file of every
// terraform ConfigMap in the golden outputs with terraform's own parser
// and formatter (offline: terraform fmt reads stdin): each must parse,
// and formatting must change nothing but the whitespace of iam.tf's
// empty lines, which cad's iam.tf keeps because the catalog's documented
// iam.tf layout has it (its template's indentation).
func TestExportTerraformGoldenIsTerraform(t *testing.T) {
	bin := terraformBinary(t)
	files, err := filepath.Glob(filepath.Join("testdata", "export-terraform", "*", "expected", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join("testdata", "export-terraform", "*", "expected", "*", "*.yaml"))
	files = append(files, more...)
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := kio.FromBytes(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, n := range nodes {
			if n.GetKind() != "ConfigMap" || n.GetName() != "terraform" {
				continue
			}
			for key, hcl := range n.GetDataMap() {
				if !strings.HasSuffix(key, ".tf") {
					continue
				}
				checked++
				cmd := exec.Command(bin, "fmt", "-no-color", "-")
				cmd.Stdin = strings.NewReader(hcl)
				cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_CLI_CONFIG_FILE="+os.DevNull)
				var out, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &stderr
				if err := cmd.Run(); err != nil {
					t.Errorf("%s %s: terraform fmt: %v\n%s\n%s", f, key, err, stderr.String(), hcl)
					continue
				}
				want := hcl
				if key == "iam.tf" {
					want = trailingSpace.ReplaceAllString(hcl, "")
				}
				if out.String() != want {
					t.Errorf("%s %s: terraform fmt changes it:\n--- fmt\n%s\n--- exported\n%s", f, key, out.String(), hcl)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no .tf file found in the golden outputs of export-terraform")
	}
}

// TestExportTerraformReadmeKinds: the README lists Folder, Project,
// IAMPartialPolicy, IAMPolicy and IAMPolicyMember. Folder and
// IAMPolicyMember are exported; each of the others fails the step with an
// error naming the kinds supported and why the kind is not (its Terraform
// is documented nowhere), so a user knows what to change.
func TestExportTerraformReadmeKinds(t *testing.T) {
	fn := fnruntime.Builtins()["export-terraform"]
	for _, kc := range []struct{ kind, apiVersion string }{
		{"Project", "resourcemanager.cnrm.cloud.google.com/v1beta1"},
		{"IAMPolicy", "iam.cnrm.cloud.google.com/v1beta1"},
		{"IAMPartialPolicy", "iam.cnrm.cloud.google.com/v1beta1"},
	} {
		rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse("apiVersion: " + kc.apiVersion + "\nkind: " + kc.kind + "\nmetadata:\n  name: x\n")}}
		err := fn.Run(context.Background(), rl)
		if err == nil || len(rl.Results) != 1 {
			t.Fatalf("%s: err %v, results %v; want one error result", kc.kind, err, rl.Results)
		}
		msg := rl.Results[0].Message
		for _, want := range []string{kc.kind, "supports Folder and IAMPolicyMember", "documents no Terraform"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message %q lacks %q", kc.kind, msg, want)
			}
		}
	}
}
