package fnruntime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/pipeline"
)

// fakeEngineEnv, set in a process's environment, makes this test binary
// act as a container engine (see TestMain): fakeEngineMain instead of the
// tests. fakeEngineLogEnv names the file it records its invocation in.
const (
	fakeEngineEnv    = "CAD_FNRUNTIME_FAKE_ENGINE"
	fakeEngineLogEnv = "CAD_FNRUNTIME_FAKE_ENGINE_LOG"
)

// fakeInvocation is what the fake engine was asked to run, parsed as
// docker run parses its command line.
type fakeInvocation struct {
	Args        []string          // the whole command line after the program
	Rm, Stdin   bool              // --rm, -i
	Network     string            // --network
	User        string            // --user
	SecurityOpt []string          // --security-opt
	Env         map[string]string // -e, resolved as docker resolves it
	Mounts      []map[string]string
	Image       string
}

// fakeEngineMain is a docker-compatible engine for one command, `run`
// with the flags docker documents for the options cad passes (--rm, -i,
// --network, --user, --security-opt, -e, --mount), each in its
// "--flag value" and "--flag=value" forms. It rejects what docker rejects
// among them (another command, an unknown flag, a flag without its value,
// a mount without type or target, no image) with docker's exit code 125.
// The "container" it runs is a function: the ResourceList on stdin comes
// back on stdout with each item annotated with the image, the network
// and the container's environment; an image whose name contains "fail"
// instead reports an error result and exits 1, as a failing function
// does. It records the invocation, as JSON, in the file $fakeEngineLogEnv.
func fakeEngineMain(args []string) int {
	bad := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "docker: "+format+"\nSee 'docker run --help'.\n", a...)
		return 125
	}
	if len(args) == 0 || args[0] != "run" {
		return bad("fake engine: only run is implemented, got %q", args)
	}
	inv := fakeInvocation{Args: args, Env: map[string]string{}}
	rest := args[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		flag, val, hasVal := strings.Cut(rest[0], "=")
		rest = rest[1:]
		takes := map[string]bool{"--network": true, "--user": true, "-u": true, "--security-opt": true, "-e": true, "--env": true, "--mount": true}
		if takes[flag] && !hasVal {
			if len(rest) == 0 {
				return bad("flag needs an argument: %s", flag)
			}
			val, rest = rest[0], rest[1:]
		}
		switch flag {
		case "--rm":
			inv.Rm = true
		case "-i", "--interactive":
			inv.Stdin = true
		case "--network":
			inv.Network = val
		case "--user", "-u":
			inv.User = val
		case "--security-opt":
			inv.SecurityOpt = append(inv.SecurityOpt, val)
		case "-e", "--env":
			k, v, ok := strings.Cut(val, "=")
			if !ok {
				v, ok = os.LookupEnv(k)
			}
			if ok {
				inv.Env[k] = v
			}
		case "--mount":
			m := map[string]string{}
			for _, kv := range strings.Split(val, ",") {
				k, v, _ := strings.Cut(kv, "=")
				m[k] = v
			}
			if m["type"] == "" || (m["dst"] == "" && m["target"] == "" && m["destination"] == "") {
				return bad("invalid argument %q for \"--mount\" flag: type and target are required", val)
			}
			inv.Mounts = append(inv.Mounts, m)
		default:
			return bad("unknown flag: %s", flag)
		}
	}
	if len(rest) == 0 {
		return bad("\"docker run\" requires at least 1 argument")
	}
	inv.Image = rest[0]
	if len(rest) > 1 {
		return bad("fake engine: cad passes no command after the image, got %q", rest[1:])
	}
	if data, err := json.Marshal(inv); err == nil && os.Getenv(fakeEngineLogEnv) != "" {
		_ = os.WriteFile(os.Getenv(fakeEngineLogEnv), data, 0o600)
	}
	if !inv.Stdin {
		// Without -i docker gives the container no stdin.
		return fakeFunction(inv, strings.NewReader(""))
	}
	return fakeFunction(inv, os.Stdin)
}

// fakeFunction is the fake engine's container.
func fakeFunction(inv fakeInvocation, stdin io.Reader) int {
	in, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rl, err := pipeline.ParseResourceList(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake function: stdin is not a ResourceList:", err)
		return 1
	}
	code := 0
	if strings.Contains(inv.Image, "fail") {
		rl.Results = append(rl.Results, &pipeline.Result{Message: "the fake function fails", Severity: pipeline.SeverityError})
		fmt.Fprintln(os.Stderr, "fake function failure")
		code = 1
	} else {
		for _, it := range rl.Items {
			set := map[string]string{"fake.cad.dev/image": inv.Image, "fake.cad.dev/network": inv.Network}
			for k, v := range inv.Env {
				set["fake.cad.dev/env."+k] = v
			}
			for k, v := range set {
				if err := it.PipeE(yaml.SetAnnotation(k, v)); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 1
				}
			}
		}
	}
	out, err := rl.Encode()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := os.Stdout.Write(out); err != nil {
		return 1
	}
	return code
}

// fakeEngine returns the path of the fake engine (this test binary) and
// the file it will record its invocation in, and sets the environment
// that makes the binary act as one (the engine's environment is this
// process's unless a test passes its own).
func fakeEngine(t *testing.T) (path, log string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log = filepath.Join(t.TempDir(), "invocation.json")
	t.Setenv(fakeEngineEnv, "1")
	t.Setenv(fakeEngineLogEnv, log)
	return exe, log
}

func readInvocation(t *testing.T, log string) fakeInvocation {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("the fake engine was not run: %v", err)
	}
	var inv fakeInvocation
	if err := json.Unmarshal(data, &inv); err != nil {
		t.Fatal(err)
	}
	return inv
}

// TestContainerFunctionFakeEngine runs ContainerFunction against a fake
// docker-compatible engine (this test binary, see fakeEngineMain): it
// checks the command line cad gives the engine, exactly and as docker
// parses it (run, --rm, -i, no network, user nobody,
// no-new-privileges, the -e and --mount options, the image last), that
// the function gets the ResourceList on stdin and its stdout becomes the
// result, and that a failing function's exit code, stderr and results
// reach the caller. It needs no daemon, so it runs everywhere, CI included.
func TestContainerFunctionFakeEngine(t *testing.T) {
	engine, log := fakeEngine(t)
	t.Setenv("CAD_FAKE_FROM_ENGINE", "passed through")
	const image = "example.com/fns/fake-fn:v1"
	fn := &fnruntime.ContainerFunction{Engine: engine, Image: image, Timeout: time.Minute,
		FunctionEnv: []string{"GREETING=hello", "CAD_FAKE_FROM_ENGINE", "CAD_FAKE_UNSET"},
		Mounts:      []string{"type=bind,src=/data,dst=/data,readonly"}}
	rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")}}
	if err := fn.Run(context.Background(), rl); err != nil {
		t.Fatal(err)
	}
	inv := readInvocation(t, log)
	want := []string{"run", "--rm", "-i", "--network", "none", "--user", "nobody", "--security-opt=no-new-privileges",
		"-e", "GREETING=hello", "-e", "CAD_FAKE_FROM_ENGINE", "-e", "CAD_FAKE_UNSET",
		"--mount", "type=bind,src=/data,dst=/data,readonly", image}
	if !reflect.DeepEqual(inv.Args, want) {
		t.Fatalf("engine command line\n got %q\nwant %q", inv.Args, want)
	}
	if !inv.Rm || !inv.Stdin || inv.Network != "none" || inv.User != "nobody" || !reflect.DeepEqual(inv.SecurityOpt, []string{"no-new-privileges"}) {
		t.Errorf("parsed as docker would: %+v", inv)
	}
	if len(rl.Items) != 1 {
		t.Fatalf("items: %d", len(rl.Items))
	}
	a := rl.Items[0].GetAnnotations()
	for k, v := range map[string]string{
		"fake.cad.dev/image": image, "fake.cad.dev/network": "none",
		"fake.cad.dev/env.GREETING": "hello", "fake.cad.dev/env.CAD_FAKE_FROM_ENGINE": "passed through",
	} {
		if a[k] != v {
			t.Errorf("annotation %s = %q, want %q (annotations %v)", k, a[k], v, a)
		}
	}
	if _, ok := a["fake.cad.dev/env.CAD_FAKE_UNSET"]; ok {
		t.Errorf("a name-only -e of a variable the engine does not have reached the container: %v", a)
	}

	// A failing function: exit code, stderr and its results.
	fail := &fnruntime.ContainerFunction{Engine: engine, Image: "example.com/fns/fail:v1", Timeout: time.Minute}
	rl = &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")}}
	err := fail.Run(context.Background(), rl)
	var fe *pipeline.FunctionError
	if !errors.As(err, &fe) || fe.ExitCode != 1 || !strings.Contains(fe.Stderr, "fake function failure") {
		t.Fatalf("failing function: %v", err)
	}
	if len(rl.Results) != 1 || rl.Results[0].Message != "the fake function fails" {
		t.Errorf("the failing function's results did not reach the caller: %v", rl.Results)
	}
}

// TestRegistryContainersFakeEngine: with Options.Containers and
// Options.ContainerEngine naming another docker-compatible binary (as a
// path), an image without a Go implementation, and a catalog image pinned
// to a release cad does not implement, run in that engine with the
// registry's network, environment and mounts; the engine's own
// environment is this process's.
func TestRegistryContainersFakeEngine(t *testing.T) {
	engine, log := fakeEngine(t)
	reg := fnruntime.NewRegistry(&fnruntime.Options{Containers: true, ContainerEngine: engine, ContainerNetwork: true,
		ContainerEnv: []string{"MODE=test"}, ContainerMounts: []string{"type=tmpfs,dst=/tmp"}})
	for _, image := range []string{"example.com/fns/custom:v2", "gcr.io/kpt-fn/set-namespace:v0.1.4"} {
		fn, err := reg.Resolve(context.Background(), pipeline.Step{Image: image})
		if err != nil {
			t.Fatalf("%s: %v", image, err)
		}
		rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")}}
		if err := fn.Run(context.Background(), rl); err != nil {
			t.Fatalf("%s: %v", image, err)
		}
		inv := readInvocation(t, log)
		want := []string{"run", "--rm", "-i", "--network", "host", "--user", "nobody", "--security-opt=no-new-privileges",
			"-e", "MODE=test", "--mount", "type=tmpfs,dst=/tmp", image}
		if !reflect.DeepEqual(inv.Args, want) {
			t.Errorf("%s: engine command line\n got %q\nwant %q", image, inv.Args, want)
		}
		if got := rl.Items[0].GetAnnotations()["fake.cad.dev/image"]; got != image {
			t.Errorf("%s: the item did not go through the engine (image annotation %q)", image, got)
		}
	}
	// A catalog image cad implements stays in-process: no engine run.
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	fn, err := reg.Resolve(context.Background(), pipeline.Step{Image: "gcr.io/kpt-fn/set-namespace:v0.4.1", ConfigMap: map[string]string{"namespace": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fn.(*fnruntime.ContainerFunction); ok {
		t.Fatal("an implemented catalog release resolved to the container engine")
	}
}

// TestFakeEngineRejectsWhatDockerRejects: the fake engine is strict, so
// the tests above would notice cad passing a malformed command line.
func TestFakeEngineRejectsWhatDockerRejects(t *testing.T) {
	engine, _ := fakeEngine(t)
	for _, args := range [][]string{
		{"--network", "none"},              // no image
		{"--frobnicate", "img"},            // unknown flag
		{"--mount", "src=/a", "img"},       // mount without type and target
		{"--rm", "-i", "img", "extra-arg"}, // a command after the image
		{"--network"},                      // flag without its value
	} {
		fn := &fnruntime.ExecFunction{Path: engine, Args: append([]string{"run"}, args...), Env: os.Environ()}
		_, err := fn.RunStream(context.Background(), strings.NewReader(""), io.Discard)
		var fe *pipeline.FunctionError
		if !errors.As(err, &fe) || fe.ExitCode != 125 {
			t.Errorf("run %q: %v, want docker's exit code 125", args, err)
		}
	}
}

// TestRegistryContainerUser: Options.ContainerUser (what kpt's
// --as-current-user passes: "uid:gid") is the container's --user.
func TestRegistryContainerUser(t *testing.T) {
	engine, log := fakeEngine(t)
	reg := fnruntime.NewRegistry(&fnruntime.Options{Containers: true, ContainerEngine: engine, ContainerUser: "1000:1000"})
	fn, err := reg.Resolve(context.Background(), pipeline.Step{Image: "example.com/fns/custom:v2"})
	if err != nil {
		t.Fatal(err)
	}
	rl := &pipeline.ResourceList{Items: []*yaml.RNode{yaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")}}
	if err := fn.Run(context.Background(), rl); err != nil {
		t.Fatal(err)
	}
	if inv := readInvocation(t, log); inv.User != "1000:1000" {
		t.Errorf("container user %q, want 1000:1000 (args %q)", inv.User, inv.Args)
	}
}
