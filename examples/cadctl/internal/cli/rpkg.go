package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/examples/internal/urlcred"
	"github.com/configasdata/cad/revision"
)

func rpkgCommands() []command {
	return []command{
		{name: "init", short: "Initialize a new package in a repository", run: runInit},
		{name: "clone", short: "Create a package by cloning an upstream package", run: runClone},
		{name: "copy", aliases: []string{"edit"}, short: "Create a new revision of a package from a published one", run: runCopy},
		{name: "get", aliases: []string{"list"}, short: "List package revisions", run: runGet},
		{name: "pull", aliases: []string{"source", "read"}, short: "Pull the content of a package revision", run: runPull},
		{name: "push", aliases: []string{"sink", "write"}, short: "Push new content to a draft package revision", run: runPush},
		{name: "propose", short: "Propose drafts for approval", run: runPropose},
		{name: "approve", short: "Approve proposals, publishing them", run: runApprove},
		{name: "reject", short: "Reject proposals or deletion proposals", run: runReject},
		{name: "propose-delete", aliases: []string{"propose-del"}, short: "Propose published revisions for deletion", run: runProposeDelete},
		{name: "del", aliases: []string{"delete"}, short: "Delete package revisions", run: runDel},
		{name: "status", short: "Show the live status of a package revision's resources in a cluster", run: runStatus},
		{name: "upgrade", short: "Upgrade a package to a newer revision of its upstream, or discover upgrades", run: runUpgrade},
		{name: "deps", short: "Show a package revision's requirements and their providers", run: runDeps},
	}
}

func (c *cmdEnv) stdoutf(format string, args ...any) { fmt.Fprintf(c.stdout, format, args...) }
func (c *cmdEnv) stderrf(format string, args ...any) { fmt.Fprintf(c.stderr, format, args...) }

// packageExists reports whether repo already holds package pkg, which init
// and clone refuse, as porchctl does.
func (c *cmdEnv) packageExists(cl Client, repo, pkg string) error {
	prs, err := cl.ListPackageRevisions(c.ctx, ListOptions{})
	if err != nil {
		return err
	}
	for _, pr := range prs {
		if pr.Spec.RepositoryName == repo && pr.Spec.PackageName == pkg {
			return fmt.Errorf("`%s` cannot create a new revision for package %q that already exists in repo %q; make subsequent revisions using `copy`",
				strings.Fields(c.path)[1], pkg, repo)
		}
	}
	return nil
}

func newPackageRevision(repo, pkg, workspace string, task porchapi.Task) *porchapi.PackageRevision {
	return &porchapi.PackageRevision{
		TypeMeta: metav1.TypeMeta{APIVersion: porchapi.SchemeGroupVersion.String(), Kind: porchapi.KindPackageRevision},
		Spec: porchapi.PackageRevisionSpec{
			PackageName:    pkg,
			RepositoryName: repo,
			WorkspaceName:  workspace,
			Tasks:          []porchapi.Task{task},
		},
	}
}

func runInit(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "init PACKAGE_NAME", short: "Initialize a new package in a repository.", long: `
Creates a draft with a Kptfile, README.md and package-context.yaml, as kpt
pkg init does, rendered and saved in the repository.`}
	fs := c.newFlagSet("rpkg init")
	repo := fs.String("repository", "", "repository in which the package will be created")
	workspace := fs.String("workspace", "", "workspace name of the new package revision")
	description := fs.String("description", "sample description", "short description of the package")
	keywords := fs.String("keywords", "", "comma-separated list of keywords for the package")
	site := fs.String("site", "", "link to a page with information about the package")
	pos, _, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 {
		return usagef("PACKAGE_NAME is a required positional argument")
	}
	if len(pos) > 1 {
		return usagef("too many arguments; PACKAGE_NAME is the only accepted positional argument")
	}
	if *repo == "" {
		return usagef("--repository is required to specify the target repository")
	}
	if *workspace == "" {
		return usagef("--workspace is required to specify the workspace name")
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	if err := c.packageExists(cl, *repo, pos[0]); err != nil {
		return err
	}
	var kw []string
	if *keywords != "" {
		kw = strings.Split(*keywords, ",")
	}
	pr := newPackageRevision(*repo, pos[0], *workspace, porchapi.Task{
		Type: porchapi.TaskTypeInit,
		Init: &porchapi.PackageInitTaskSpec{Description: *description, Keywords: kw, Site: *site},
	})
	out, err := cl.CreatePackageRevision(c.ctx, pr)
	if err != nil {
		return err
	}
	c.stdoutf("%s created\n", out.Name)
	return nil
}

var strategies = []string{string(porchapi.ResourceMerge), string(porchapi.FastForward), string(porchapi.ForceDeleteReplace), string(porchapi.CopyMerge)}

func parseStrategy(s string) (porchapi.MergeStrategy, error) {
	if contains(strategies, s) {
		return porchapi.MergeStrategy(s), nil
	}
	return "", usagef("invalid strategy: %q (one of %s)", s, strings.Join(strategies, ", "))
}

func runClone(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "clone SOURCE_PACKAGE NAME", short: "Create a package by cloning an upstream package.", long: `
SOURCE_PACKAGE is the name of a published package revision of a registered
repository, or a git repository URL: REPO.git[/DIRECTORY][@REF], or any URL
with --directory and --ref (defaults "/" and main).`}
	fs := c.newFlagSet("rpkg clone")
	strategy := fs.String("strategy", "", "update strategy for later upgrades, written in the Kptfile: "+strings.Join(strategies, ", ")+
		" (default none, as Porch's clone writes none: upgrades then use resource-merge)")
	directory := fs.String("directory", "", "directory within the upstream git repository where the package is")
	ref := fs.String("ref", "", "branch or tag in the upstream git repository")
	repo := fs.String("repository", "", "repository to which the package will be cloned (downstream repository)")
	workspace := fs.String("workspace", "v1", "workspace name of the downstream package")
	secretRef := fs.String("secret-ref", "", "name of the secret for basic authentication with the upstream (server mode)")
	pos, _, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	var ms porchapi.MergeStrategy
	if *strategy != "" {
		if ms, err = parseStrategy(*strategy); err != nil {
			return err
		}
	}
	if len(pos) < 2 {
		return usagef("SOURCE_PACKAGE and NAME are required positional arguments; %d provided", len(pos))
	}
	if len(pos) > 2 {
		return usagef("too many arguments; SOURCE_PACKAGE and NAME are the only accepted positional arguments")
	}
	if *repo == "" {
		return usagef("--repository is required to specify downstream repository")
	}
	if *workspace == "" {
		return usagef("--workspace is required to specify downstream workspace name")
	}
	source, target := pos[0], pos[1]
	clone := &porchapi.PackageCloneTaskSpec{Strategy: ms}
	switch {
	case strings.HasPrefix(source, "oci://"):
		clone.Upstream = porchapi.UpstreamPackage{Type: porchapi.RepositoryTypeOCI, Oci: &porchapi.OciPackage{Image: source}}
	case strings.Contains(source, "/"):
		repoURL, dir, r, err := parseGitSource(source)
		if err != nil {
			return err
		}
		if urlcred.Has(repoURL) {
			return errURLCredentials(repoURL)
		}
		if *directory != "" && dir != "" && *directory != dir {
			return usagef("directory %s specified by --directory contradicts directory %s specified by SOURCE_PACKAGE", *directory, dir)
		}
		if *ref != "" && r != "" && *ref != r {
			return usagef("ref %s specified by --ref contradicts ref %s specified by SOURCE_PACKAGE", *ref, r)
		}
		if *directory == "" {
			*directory = dir
		}
		if *ref == "" {
			*ref = r
		}
		if *ref == "" {
			*ref = "main"
		}
		if *directory == "" {
			*directory = "/"
		}
		clone.Upstream = porchapi.UpstreamPackage{Type: porchapi.RepositoryTypeGit, Git: &porchapi.GitPackage{
			Repo: repoURL, Ref: *ref, Directory: *directory, SecretRef: porchapi.SecretRef{Name: *secretRef},
		}}
	default:
		clone.Upstream = porchapi.UpstreamPackage{UpstreamRef: &porchapi.PackageRevisionRef{Name: source}}
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	if err := c.packageExists(cl, *repo, target); err != nil {
		return err
	}
	out, err := cl.CreatePackageRevision(c.ctx, newPackageRevision(*repo, target, *workspace, porchapi.Task{Type: porchapi.TaskTypeClone, Clone: clone}))
	if err != nil {
		return err
	}
	c.stdoutf("%s created\n", out.Name)
	return nil
}

// parseGitSource splits "REPO.git[/DIR][@REF]" as kpt does; an address
// without ".git" is returned whole.
func parseGitSource(s string) (repo, dir, ref string, err error) {
	i := strings.Index(s, ".git")
	for i >= 0 {
		end := i + len(".git")
		if end == len(s) || s[end] == '/' || s[end] == '@' {
			break
		}
		j := strings.Index(s[end:], ".git")
		if j < 0 {
			i = -1
			break
		}
		i = end + j
	}
	if i < 0 {
		return s, "", "", nil
	}
	repo, rest := s[:i+len(".git")], s[i+len(".git"):]
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest, ref = rest[:at], rest[at+1:]
		if ref == "" {
			return "", "", "", usagef("SOURCE_PACKAGE %q has an empty ref after @", s)
		}
	}
	dir = strings.Trim(rest, "/")
	return repo, dir, ref, nil
}

func runCopy(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "copy SOURCE_PACKAGE_REVISION", short: "Create a new draft of a package from one of its published revisions."}
	fs := c.newFlagSet("rpkg copy")
	workspace := fs.String("workspace", "", "workspace name of the new package revision")
	fs.StringVar(workspace, "w", "", "shorthand for --workspace")
	fs.StringVar(workspace, "ws", "", "shorthand for --workspace")
	pos, _, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 {
		return usagef("SOURCE_PACKAGE is a required positional argument")
	}
	if len(pos) > 1 {
		return usagef("too many arguments; SOURCE_PACKAGE is the only accepted positional arguments")
	}
	if *workspace == "" {
		return usagef("--workspace is required to specify workspace name")
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	src, err := cl.GetPackageRevision(c.ctx, pos[0])
	if err != nil {
		return err
	}
	pr := newPackageRevision(src.Spec.RepositoryName, src.Spec.PackageName, *workspace, porchapi.Task{
		Type: porchapi.TaskTypeEdit,
		Edit: &porchapi.PackageEditTaskSpec{Source: &porchapi.PackageRevisionRef{Name: src.Name}},
	})
	out, err := cl.CreatePackageRevision(c.ctx, pr)
	if err != nil {
		return err
	}
	c.stdoutf("%s created\n", out.Name)
	return nil
}

func runGet(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "get [PACKAGE_REVISION_NAME...]", short: "List package revisions.", long: `
The table has porchctl's columns: NAME PACKAGE WORKSPACENAME REVISION LATEST
LIFECYCLE REPOSITORY.`}
	fs := c.newFlagSet("rpkg get")
	name := fs.String("name", "", "only package revisions whose package name contains this value")
	rev := fs.Int("revision", -2, "only package revisions with this revision number")
	workspace := fs.String("workspace", "", "only package revisions with this workspace name")
	showKptfile := fs.Bool("show-kptfile", false, "print the Kptfile of the one named package revision")
	all := fs.Bool("all-namespaces", false, "list package revisions of every namespace")
	fs.BoolVar(all, "A", false, "shorthand for --all-namespaces")
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
	if *showKptfile {
		switch {
		case len(pos) != 1:
			return usagef("--show-kptfile requires exactly one package revision name")
		case *name != "" || *rev != -2 || *workspace != "" || *all:
			return usagef("--show-kptfile cannot be combined with --name, --revision, --workspace or --all-namespaces")
		}
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	if *showKptfile {
		prr, err := cl.GetResources(c.ctx, pos[0])
		if err != nil {
			return err
		}
		kf, ok := prr.Spec.Resources[revision.KptfileName]
		if !ok {
			return fmt.Errorf("package revision %s has no Kptfile", pos[0])
		}
		c.stdoutf("%s", kf)
		if !strings.HasSuffix(kf, "\n") {
			c.stdoutf("\n")
		}
		return nil
	}
	var prs []porchapi.PackageRevision
	if len(pos) > 0 {
		for _, n := range pos {
			pr, err := cl.GetPackageRevision(c.ctx, n)
			if err != nil {
				return err
			}
			prs = append(prs, *pr)
		}
	} else {
		list, err := cl.ListPackageRevisions(c.ctx, ListOptions{AllNamespaces: *all, Status: f.kind != "" && f.kind != "wide"})
		if err != nil {
			return err
		}
		for _, pr := range list {
			if *name != "" && !strings.Contains(pr.Spec.PackageName, *name) {
				continue
			}
			if *rev != -2 && pr.Spec.Revision != *rev {
				continue
			}
			if *workspace != "" && pr.Spec.WorkspaceName != *workspace {
				continue
			}
			prs = append(prs, pr)
		}
	}
	if f.kind != "" && f.kind != "wide" {
		return printObjects(c.stdout, f, prs, len(pos) == 1, "packagerevision."+porchapi.Group, *noHeaders,
			func(pr porchapi.PackageRevision) string { return pr.Name })
	}
	if len(prs) == 0 {
		if *all {
			c.stderrf("No resources found\n")
		} else {
			c.noResources()
		}
		return nil
	}
	header := []string{"NAME", "PACKAGE", "WORKSPACENAME", "REVISION", "LATEST", "LIFECYCLE", "REPOSITORY"}
	if *all {
		header = append([]string{"NAMESPACE"}, header...)
	}
	var rows [][]string
	for _, pr := range prs {
		row := []string{pr.Name, pr.Spec.PackageName, pr.Spec.WorkspaceName, strconv.Itoa(pr.Spec.Revision),
			strconv.FormatBool(porchapi.IsLatest(&pr)), string(pr.Spec.Lifecycle), pr.Spec.RepositoryName}
		if *all {
			row = append([]string{pr.Namespace}, row...)
		}
		rows = append(rows, row)
	}
	return printTable(c.stdout, header, rows, *noHeaders)
}

// forEach runs fn on every named package revision as porchctl's
// multi-target commands do: a failure is reported as "NAME failed
// (reason)" and the others still run; the command fails at the end with
// every reason.
func (c *cmdEnv) forEach(names []string, fn func(cl Client, name string) error) error {
	if len(names) == 0 {
		return usagef("PACKAGE_REVISION is a required positional argument")
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	var msgs []string
	for _, name := range names {
		if err := fn(cl, name); err != nil {
			msgs = append(msgs, err.Error())
			c.stderrf("%s failed (%s)\n", name, err)
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("errors:\n  %s", strings.Join(msgs, "\n  "))
	}
	return nil
}

// lifecycleArgs parses a multi-target lifecycle command's arguments.
func (c *cmdEnv) lifecycleArgs(use, short string, args []string) ([]string, error) {
	fs := c.newFlagSet(c.path)
	pos, _, err := c.parse(fs, cmdSpec{use: use, short: short}, args)
	return pos, err
}

// isReady reports whether every readiness gate of pr has a True
// condition, the check porchctl makes before proposing and approving.
func isReady(pr *porchapi.PackageRevision) bool {
	for _, g := range pr.Spec.ReadinessGates {
		ok := false
		for _, cond := range pr.Status.Conditions {
			if cond.Type == g.ConditionType && cond.Status == porchapi.ConditionTrue {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

var errNotReady = errors.New("readiness conditions not met")

// withRetry runs fn again when it fails with a conflict, as porchctl's
// RetryOnConflict does.
func withRetry(fn func() error) error {
	var err error
	for i := 0; i < 5; i++ {
		if err = fn(); err == nil || !hasReason(err, metav1.StatusReasonConflict) {
			return err
		}
	}
	return err
}

func runPropose(c *cmdEnv, args []string) error {
	names, err := c.lifecycleArgs("propose PACKAGE_REVISION...", "Propose drafts for approval.", args)
	if err != nil {
		return err
	}
	return c.forEach(names, func(cl Client, name string) error {
		return withRetry(func() error {
			pr, err := cl.GetPackageRevision(c.ctx, name)
			if err != nil {
				return err
			}
			if !isReady(pr) {
				return errNotReady
			}
			switch pr.Spec.Lifecycle {
			case porchapi.LifecycleDraft:
				pr.Spec.Lifecycle = porchapi.LifecycleProposed
				if _, err := cl.UpdatePackageRevision(c.ctx, pr); err != nil {
					return err
				}
				c.stdoutf("%s proposed\n", name)
			case porchapi.LifecycleProposed:
				c.stderrf("%s is already proposed\n", name)
			default:
				return fmt.Errorf("cannot propose %s package", pr.Spec.Lifecycle)
			}
			return nil
		})
	})
}

func runApprove(c *cmdEnv, args []string) error {
	names, err := c.lifecycleArgs("approve PACKAGE_REVISION...", "Approve proposals, publishing them.", args)
	if err != nil {
		return err
	}
	return c.forEach(names, func(cl Client, name string) error {
		err := withRetry(func() error {
			pr, err := cl.GetPackageRevision(c.ctx, name)
			if err != nil {
				return err
			}
			if !isReady(pr) {
				return errNotReady
			}
			pr.Spec.Lifecycle = porchapi.LifecyclePublished
			_, err = cl.UpdateApproval(c.ctx, pr)
			return err
		})
		if err == nil {
			c.stdoutf("%s approved\n", name)
		}
		return err
	})
}

func runReject(c *cmdEnv, args []string) error {
	names, err := c.lifecycleArgs("reject PACKAGE_REVISION...", "Reject proposals (back to Draft) or deletion proposals (back to Published).", args)
	if err != nil {
		return err
	}
	return c.forEach(names, func(cl Client, name string) error {
		var proposedFor string
		err := withRetry(func() error {
			pr, err := cl.GetPackageRevision(c.ctx, name)
			if err != nil {
				return err
			}
			switch pr.Spec.Lifecycle {
			case porchapi.LifecycleProposed:
				proposedFor = "approval"
				pr.Spec.Lifecycle = porchapi.LifecycleDraft
				_, err = cl.UpdateApproval(c.ctx, pr)
			case porchapi.LifecycleDeletionProposed:
				proposedFor = "deletion"
				pr.Spec.Lifecycle = porchapi.LifecyclePublished
				_, err = cl.UpdatePackageRevision(c.ctx, pr)
			default:
				err = fmt.Errorf("cannot reject %s with lifecycle '%s'", name, pr.Spec.Lifecycle)
			}
			return err
		})
		if err == nil {
			c.stdoutf("%s no longer proposed for %s\n", name, proposedFor)
		}
		return err
	})
}

func runProposeDelete(c *cmdEnv, args []string) error {
	names, err := c.lifecycleArgs("propose-delete PACKAGE_REVISION...", "Propose published package revisions for deletion.", args)
	if err != nil {
		return err
	}
	return c.forEach(names, func(cl Client, name string) error {
		return withRetry(func() error {
			pr, err := cl.GetPackageRevision(c.ctx, name)
			if err != nil {
				return err
			}
			switch pr.Spec.Lifecycle {
			case porchapi.LifecyclePublished:
			case porchapi.LifecycleDeletionProposed:
				c.stderrf("%s is already proposed for deletion\n", name)
				return nil
			default:
				return fmt.Errorf("can only propose published packages for deletion; package %s is not published", name)
			}
			pr.Spec.Lifecycle = porchapi.LifecycleDeletionProposed
			if _, err := cl.UpdatePackageRevision(c.ctx, pr); err != nil {
				return err
			}
			c.stdoutf("%s proposed for deletion\n", name)
			return nil
		})
	})
}

func runDel(c *cmdEnv, args []string) error {
	names, err := c.lifecycleArgs("del PACKAGE_REVISION...", "Delete package revisions; a published one must be proposed for deletion first.", args)
	if err != nil {
		return err
	}
	return c.forEach(names, func(cl Client, name string) error {
		if err := cl.DeletePackageRevision(c.ctx, name); err != nil {
			return err
		}
		c.stdoutf("%s deleted\n", name)
		return nil
	})
}
