package fnruntime_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func TestResolveImageNames(t *testing.T) {
	r := fnruntime.NewRegistry(nil)
	for _, img := range []string{
		"ghcr.io/kptdev/krm-functions-catalog/set-labels:latest",
		"gcr.io/kpt-fn/set-labels:v0.1",
		"set-labels",
		"ghcr.io/kptdev/krm-functions-catalog/set-labels@sha256:0000",
	} {
		if _, err := r.Resolve(context.Background(), pipeline.Step{Image: img}); err != nil {
			t.Errorf("%s: %v", img, err)
		}
	}
	_, err := r.Resolve(context.Background(), pipeline.Step{Image: "example.com/unknown:v1"})
	var nf *fnruntime.NotFoundError
	if !errors.Is(err, pipeline.ErrNotFound) || !errors.As(err, &nf) {
		t.Errorf("unknown image: %v", err)
	}
}

func TestAllowDeny(t *testing.T) {
	r := fnruntime.NewRegistry(&fnruntime.Options{Allow: []string{"set-*"}, Deny: []string{"set-annotations"}})
	ctx := context.Background()
	if _, err := r.Resolve(ctx, pipeline.Step{Image: "set-labels:v1"}); err != nil {
		t.Errorf("allowed: %v", err)
	}
	for _, img := range []string{"set-annotations", "no-op"} {
		if _, err := r.Resolve(ctx, pipeline.Step{Image: img}); !errors.Is(err, pipeline.ErrNotAllowed) {
			t.Errorf("%s: want ErrNotAllowed, got %v", img, err)
		}
	}
}

func TestExecGating(t *testing.T) {
	ctx := context.Background()
	_, err := fnruntime.NewRegistry(nil).Resolve(ctx, pipeline.Step{Exec: "sed -e s/a/b/"})
	if !errors.Is(err, pipeline.ErrNotAllowed) || !strings.Contains(err.Error(), "--allow-exec") {
		t.Errorf("exec without AllowExec: %v", err)
	}
	_, err = fnruntime.NewRegistry(&fnruntime.Options{AllowExec: true, ExecAllow: []string{"/bin/cat"}}).Resolve(ctx, pipeline.Step{Exec: "sed"})
	if !errors.Is(err, pipeline.ErrNotAllowed) {
		t.Errorf("exec outside allow list: %v", err)
	}
}

func TestExecFunction(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: foo\n")}}
	ctx := context.Background()
	sed := &fnruntime.ExecFunction{Path: "sed", Args: []string{"-e", "s/foo/bar/"}}
	if err := sed.Run(ctx, rl); err != nil {
		t.Fatal(err)
	}
	if rl.Items[0].GetName() != "bar" {
		t.Errorf("name %q", rl.Items[0].GetName())
	}
	fail := &fnruntime.ExecFunction{Path: sh, Args: []string{"-c", "cat >/dev/null; echo broken >&2; exit 3"}}
	err = fail.Run(ctx, rl)
	var fe *pipeline.FunctionError
	if !errors.As(err, &fe) || fe.ExitCode != 3 || fe.Stderr != "broken\n" {
		t.Errorf("failure: %#v", err)
	}
	slow := &fnruntime.ExecFunction{Path: sh, Args: []string{"-c", "sleep 10"}, Timeout: 100 * time.Millisecond}
	start := time.Now()
	if err := slow.Run(ctx, rl); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("timeout not enforced: %v after %v", err, time.Since(start))
	}
	big := &fnruntime.ExecFunction{Path: sh, Args: []string{"-c", "cat >/dev/null; yes | head -c 100000"}, MaxOutput: 1000}
	if err := big.Run(ctx, rl); !errors.Is(err, fnruntime.ErrOutputTooLarge) {
		t.Errorf("output cap: %v", err)
	}
}

func TestSetLabelsWithoutConfigFails(t *testing.T) {
	fn := fnruntime.Builtins()["set-labels"]
	rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: foo\n")}}
	err := fn.Run(context.Background(), rl)
	var fe *pipeline.FunctionError
	if !errors.As(err, &fe) || fe.ExitCode != 1 || len(rl.Results) != 1 || rl.Results[0].Message != "`FunctionConfig` is not given" {
		t.Fatalf("err %v results %v", err, rl.Results)
	}
}

func TestContainerEngineMissing(t *testing.T) {
	r := fnruntime.NewRegistry(&fnruntime.Options{Containers: true, ContainerEngine: "no-such-engine-binary"})
	_, err := r.Resolve(context.Background(), pipeline.Step{Image: "example.com/fn:v1"})
	if !errors.Is(err, fnruntime.ErrNoContainerEngine) {
		t.Fatalf("want ErrNoContainerEngine, got %v", err)
	}
}

// TestContainerFunction runs a real image; it needs a working engine and the
// image already pulled (tests never use the network).
func TestContainerFunction(t *testing.T) {
	engine, err := fnruntime.FindContainerEngine("")
	if err != nil {
		t.Skip("no container engine: ", err)
	}
	if out, err := exec.Command(engine, "image", "inspect", "ghcr.io/kptdev/krm-functions-catalog/no-op:latest").CombinedOutput(); err != nil {
		t.Skipf("container engine not usable or image not present locally: %v: %s", err, strings.TrimSpace(string(out)))
	}
	fn := &fnruntime.ContainerFunction{Engine: engine, Image: "ghcr.io/kptdev/krm-functions-catalog/no-op:latest", Timeout: time.Minute}
	rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")}}
	if err := fn.Run(context.Background(), rl); err != nil {
		t.Fatal(err)
	}
	if len(rl.Items) != 1 {
		t.Fatalf("items: %d", len(rl.Items))
	}
}
