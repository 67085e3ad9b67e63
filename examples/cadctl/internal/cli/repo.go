package cli

import (
	"fmt"
	"path"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/internal/urlcred"
	"github.com/configasdata/cad/repository"
)

func repoCommands() []command {
	return []command{
		{name: "reg", aliases: []string{"register"}, short: "Register a package repository", run: runRepoReg},
		{name: "get", aliases: []string{"ls", "list"}, short: "List registered repositories", run: runRepoGet},
		{name: "unreg", aliases: []string{"unregister"}, short: "Unregister a repository", run: runRepoUnreg},
	}
}

func runRepoReg(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "reg REPOSITORY", short: "Register a package repository.", long: `
REPOSITORY is a git URL (https://, ssh://, file://, user@host:path) or the
path of a local git repository, or an oci:// image prefix (server mode only).
In direct mode the repository is opened once to check it, and recorded in
the configuration file.`}
	fs := c.newFlagSet("repo reg")
	directory := fs.String("directory", "/", "directory within the repository where to look for packages")
	branch := fs.String("branch", repository.DefaultBranch, "branch in the repository where finalized packages are committed")
	createBranch := fs.Bool("create-branch", false, "create the package branch if it doesn't already exist")
	name := fs.String("name", "", "name of the package repository (default the last segment of the repository URL)")
	description := fs.String("description", "", "brief description of the package repository")
	deployment := fs.Bool("deployment", false, "repository is a deployment repository; packages in it are deployment-ready")
	username := fs.String("repo-basic-username", "", "username for basic authentication (not supported by cadctl)")
	password := fs.String("repo-basic-password", "", "password for basic authentication (not supported by cadctl)")
	workloadIdentity := fs.Bool("repo-workload-identity", false, "use workload identity for authentication (not supported by cadctl)")
	schedule := fs.String("sync-schedule", "", "cron schedule of repository syncs (recorded; cad reads repositories directly)")
	pos, _, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("repository is a required positional argument")
	}
	if len(pos) > 1 {
		return usagef("too many arguments; REPOSITORY is the only positional argument")
	}
	if *username != "" || *password != "" || *workloadIdentity {
		return usagef("repository credentials (--repo-basic-username, --repo-basic-password, --repo-workload-identity) are not supported by cadctl; use a URL or a git credential helper the git backend can read")
	}
	addr := pos[0]
	if urlcred.Has(addr) {
		return errURLCredentials(addr)
	}
	repo := porchapi.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: *name},
		Spec: porchapi.RepositorySpec{
			Description: *description,
			Deployment:  *deployment,
			Content:     porchapi.ContentPackage,
		},
	}
	if *schedule != "" {
		repo.Spec.Sync = &porchapi.RepositorySync{Schedule: *schedule}
	}
	if reg, ok := strings.CutPrefix(addr, "oci://"); ok {
		repo.Spec.Type = configv1alpha1.RepositoryTypeOCI
		repo.Spec.Oci = &configv1alpha1.OciRepository{Registry: reg}
	} else {
		if isLocalPath(addr) {
			addr = c.abs(addr)
		}
		repo.Spec.Type = configv1alpha1.RepositoryTypeGit
		repo.Spec.Git = &configv1alpha1.GitRepository{Repo: addr, Branch: *branch, CreateBranch: *createBranch, Directory: *directory}
	}
	if repo.Name == "" {
		repo.Name = lastSegment(pos[0])
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	_, err = cl.CreateRepository(c.ctx, &repo)
	return err
}

// lastSegment is the default repository name: the last path segment of
// the address, without ".git".
func lastSegment(addr string) string {
	addr = strings.TrimRight(addr, "/")
	if i := strings.LastIndexAny(addr, "/:"); i >= 0 {
		addr = addr[i+1:]
	}
	return strings.TrimSuffix(path.Base(addr), ".git")
}

func runRepoGet(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "get [REPOSITORY_NAME]", short: "List registered repositories."}
	fs := c.newFlagSet("repo get")
	output := fs.String("output", "", "output format: yaml, json, name, custom-columns=..., jsonpath=...")
	fs.StringVar(output, "o", "", "shorthand for --output")
	noHeaders := fs.Bool("no-headers", false, "do not print the table header")
	pos, _, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	f, err := parseOutput(*output)
	if err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	repos, err := cl.ListRepositories(c.ctx)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		byName := map[string]porchapi.Repository{}
		for _, r := range repos {
			byName[r.Name] = r
		}
		var sel []porchapi.Repository
		for _, n := range pos {
			r, ok := byName[n]
			if !ok {
				return notFound(resRepositories, n)
			}
			sel = append(sel, r)
		}
		repos = sel
	}
	for i := range repos {
		repos[i] = redactRepository(repos[i])
	}
	if f.kind != "" && f.kind != "wide" {
		return printObjects(c.stdout, f, repos, len(pos) == 1, "repository."+porchapi.ConfigGroup, *noHeaders,
			func(r porchapi.Repository) string { return r.Name })
	}
	if len(repos) == 0 {
		c.noResources()
		return nil
	}
	var rows [][]string
	for _, r := range repos {
		schedule, address := "", ""
		if r.Spec.Sync != nil {
			schedule = r.Spec.Sync.Schedule
		}
		if r.Spec.Git != nil {
			address = r.Spec.Git.Repo
		} else if r.Spec.Oci != nil {
			address = r.Spec.Oci.Registry
		}
		deployment := ""
		if r.Spec.Deployment {
			deployment = "true"
		}
		ready := ""
		for _, cond := range r.Status.Conditions {
			if cond.Type == porchapi.RepositoryReady {
				ready = string(cond.Status)
			}
		}
		rows = append(rows, []string{r.Name, string(r.Spec.Type), r.Spec.Content, schedule, deployment, ready, address})
	}
	return printTable(c.stdout, []string{"NAME", "TYPE", "CONTENT", "SYNC SCHEDULE", "DEPLOYMENT", "READY", "ADDRESS"}, rows, *noHeaders)
}

func (c *cmdEnv) noResources() {
	c.stderrf("No resources found in %s namespace.\n", c.namespace())
}

func runRepoUnreg(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "unreg REPOSITORY_NAME", short: "Unregister a repository; its packages stay in it."}
	fs := c.newFlagSet("repo unreg")
	fs.Bool("keep-auth-secret", false, "accepted for porchctl compatibility; cadctl keeps no secrets")
	pos, _, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("REPOSITORY is a required positional argument")
	}
	if len(pos) > 1 {
		return usagef("too many arguments; REPOSITORY is the only positional argument")
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	return cl.DeleteRepository(c.ctx, pos[0])
}

// errURLCredentials refuses a URL that embeds credentials, without
// repeating them.
func errURLCredentials(addr string) error {
	return fmt.Errorf("%s embeds credentials in the URL; cadctl never stores or prints them: give the URL without them (a server resolves credentials from a secretRef)",
		urlcred.Redact(addr))
}

// redactRepository returns r with the credentials its URL may embed
// (registered by an earlier version) redacted.
func redactRepository(r porchapi.Repository) porchapi.Repository {
	if r.Spec.Git != nil && urlcred.Has(r.Spec.Git.Repo) {
		g := *r.Spec.Git
		g.Repo = urlcred.Redact(g.Repo)
		r.Spec.Git = &g
	}
	return r
}
