// Command quickstart walks through cad's whole package flow on real git
// repositories. In a temporary directory it creates two bare repositories,
// "blueprints" and "deployments", opens them with the git backend, and
// with one engine it:
//
//  1. initialises a package in blueprints,
//  2. edits it: adds a Deployment and a Kptfile pipeline (set-labels), which
//     the engine renders on save,
//  3. proposes and approves it as revision 1,
//  4. clones it into deployments and specialises the clone (3 replicas),
//     then publishes that,
//  5. publishes v2 of the blueprint (a new image),
//  6. discovers that the clone can be upgraded, upgrades it with a
//     three-way merge (the local replicas and the new image both survive)
//     and publishes the upgrade,
//  7. declares that v3 of the clone requires a capability (cadpackage.yaml):
//     with the readiness gate on, it cannot be approved until a provider is
//     cloned from blueprints and published,
//
// printing each step, then the refs each repository holds, as git itself
// sees them.
//
//	go run ./examples/quickstart [-keep]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/fnruntime/stdfn"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
spec:
  replicas: 1
  selector:
    matchLabels: {app: hello}
  template:
    metadata:
      labels: {app: hello}
    spec:
      containers:
      - name: hello
        image: nginx:1.27
`

// out receives everything the quickstart prints; tests capture it.
var out io.Writer = os.Stdout

func main() {
	keep := flag.Bool("keep", false, "keep the temporary repositories and print their path")
	flag.Parse()
	if err := run(*keep); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(keep bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	tmp, err := os.MkdirTemp("", "cad-quickstart-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(out, "repositories under", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}

	// Two bare git repositories, opened through the repository contract;
	// createBranch makes main as Porch does.
	repos := engine.Repos{}
	dirs := map[string]string{}
	for _, name := range []string{"blueprints", "deployments"} {
		dir := filepath.Join(tmp, name+".git")
		if _, err := git.PlainInit(dir, true); err != nil {
			return fmt.Errorf("init bare repository: %w", err)
		}
		r, err := gitrepo.Open(ctx, repository.Spec{
			Name: name, Type: repository.TypeGit,
			Git: &repository.GitSpec{Repo: dir, Branch: "main", CreateBranch: true},
		}, nil)
		if err != nil {
			return err
		}
		defer r.Close()
		repos[name], dirs[name] = r, dir
	}

	// One engine over both, rendering every save with the builtin
	// functions (no containers needed).
	e, err := engine.New(&engine.Options{
		Repositories: repos,
		Pipeline:     stdfn.Kptfile(fnruntime.NewRegistry(nil), nil),
		AuthorName:   "Quickstart", AuthorEmail: "quickstart@example.com",
	})
	if err != nil {
		return err
	}

	// 1. Init.
	blueprint := revision.Key{Package: "apps/hello", Workspace: "v1"}
	pr, err := e.Init(ctx, "blueprints", blueprint, engine.InitOptions{Description: "A first package, published with cad."})
	if err != nil {
		return err
	}
	step(1, "init", pr)

	// 2. Edit: a Deployment and a pipeline; the save renders it.
	files, err := pr.Files(ctx)
	if err != nil {
		return err
	}
	if files, err = withPipeline(files); err != nil {
		return err
	}
	if files, err = files.With("deployment.yaml", []byte(deployment)); err != nil {
		return err
	}
	if pr, err = e.Update(ctx, "blueprints", blueprint, files, engine.UpdateOptions{}); err != nil {
		return err
	}
	step(2, "edit and render", pr)
	if err := show(ctx, pr, "deployment.yaml", "metadata", "labels", "tier"); err != nil {
		return err
	}

	// 3. Propose and approve: approval assigns revision 1.
	if _, err := e.Propose(ctx, "blueprints", blueprint); err != nil {
		return err
	}
	v1, err := e.Approve(ctx, "blueprints", blueprint)
	if err != nil {
		return err
	}
	step(3, "propose and approve", v1)

	// 4. Clone into the deployment repository and specialise the clone.
	prod := revision.Key{Package: "hello-prod", Workspace: "v1"}
	v1Key := v1.Meta().Key
	pr, err = e.Clone(ctx, "deployments", prod, engine.CloneSource{Revision: &v1Key}, engine.CloneOptions{ForDeployment: true})
	if err != nil {
		return err
	}
	step(4, "clone", pr)
	if pr, err = editDeployment(ctx, e, pr, func(d *yaml.RNode) error {
		return d.PipeE(yaml.Lookup("spec"), yaml.SetField("replicas", yaml.NewScalarRNode("3")))
	}); err != nil {
		return err
	}
	step(4, "specialise (replicas: 3)", pr)
	if _, err := e.Propose(ctx, "deployments", prod); err != nil {
		return err
	}
	local, err := e.Approve(ctx, "deployments", prod)
	if err != nil {
		return err
	}
	step(4, "propose and approve", local)

	// 5. A new upstream revision: copy v1, change the image, publish.
	pr, err = e.Copy(ctx, "blueprints", v1.Meta().Key, "v2", engine.CopyOptions{})
	if err != nil {
		return err
	}
	if pr, err = editDeployment(ctx, e, pr, func(d *yaml.RNode) error {
		c, err := d.Pipe(yaml.Lookup("spec", "template", "spec", "containers", "[name=hello]"))
		if err != nil {
			return err
		}
		return c.PipeE(yaml.SetField("image", yaml.NewScalarRNode("nginx:1.28")))
	}); err != nil {
		return err
	}
	if _, err := e.Propose(ctx, "blueprints", pr.Meta().Key); err != nil {
		return err
	}
	v2, err := e.Approve(ctx, "blueprints", pr.Meta().Key)
	if err != nil {
		return err
	}
	step(5, "upstream v2 (nginx:1.28)", v2)

	// 6. Discover and upgrade.
	cands, err := e.DiscoverUpgrades(ctx, []string{"deployments"})
	if err != nil {
		return err
	}
	for _, c := range cands {
		fmt.Fprintf(out, "6. discover:  %s tracks %s; newer: %s\n", c.Downstream, c.Upstream, c.Latest())
	}
	pr, err = e.Upgrade(ctx, "deployments", local.Meta().Key,
		engine.Ref{Repository: "blueprints", Key: v1.Meta().Key}, engine.Ref{Repository: "blueprints", Key: v2.Meta().Key},
		"v2", engine.UpgradeOptions{})
	if err != nil {
		return err
	}
	step(6, "upgrade", pr)
	if err := show(ctx, pr, "deployment.yaml", "spec", "replicas"); err != nil {
		return err
	}
	if err := show(ctx, pr, "deployment.yaml", "spec", "template", "spec", "containers", "[name=hello]", "image"); err != nil {
		return err
	}
	if _, err := e.Propose(ctx, "deployments", pr.Meta().Key); err != nil {
		return err
	}
	if pr, err = e.Approve(ctx, "deployments", pr.Meta().Key); err != nil {
		return err
	}
	step(6, "propose and approve", pr)

	// 7. Dependencies: v3 of the deployment requires a capability that
	// nothing in deployments provides; with the gate, approval waits until
	// a provider is cloned from blueprints and published.
	if err := dependencies(ctx, e, pr); err != nil {
		return err
	}

	// The refs, read independently of cad.
	for _, name := range []string{"blueprints", "deployments"} {
		if err := printRefs(name, dirs[name]); err != nil {
			return err
		}
	}
	return nil
}

// pkgFile is a cad package file declaring spec (requires or provides).
func pkgFile(name, spec string) string {
	return "apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

// dependencies is step 7: a requirement, the gate it puts on approval,
// and the provider that lifts it.
func dependencies(ctx context.Context, e *engine.Engine, prod revision.PackageRevision) error {
	// The provider, published in blueprints.
	certs := revision.Key{Package: "certs", Workspace: "v1"}
	pr, err := e.Init(ctx, "blueprints", certs, engine.InitOptions{Description: "TLS certificates"})
	if err != nil {
		return err
	}
	files, err := pr.Files(ctx)
	if err != nil {
		return err
	}
	if files, err = files.With(revision.PackageFileName, []byte(pkgFile("certs", "  provides:\n  - capability: tls-certificates\n"))); err != nil {
		return err
	}
	if _, err = e.Update(ctx, "blueprints", certs, files, engine.UpdateOptions{}); err != nil {
		return err
	}
	if _, err := e.Propose(ctx, "blueprints", certs); err != nil {
		return err
	}
	if _, err := e.Approve(ctx, "blueprints", certs); err != nil {
		return err
	}

	// v3 of the deployment requires it.
	v3 := revision.Key{Package: prod.Meta().Key.Package, Workspace: "v3"}
	if pr, err = e.Copy(ctx, "deployments", prod.Meta().Key, v3.Workspace, engine.CopyOptions{}); err != nil {
		return err
	}
	if files, err = pr.Files(ctx); err != nil {
		return err
	}
	if files, err = files.With(revision.PackageFileName, []byte(pkgFile("hello-prod", "  requires:\n  - capability: tls-certificates\n"))); err != nil {
		return err
	}
	if _, err = e.Update(ctx, "deployments", v3, files, engine.UpdateOptions{}); err != nil {
		return err
	}
	res, _, err := e.CheckDependencies(ctx, "deployments", v3, &engine.DependenciesOptions{Gate: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "7. dependencies: %s", indent(res.String()))
	if _, err := e.Propose(ctx, "deployments", v3); err != nil {
		return err
	}
	if _, err := e.Approve(ctx, "deployments", v3); err != nil {
		fmt.Fprintf(out, "7. approve refused: %v\n", firstLine(err.Error()))
	} else {
		return fmt.Errorf("approving %v with a missing requirement succeeded", v3)
	}

	// The provider comes from blueprints, as a draft to publish.
	drafts, _, err := e.CloneProviders(ctx, "deployments", v3, &engine.CloneProvidersOptions{Sources: []string{"blueprints"}})
	if err != nil {
		return err
	}
	for _, d := range drafts {
		step(7, "clone the provider", d)
		if _, err := e.Propose(ctx, "deployments", d.Meta().Key); err != nil {
			return err
		}
		if _, err := e.Approve(ctx, "deployments", d.Meta().Key); err != nil {
			return err
		}
	}
	if res, _, err = e.CheckDependencies(ctx, "deployments", v3, &engine.DependenciesOptions{Gate: true}); err != nil {
		return err
	}
	fmt.Fprintf(out, "7. dependencies: %s", indent(res.String()))
	pr, err = e.Approve(ctx, "deployments", v3)
	if err != nil {
		return err
	}
	step(7, "propose and approve", pr)
	return nil
}

// indent indents every line of s but the first.
func indent(s string) string {
	return strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n   ") + "\n"
}

// withPipeline adds a set-labels mutator to the Kptfile in files.
func withPipeline(files revision.Files) (revision.Files, error) {
	data, _ := files.Get(revision.KptfileName)
	kf, err := revision.ParseKptfile(data)
	if err != nil {
		return revision.Files{}, err
	}
	kf.Pipeline = &revision.Pipeline{Mutators: []revision.Function{{
		Image:     "set-labels:v0.2.0",
		ConfigMap: map[string]string{"tier": "frontend"},
	}}}
	if data, err = kf.Encode(); err != nil {
		return revision.Files{}, err
	}
	return files.With(revision.KptfileName, data)
}

// editDeployment applies edit to the draft pr's deployment.yaml and saves
// it through the engine, which renders it.
func editDeployment(ctx context.Context, e *engine.Engine, pr revision.PackageRevision, edit func(*yaml.RNode) error) (revision.PackageRevision, error) {
	files, err := pr.Files(ctx)
	if err != nil {
		return nil, err
	}
	data, _ := files.Get("deployment.yaml")
	d, err := yaml.Parse(string(data))
	if err != nil {
		return nil, err
	}
	if err := edit(d); err != nil {
		return nil, err
	}
	s, err := d.String()
	if err != nil {
		return nil, err
	}
	if files, err = files.With("deployment.yaml", []byte(s)); err != nil {
		return nil, err
	}
	return e.Update(ctx, pr.Meta().Key.Repository, pr.Meta().Key, files, engine.UpdateOptions{})
}

// step prints one line about a revision.
func step(n int, what string, pr revision.PackageRevision) {
	m := pr.Meta()
	fmt.Fprintf(out, "%d. %-26s %-40s %s\n", n, what+":", m.Key, m.Lifecycle)
}

// show prints the value at path of file p in pr.
func show(ctx context.Context, pr revision.PackageRevision, p string, path ...string) error {
	files, err := pr.Files(ctx)
	if err != nil {
		return err
	}
	data, _ := files.Get(p)
	rn, err := yaml.Parse(string(data))
	if err != nil {
		return err
	}
	v, err := rn.Pipe(yaml.Lookup(path...))
	if err != nil {
		return err
	}
	value := "<none>"
	if v != nil {
		value = strings.TrimSpace(v.MustString())
	}
	fmt.Fprintf(out, "   %s %s: %s\n", p, strings.Join(path, "."), value)
	return nil
}

func printRefs(name, dir string) error {
	g, err := git.PlainOpen(dir)
	if err != nil {
		return err
	}
	iter, err := g.References()
	if err != nil {
		return err
	}
	var lines []string
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() != plumbing.HashReference {
			return nil
		}
		hash := ref.Hash()
		if tag, err := g.TagObject(hash); err == nil {
			hash = tag.Target
		}
		msg := ""
		if c, err := g.CommitObject(hash); err == nil {
			msg = firstLine(c.Message)
			if c.NumParents() > 1 {
				msg += fmt.Sprintf(" (merge of %d parents)", c.NumParents())
			}
		}
		lines = append(lines, fmt.Sprintf("  %-34s %s  %s", ref.Name(), short(hash.String()), msg))
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(lines)
	fmt.Fprintf(out, "\nrefs of %s:\n", name)
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
	return nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func short(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	return h
}
