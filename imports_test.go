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
// or adapter modules (Helm's SDK in module helmfn). README.md's
// "Compatibility" promises this.
var heavyLibs = []string{
	"k8s.io/client-go", "k8s.io/apiserver", "sigs.k8s.io/controller-runtime", "helm.sh/helm",
	"google.golang.org/grpc", "go.opentelemetry.io/otel/sdk", "github.com/spf13/cobra",
	"github.com/lib/pq", "github.com/jackc/pgx", "github.com/go-sql-driver/mysql", "github.com/mattn/go-sqlite3",
}

// The direct imports each contract package may have besides the standard
// library.
var contractImports = map[string][]string{
	module + "/revision":              {"sigs.k8s.io/kustomize/kyaml", module + "/internal/imageref", module + "/internal/yamlmemo", module + "/internal/yamlstyle"},
	module + "/repository":            {module + "/revision"},
	module + "/deps":                  {module + "/revision", module + "/repository"},
	module + "/pipeline":              {module + "/revision", module + "/internal", "sigs.k8s.io/kustomize/kyaml"},
	module:                            {module + "/revision", module + "/repository", module + "/pipeline", module + "/engine", module + "/variant"},
	module + "/pipeline/pipelinetest": {module + "/revision", module + "/pipeline", "sigs.k8s.io/kustomize/kyaml"},
	module + "/fnruntime":             {module + "/revision", module + "/pipeline", module + "/internal", "sigs.k8s.io/kustomize/kyaml", "go.starlark.net", "github.com/Masterminds/semver/v3"},
	module + "/fnruntime/celfn":       {module + "/revision", module + "/pipeline", module + "/internal", "sigs.k8s.io/kustomize/kyaml", "github.com/google/cel-go"},
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

// layers ranks the module's packages, lowest first: a package may import
// a package of the module only from a lower layer, or one below itself
// (its own internal mechanism, such as repository/gitrepo/internal/...).
// So no import runs up: a backend never imports the engine, variant or a
// function runtime; a contract never imports a backend. A package is
// ranked by the longest entry that is it or one of its parents; a package
// with no entry fails the test, so a new one is placed on purpose.
//
//	0  leaf mechanism that imports nothing of the module: internal/lru
//	1  leaf mechanism over it at most: internal/imageref,
//	   internal/yamlmemo (a bounded lru), internal/yamlstyle
//	2  revision: the data model
//	3  other shared mechanism in internal/
//	4  the contracts: repository, pipeline; internal/update (three-way
//	   merge); the git backend's temporary files (gitrepo/internal/tmpfile),
//	   below its storage mechanisms
//	5  the git backend's storage mechanisms, below gitrepo and unaware of
//	   it: packs and objects, refs and their transactions
//	6  the git backend's persistent indexes, over its objects and locks
//	7  implementations of the contracts: the backends and their test kit,
//	   the function runtimes (and internal/kpttestfns, kpt's test
//	   functions), pipelinetest, deps
//	8  engine, live: logic over any backend and runtime
//	   fnruntime/wasmfn: a function runtime plugged into fnruntime
//	   (Options.Wasm) through its WasmRuntime contract
//	9  variant: syncs over an engine
//	10 presets over runtimes (fnruntime/stdfn), the root package cad
var layers = map[string]int{
	"internal/lru":          0,
	"internal/imageref":     1,
	"internal/yamlmemo":     1,
	"internal/yamlstyle":    1,
	"revision":              2,
	"internal":              3,
	"internal/update":       4,
	"repository":            4,
	"pipeline":              4,
	"repository/memrepo":    7,
	"repository/gitrepo":    7,
	"repository/ocirepo":    7,
	"repository/repotest":   7,
	"pipeline/pipelinetest": 7,
	"fnruntime":             7,
	"internal/kpttestfns":   7, // kpt's test functions, for conformance tests
	"deps":                  7,
	"engine":                8,
	"live":                  8,
	"fnruntime/wasmfn":      8, // over fnruntime's WasmRuntime contract
	"variant":               9,
	"fnruntime/stdfn":       10,
	"":                      10,

	// the git backend's rooms (repository/gitrepo/internal/...)
	"repository/gitrepo/internal/gitobj":   5,
	"repository/gitrepo/internal/refstore": 5,
	"repository/gitrepo/internal/index":    6,
	"repository/gitrepo/internal/tmpfile":  4, // the one rule for temporary files
}

// layerOf returns the layer of the module package path (relative to the
// module, "" for the root) and the entry that ranked it.
func layerOf(rel string) (int, string, bool) {
	for p := rel; ; {
		if l, ok := layers[p]; ok {
			return l, p, true
		}
		if p == "" {
			return 0, "", false
		}
		i := strings.LastIndex(p, "/")
		if i < 0 {
			p = ""
		} else {
			p = p[:i]
		}
	}
}

// relPath returns path relative to the module ("" for the root) and
// whether it is in the module.
func relPath(path string) (string, bool) {
	if path == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// TestNoUpwardImports enforces layers on every non-test import.
func TestNoUpwardImports(t *testing.T) {
	for _, p := range goList(t) {
		from, ok := relPath(p.ImportPath)
		if !ok {
			continue
		}
		fl, fentry, ok := layerOf(from)
		if !ok || (fentry == "" && from != "") {
			t.Errorf("package %s has no layer; rank it in layers", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			to, ok := relPath(imp)
			if !ok {
				continue
			}
			if from != "" && strings.HasPrefix(to, from+"/") {
				continue // its own mechanism, below it
			}
			tl, tentry, ok := layerOf(to)
			if !ok || (tentry == "" && to != "") {
				t.Errorf("package %s has no layer; rank it in layers", imp)
				continue
			}
			if tl >= fl {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only from lower layers", p.ImportPath, fl, imp, tl)
			}
		}
	}
}

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
