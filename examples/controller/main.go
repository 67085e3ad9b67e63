// Command controller is the shape of a Nephio-style controller built on
// cad's variant package, without Kubernetes: it reads PackageVariant and
// PackageVariantSet objects (Porch's YAML) from a directory, polls it, and
// whenever the objects or the repositories change it syncs them with
// variant.Sync and variant.SyncSet, printing one line per downstream. An
// object whose file goes away is removed (variant.Remove, variant.RemoveSet)
// per its deletion policy.
//
// Repositories are git repositories opened with the git backend: by default
// one bare repository, "local", under the data directory, created when
// missing; -repo name=path-or-url adds more. When the objects directory is
// empty it is seeded with an example: a published upstream package
// "example" in the first repository and a PackageVariant that clones it
// into "example-prod".
//
//	go run ./examples/controller [-data DIR] [-dir DIR] [-repo name=path]... [-once] [-interval 2s]
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

// repoFlags collects -repo name=location flags.
type repoFlags []string

func (r *repoFlags) String() string     { return strings.Join(*r, ",") }
func (r *repoFlags) Set(v string) error { *r = append(*r, v); return nil }

// run parses args and runs the controller until ctx is done, or for one
// pass with -once.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.SetOutput(out)
	data := fs.String("data", filepath.Join(os.TempDir(), "cad-controller"), "data directory: the default repository and objects live here")
	dir := fs.String("dir", "", "directory of PackageVariant and PackageVariantSet YAML (default DATA/variants)")
	once := fs.Bool("once", false, "sync once and exit")
	interval := fs.Duration("interval", 2*time.Second, "how often to poll the directory and the repositories")
	var extra repoFlags
	fs.Var(&extra, "repo", "an extra repository, name=path-or-url (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		*dir = filepath.Join(*data, "variants")
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}

	repos, first, err := openRepositories(ctx, *data, extra)
	if err != nil {
		return err
	}
	defer func() {
		for _, r := range repos {
			r.Close()
		}
	}()
	e, err := engine.New(&engine.Options{Repositories: repos, AuthorName: "cad controller", AuthorEmail: "controller@example.com"})
	if err != nil {
		return err
	}
	if err := seed(ctx, e, *dir, first, out); err != nil {
		return err
	}
	c := &controller{e: e, repos: repos, dir: *dir, out: out,
		opts:     &variant.Options{Repositories: repos},
		variants: map[string]*variant.PackageVariant{}, sets: map[string]*variant.PackageVariantSet{}}
	fmt.Fprintf(out, "watching %s every %s (repositories: %s)\n", *dir, *interval, strings.Join(names(repos), ", "))
	for {
		if err := c.poll(ctx); err != nil {
			if *once {
				return err
			}
			fmt.Fprintln(out, "error:", err)
		}
		if *once {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(*interval):
		}
	}
}

func names(repos engine.Repos) []string {
	n, _ := repos.Names(context.Background())
	return n
}

// openRepositories opens "local" under data (created when missing) and
// the -repo repositories. It returns them and the name of the first.
func openRepositories(ctx context.Context, data string, extra []string) (engine.Repos, string, error) {
	repos := engine.Repos{}
	specs := [][2]string{{"local", filepath.Join(data, "local.git")}}
	for _, x := range extra {
		name, loc, ok := strings.Cut(x, "=")
		if !ok || name == "" || loc == "" {
			return nil, "", fmt.Errorf("-repo %q: want name=path-or-url", x)
		}
		specs = append(specs, [2]string{name, loc})
	}
	for _, s := range specs {
		name, loc := s[0], s[1]
		if !strings.Contains(loc, "://") && !strings.Contains(loc, "@") {
			if _, err := os.Stat(loc); os.IsNotExist(err) {
				if _, err := git.PlainInit(loc, true); err != nil {
					return nil, "", fmt.Errorf("create repository %s: %w", loc, err)
				}
			}
		}
		r, err := gitrepo.Open(ctx, repository.Spec{Name: name, Type: repository.TypeGit,
			Git: &repository.GitSpec{Repo: loc, CreateBranch: true}}, nil)
		if err != nil {
			return nil, "", err
		}
		if _, ok := any(r).(repository.MetadataWriter); !ok {
			fmt.Fprintf(os.Stderr, "warning: repository %s keeps no metadata; syncs will fail with %v\n", name, repository.ErrNotSupported)
		}
		repos[name] = r
	}
	return repos, "local", nil
}

const exampleConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
data:
  greeting: hello
`

const examplePV = `apiVersion: config.porch.kpt.dev/v1alpha1
kind: PackageVariant
metadata:
  name: example-prod
spec:
  upstream:
    repo: %[1]s
    package: example
  downstream:
    repo: %[1]s
    package: example-prod
  labels:
    env: prod
  packageContext:
    data:
      environment: prod
`

// seed creates the example upstream package and PackageVariant when dir
// holds no object files.
func seed(ctx context.Context, e *engine.Engine, dir, repo string, out io.Writer) error {
	files, err := objectFiles(dir)
	if err != nil || len(files) > 0 {
		return err
	}
	if _, err := e.Latest(ctx, repo, "example"); errors.Is(err, repository.ErrNotFound) {
		key := revision.Key{Package: "example", Workspace: "v1"}
		pr, err := e.Init(ctx, repo, key, engine.InitOptions{Description: "an example package"})
		if err != nil {
			return err
		}
		fs, err := pr.Files(ctx)
		if err != nil {
			return err
		}
		if fs, err = fs.With("app-config.yaml", []byte(exampleConfigMap)); err != nil {
			return err
		}
		if _, err := e.Update(ctx, repo, key, fs, engine.UpdateOptions{}); err != nil {
			return err
		}
		if _, err := e.Propose(ctx, repo, key); err != nil {
			return err
		}
		if _, err := e.Approve(ctx, repo, key); err != nil {
			return err
		}
		fmt.Fprintf(out, "seeded: published %s:example v1\n", repo)
	} else if err != nil {
		return err
	}
	path := filepath.Join(dir, "example-prod.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, examplePV, repo), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(out, "seeded: wrote %s\n", path)
	return nil
}

// objectFiles lists the YAML and JSON files of dir, sorted.
func objectFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, en := range entries {
		switch filepath.Ext(en.Name()) {
		case ".yaml", ".yml", ".json":
			if !en.IsDir() {
				out = append(out, filepath.Join(dir, en.Name()))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// controller is the poll loop's state: what it last synced.
type controller struct {
	e     *engine.Engine
	repos engine.Repos
	dir   string
	out   io.Writer
	opts  *variant.Options

	last     string
	variants map[string]*variant.PackageVariant
	sets     map[string]*variant.PackageVariantSet
}

// poll reads the directory and syncs everything when it or a repository
// changed since the last poll.
func (c *controller) poll(ctx context.Context) error {
	paths, err := objectFiles(c.dir)
	if err != nil {
		return err
	}
	sum, err := c.fingerprint(ctx, paths)
	if err != nil || sum == c.last {
		return err
	}
	var objs []any
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		decoded, err := variant.DecodeLimits(data, c.e.YAMLLimits())
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		objs = append(objs, decoded...)
	}

	seenPV, seenSet := map[string]bool{}, map[string]bool{}
	var errs []error
	for _, o := range objs {
		switch o := o.(type) {
		case *variant.PackageVariant:
			seenPV[o.Name] = true
			if prev := c.variants[o.Name]; prev != nil {
				o.Status = prev.Status
			}
			res, err := variant.Sync(ctx, c.e, o, c.opts)
			fmt.Fprintln(c.out, res)
			o.Status = res.Status()
			c.variants[o.Name] = o
			errs = append(errs, err)
		case *variant.PackageVariantSet:
			seenSet[o.Name] = true
			res, err := variant.SyncSet(ctx, c.e, o, c.opts)
			c.printSet(res)
			c.sets[o.Name] = o
			errs = append(errs, err)
		}
	}
	for name, pv := range c.variants {
		if !seenPV[name] {
			res, err := variant.Remove(ctx, c.e, pv, c.opts)
			fmt.Fprintln(c.out, res)
			delete(c.variants, name)
			errs = append(errs, err)
		}
	}
	for name, pvs := range c.sets {
		if !seenSet[name] {
			res, err := variant.RemoveSet(ctx, c.e, pvs, c.opts)
			c.printSet(res)
			delete(c.sets, name)
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// What the syncs wrote changed the repositories' versions: remember
	// the state after them, so that only a change by someone else (a new
	// upstream revision, an approval) triggers the next pass.
	c.last, err = c.fingerprint(ctx, paths)
	return err
}

func (c *controller) printSet(res *variant.SetResult) {
	for _, r := range res.Removed {
		fmt.Fprintf(c.out, "%s: %s\n", res.Set, r)
	}
	for _, r := range res.Results {
		fmt.Fprintf(c.out, "%s: %s\n", res.Set, r)
	}
	if len(res.Results) == 0 && len(res.Removed) == 0 {
		for _, cond := range res.Conditions {
			if cond.Type == variant.ConditionReady {
				fmt.Fprintf(c.out, "%s: %s %s: %s\n", res.Set, cond.Type, cond.Reason, cond.Message)
			}
		}
	}
}

// fingerprint hashes the object files and the repositories' versions.
func (c *controller) fingerprint(ctx context.Context, paths []string) (string, error) {
	h := sha256.New()
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(data))
		h.Write(data)
	}
	for _, n := range names(c.repos) {
		v, err := repository.Version(ctx, c.repos[n])
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "repo %s %s\x00", n, v)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
