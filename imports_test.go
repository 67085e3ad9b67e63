package cad_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/configasdata/cad"

type listedPackage struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
}

// goList returns the non-test packages of the module with their direct
// imports and transitive dependencies.
func goList(t *testing.T) []listedPackage {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []listedPackage
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func hasPrefixAny(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// Libraries no contract package may depend on, even transitively.
var backendLibs = []string{
	"github.com/go-git/go-git/v5", "github.com/go-git/go-billy/v5",
	"github.com/google/go-containerregistry",
	"github.com/google/cel-go", "cel.dev/expr",
	"k8s.io/apimachinery", "k8s.io/client-go", "k8s.io/apiserver",
	"google.golang.org/grpc", "go.opentelemetry.io", "github.com/spf13/cobra",
}

// Libraries the library module never depends on: they belong in examples/
// or adapter modules.
var heavyLibs = []string{
	"k8s.io/client-go", "k8s.io/apiserver", "sigs.k8s.io/controller-runtime",
	"google.golang.org/grpc", "go.opentelemetry.io/otel/sdk", "github.com/spf13/cobra",
	"github.com/lib/pq", "github.com/jackc/pgx", "github.com/go-sql-driver/mysql", "github.com/mattn/go-sqlite3",
}

// The direct imports each contract package may have besides the standard
// library.
var contractImports = map[string][]string{
	module + "/revision":              {"sigs.k8s.io/kustomize/kyaml"},
	module + "/repository":            {module + "/revision"},
	module + "/deps":                  {module + "/revision", module + "/repository"},
	module + "/pipeline":              {module + "/revision", module + "/internal", "sigs.k8s.io/kustomize/kyaml"},
	module:                            {module + "/revision", module + "/repository", module + "/pipeline", module + "/engine", module + "/variant"},
	module + "/pipeline/pipelinetest": {module + "/revision", module + "/pipeline", "sigs.k8s.io/kustomize/kyaml"},
	module + "/fnruntime":             {module + "/revision", module + "/pipeline", module + "/internal", "sigs.k8s.io/kustomize/kyaml", "go.starlark.net", "github.com/Masterminds/semver/v3"},
	module + "/fnruntime/celfn":       {module + "/revision", module + "/pipeline", "sigs.k8s.io/kustomize/kyaml", "github.com/google/cel-go"},
	// live computes the status of a package's objects in a cluster with
	// kstatus, which works on apimachinery's unstructured objects; the
	// cluster itself is reached through an interface the caller
	// implements, so no client library is allowed here.
	module + "/live": {module + "/revision", module + "/repository", module + "/pipeline", "sigs.k8s.io/kustomize/kyaml",
		"k8s.io/apimachinery", "sigs.k8s.io/cli-utils/pkg/kstatus", "golang.org/x/sync"},
}

// Packages that must stay free of backend libraries, transitively.
var backendFree = []string{
	module, module + "/revision", module + "/repository", module + "/pipeline",
	module + "/engine", module + "/repository/memrepo", module + "/deps",
	module + "/fnruntime", module + "/pipeline/pipelinetest",
}

// Storage libraries, which only backends use.
var storageLibs = []string{
	"github.com/go-git/go-git/v5", "github.com/go-git/go-billy/v5",
	"github.com/google/go-containerregistry",
}

// Packages that may use CEL and the Kubernetes API machinery (their
// specs are Kubernetes shapes) but no storage library.
var storageFree = []string{module + "/variant", module + "/live"}

func TestImportRules(t *testing.T) {
	for _, p := range goList(t) {
		if allowed, ok := contractImports[p.ImportPath]; ok {
			for _, imp := range p.Imports {
				if !isStd(imp) && !hasPrefixAny(imp, allowed) {
					t.Errorf("%s imports %s; a contract package may import only the standard library and %v", p.ImportPath, imp, allowed)
				}
			}
		}
		for _, free := range backendFree {
			if p.ImportPath != free {
				continue
			}
			for _, dep := range p.Deps {
				if hasPrefixAny(dep, backendLibs) {
					t.Errorf("%s depends on backend library %s", p.ImportPath, dep)
				}
			}
		}
		for _, free := range storageFree {
			if p.ImportPath != free && !strings.HasPrefix(p.ImportPath, free+"/") {
				continue
			}
			for _, dep := range p.Deps {
				if hasPrefixAny(dep, storageLibs) {
					t.Errorf("%s depends on storage library %s", p.ImportPath, dep)
				}
			}
		}
		for _, dep := range p.Deps {
			if hasPrefixAny(dep, heavyLibs) {
				t.Errorf("%s depends on %s, which must stay out of the library module", p.ImportPath, dep)
			}
		}
		if strings.HasSuffix(p.ImportPath, "/util") || strings.HasSuffix(p.ImportPath, "/common") {
			t.Errorf("package %s: no util or common packages", p.ImportPath)
		}
	}
}

// The root module's go.mod must not require the heavy libraries, even as
// indirect requirements, so that users never inherit them. (kyaml's own
// go.mod names cobra; module graph pruning keeps it out of ours as long as
// no package we build needs it.)
func TestGoModLean(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command("go", "mod", "edit", "-json").Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var gomod struct {
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(out, &gomod); err != nil {
		t.Fatal(err)
	}
	for _, r := range gomod.Require {
		if hasPrefixAny(r.Path, heavyLibs) {
			t.Errorf("the library's go.mod requires %s %s", r.Path, r.Version)
		}
	}
}
