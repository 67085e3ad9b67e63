package cli

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/configasdata/cad/deps"
	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/examples/internal/porchapi"
	"github.com/configasdata/cad/revision"
)

// errDepsUnsatisfied is the error of rpkg deps for a revision with a
// missing requirement or a cycle, so that scripts can test its exit code.
var errDepsUnsatisfied = errors.New("dependencies not satisfied")

func runDeps(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "deps PACKAGE_REVISION", short: "Show what a package revision requires and which packages provide it.", long: `
Resolves the requirements a package declares in cad's package file
(cadpackage.yaml: spec.requires, spec.provides; CRDs provide their APIs)
against the latest published revision of every package of its repository
and of the repositories its package requirements name (or of --repo). It
prints each requirement with its provider, what is missing, ambiguous
providers and cycles, and exits non-zero when something is missing or a
cycle is found.

With --check the result is also recorded on the Draft or Proposed revision
as the readiness condition ` + deps.ConditionType + `; with --gate the
readiness gate of that type is added too, so that approve waits until a
later --check finds every requirement satisfied. With --clone-from REPO
(repeatable) the first package of those repositories that satisfies each
missing requirement is cloned into the revision's repository as a draft
of workspace "deps", to propose and approve. --check and --clone-from
run in direct mode only; in server mode the server's dependencies
subresource resolves.`}
	fs := c.newFlagSet("rpkg deps")
	var repos stringsFlag
	var check, gate bool
	var cloneFrom stringsFlag
	fs.Var(&cloneFrom, "clone-from", "a repository to clone missing providers from, as drafts (repeatable; searched in order)")
	fs.Var(&repos, "repo", "a repository whose packages may provide requirements (repeatable; default the revision's own and those its package requirements name)")
	fs.BoolVar(&check, "check", false, "record the result as the revision's readiness condition "+deps.ConditionType)
	fs.BoolVar(&gate, "gate", false, "with --check, also add the readiness gate "+deps.ConditionType+" so approve waits for it")
	pos, _, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("PACKAGE_REVISION is the one required positional argument")
	}
	if gate && !check {
		return usagef("--gate needs --check")
	}
	if len(cloneFrom) > 0 && check {
		return usagef("--clone-from cannot be used with --check: check again once the providers are published")
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	if sc, ok := cl.(*ServerClient); ok {
		if check || len(cloneFrom) > 0 {
			return usagef("--check and --clone-from run in direct mode only; the server's dependencies subresource only reads")
		}
		st, err := sc.Dependencies(c.ctx, pos[0], repos)
		if err != nil {
			return err
		}
		c.stdoutf("%s", st.Summary)
		if !st.Satisfied {
			return errDepsUnsatisfied
		}
		return nil
	}
	d, ok := cl.(*DirectClient)
	if !ok {
		return errors.New("rpkg deps: unsupported mode")
	}
	if len(cloneFrom) > 0 {
		drafts, res, err := d.cloneProviders(c.ctx, pos[0], &engine.CloneProvidersOptions{Sources: cloneFrom,
			Dependencies: &engine.DependenciesOptions{Repositories: repos}})
		if res != nil {
			c.stdoutf("%s", res)
		}
		for _, pr := range drafts {
			k := pr.Meta().Key
			c.stdoutf("%s cloned from %s\n", porchapi.PackageRevisionName(k.Repository, k.Package, k.Workspace), upstreamName(c, pr))
		}
		return err
	}
	res, err := d.dependencies(c.ctx, pos[0], &engine.DependenciesOptions{Repositories: repos, Gate: gate}, check)
	if err != nil {
		return err
	}
	c.stdoutf("%s", res)
	if check {
		cond := res.Condition()
		c.stdoutf("condition %s set to %s\n", cond.Type, cond.Status)
	}
	if !res.Satisfied() {
		return errDepsUnsatisfied
	}
	return nil
}

// dependencies resolves (and with check records) the dependencies of the
// package revision called name.
func (d *DirectClient) dependencies(ctx context.Context, name string, opts *engine.DependenciesOptions, check bool) (*deps.Result, error) {
	rev, err := d.lookup(ctx, "packagerevisions", name)
	if err != nil {
		return nil, err
	}
	k := rev.Meta().Key
	key := revision.Key{Package: k.Package, Workspace: k.Workspace}
	if check {
		res, _, err := d.eng.CheckDependencies(ctx, k.Repository, key, opts)
		if err != nil {
			return nil, apiError(err)
		}
		return res, nil
	}
	res, err := d.eng.Dependencies(ctx, k.Repository, key, opts)
	if err != nil {
		return nil, apiError(err)
	}
	return res, nil
}

// cloneProviders clones the missing providers of the package revision
// called name from opts.Sources.
func (d *DirectClient) cloneProviders(ctx context.Context, name string, opts *engine.CloneProvidersOptions) ([]revision.PackageRevision, *deps.Result, error) {
	rev, err := d.lookup(ctx, "packagerevisions", name)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range opts.Sources {
		if _, ok := d.set.spec(s); !ok {
			return nil, nil, notFound("repositories", s)
		}
	}
	k := rev.Meta().Key
	drafts, res, err := d.eng.CloneProviders(ctx, k.Repository, revision.Key{Package: k.Package, Workspace: k.Workspace}, opts)
	if err != nil {
		err = apiError(err)
	}
	return drafts, res, err
}

// upstreamName names the upstream a cloned draft records, for messages.
func upstreamName(c *cmdEnv, pr revision.PackageRevision) string {
	info, err := pr.Info(c.ctx)
	if err != nil || info.UpstreamLock == nil || info.UpstreamLock.Git == nil {
		return "its upstream"
	}
	g := info.UpstreamLock.Git
	return g.Repo + " " + g.Directory + "@" + g.Ref
}

// Dependencies reads the server's packagerevisions/NAME/dependencies
// subresource (repos, when given, are the repositories searched for
// providers). It returns the server's error for an unknown revision.
func (s *ServerClient) Dependencies(ctx context.Context, name string, repos []string) (*depsStatus, error) {
	var obj struct {
		Status depsStatus `json:"status"`
	}
	if err := s.withQuery(url.Values{"repo": repos}).do(ctx, http.MethodGet, s.prPath(name, "dependencies"), nil, &obj); err != nil {
		return nil, err
	}
	return &obj.Status, nil
}

// depsStatus is what cadctl reads of the server's dependencies object.
type depsStatus struct {
	Satisfied bool   `json:"satisfied"`
	Summary   string `json:"summary"`
}
