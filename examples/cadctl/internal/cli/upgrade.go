package cli

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

func runUpgrade(c *cmdEnv, args []string) error {
	spec := cmdSpec{use: "upgrade PACKAGE_REVISION --workspace WORKSPACE | --discover=upstream|downstream [PACKAGE_REVISION...]",
		short: "Upgrade a package to a newer revision of its upstream, or discover the upgrades available.", long: `
The upstream a package came from is read from its Kptfile's upstreamLock: a
registered repository whose URL (or name) is the lock's repo, the package of
the lock's ref "<package>/v<N>" and its revision N. The new upstream is
--revision of that package, or its latest published revision.

--discover=upstream lists, for the named package revisions (default all),
the newer upstream revisions available; --discover=downstream lists, for the
named upstream revisions (default all), the downstream packages that could
be upgraded to them.`}
	fs := c.newFlagSet("rpkg upgrade")
	rev := fs.Int("revision", 0, "revision of the upstream package to upgrade to (default the latest)")
	workspace := fs.String("workspace", "", "workspace name of the upgraded package revision")
	strategy := fs.String("strategy", string(porchapi.ResourceMerge), "merge strategy: "+strings.Join(strategies, ", "))
	discover := fs.String("discover", "", "list the upgrades available instead of upgrading: upstream or downstream")
	pos, _, err := c.parse(fs, spec, args)
	if err != nil {
		return err
	}
	if *discover != "" {
		if *discover != "upstream" && *discover != "downstream" {
			return usagef("invalid argument %q for --discover; must be one of upstream, downstream", *discover)
		}
		return c.discoverUpgrades(*discover, pos)
	}
	if len(pos) < 1 {
		return usagef("SOURCE_PACKAGE_REVISION is a required positional argument")
	}
	if len(pos) > 1 {
		return usagef("too many arguments; SOURCE_PACKAGE_REVISION is the only accepted positional arguments")
	}
	if *rev < 0 {
		return usagef("revision must be positive (and not main)")
	}
	if *workspace == "" {
		return usagef("workspace is required")
	}
	ms, err := parseStrategy(*strategy)
	if err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	u, err := loadUpgradeView(c, cl)
	if err != nil {
		return err
	}
	pr := u.find(pos[0])
	if pr == nil {
		return fmt.Errorf("could not find package revision %s", pos[0])
	}
	if !isPublished(pr) {
		return fmt.Errorf("to upgrade a package, it must be in a published state, not %q", pr.Spec.Lifecycle)
	}
	up := u.upstreamOf(pr)
	if up.repo == "" {
		return fmt.Errorf("upstream source not found for package revision %q: its Kptfile's upstreamLock names no published revision of a registered repository", pr.Name)
	}
	oldUp := u.revision(up.repo, up.pkg, up.rev)
	if oldUp == nil {
		return fmt.Errorf("upstream package revision %s/%s revision %d no longer exists", up.repo, up.pkg, up.rev)
	}
	var newUp *porchapi.PackageRevision
	if *rev == 0 {
		newUp = u.latest(up.repo, up.pkg)
		if newUp == nil {
			return fmt.Errorf("failed to find latest published revision for package %s (--revision was %d)", up.pkg, *rev)
		}
	} else if newUp = u.revision(up.repo, up.pkg, *rev); newUp == nil {
		return fmt.Errorf("revision %d does not exist for package %s", *rev, up.pkg)
	}
	task := porchapi.Task{Type: porchapi.TaskTypeUpgrade, Upgrade: &porchapi.PackageUpgradeTaskSpec{
		OldUpstream:             porchapi.PackageRevisionRef{Name: oldUp.Name},
		NewUpstream:             porchapi.PackageRevisionRef{Name: newUp.Name},
		LocalPackageRevisionRef: porchapi.PackageRevisionRef{Name: pr.Name},
		Strategy:                ms,
	}}
	out, err := cl.CreatePackageRevision(c.ctx, newPackageRevision(pr.Spec.RepositoryName, pr.Spec.PackageName, *workspace, task))
	if err != nil {
		return fmt.Errorf("failed to create package revision: %w", err)
	}
	c.stdoutf("%s upgraded to %s\n", pr.Name, out.Name)
	return nil
}

func isPublished(pr *porchapi.PackageRevision) bool {
	return pr.Spec.Lifecycle == porchapi.LifecyclePublished || pr.Spec.Lifecycle == porchapi.LifecycleDeletionProposed
}

// upgradeView is every package revision and repository, for finding
// upstreams and the revisions newer than them.
type upgradeView struct {
	prs   []porchapi.PackageRevision
	repos []porchapi.Repository
}

func loadUpgradeView(c *cmdEnv, cl Client) (*upgradeView, error) {
	prs, err := cl.ListPackageRevisions(c.ctx, ListOptions{Status: true})
	if err != nil {
		return nil, err
	}
	repos, err := cl.ListRepositories(c.ctx)
	if err != nil {
		return nil, err
	}
	return &upgradeView{prs: prs, repos: repos}, nil
}

func (u *upgradeView) find(name string) *porchapi.PackageRevision {
	for i := range u.prs {
		if u.prs[i].Name == name {
			return &u.prs[i]
		}
	}
	return nil
}

// revision returns the published revision n of package pkg in repo.
func (u *upgradeView) revision(repo, pkg string, n int) *porchapi.PackageRevision {
	for i := range u.prs {
		pr := &u.prs[i]
		if pr.Spec.RepositoryName == repo && pr.Spec.PackageName == pkg && pr.Spec.Revision == n && isPublished(pr) {
			return pr
		}
	}
	return nil
}

// latest returns the published revision of pkg in repo with the highest
// number.
func (u *upgradeView) latest(repo, pkg string) *porchapi.PackageRevision {
	var best *porchapi.PackageRevision
	for i := range u.prs {
		pr := &u.prs[i]
		if pr.Spec.RepositoryName == repo && pr.Spec.PackageName == pkg && isPublished(pr) && pr.Spec.Revision > 0 &&
			(best == nil || pr.Spec.Revision > best.Spec.Revision) {
			best = pr
		}
	}
	return best
}

// upstreamRef is where a package's upstream lock points: a registered
// repository (empty when none matches), a package in it and the revision
// locked.
type upstreamRef struct {
	repo, pkg string
	rev       int
}

// upstreamOf resolves pr's upstream lock (else its upstream) as the engine
// does (engine.Engine.DiscoverUpgrades): a git lock whose repo is the URL
// or the name of a registered repository, whose directory is the package
// and whose ref is "<package>/v<N>". Anything else has no upstream repo.
func (u *upgradeView) upstreamOf(pr *porchapi.PackageRevision) upstreamRef {
	lock := pr.Status.UpstreamLock
	if lock == nil || lock.Git == nil {
		return upstreamRef{}
	}
	pkg := strings.Trim(lock.Git.Directory, "/")
	ver, ok := strings.CutPrefix(lock.Git.Ref, pkg+"/v")
	n, err := strconv.Atoi(ver)
	if !ok || err != nil || n < 1 {
		return upstreamRef{}
	}
	for _, repo := range u.repos {
		if (repo.Spec.Git != nil && sameRepo(repo.Spec.Git.Repo, lock.Git.Repo)) || repo.Name == lock.Git.Repo {
			return upstreamRef{repo: repo.Name, pkg: pkg, rev: n}
		}
	}
	return upstreamRef{}
}

func sameRepo(a, b string) bool {
	norm := func(s string) string {
		s = strings.TrimRight(s, "/")
		return strings.TrimSuffix(s, ".git")
	}
	return norm(a) == norm(b)
}

// upgradeCandidate is a package whose latest published revision came from
// a published revision of a package of a registered repository, with the
// newer revisions of that package: engine.UpgradeCandidate in the API's
// names.
type upgradeCandidate struct {
	downstream   string // the name of the downstream's latest revision
	upstreamRepo string
	upstreamRev  int
	newer        []namedRevision // oldest first
}

type namedRevision struct {
	name string
	rev  int
}

// upgradeDiscoverer is implemented by clients that can ask the engine
// directly (engine.Engine.DiscoverUpgrades).
type upgradeDiscoverer interface {
	discoverUpgrades(ctx context.Context) ([]upgradeCandidate, error)
}

// candidates computes what engine.Engine.DiscoverUpgrades reports from the
// API objects, for a server.
func (u *upgradeView) candidates() []upgradeCandidate {
	var out []upgradeCandidate
	seen := map[string]bool{}
	for i := range u.prs {
		pr := &u.prs[i]
		key := pr.Spec.RepositoryName + "\x00" + pr.Spec.PackageName
		if seen[key] {
			continue
		}
		latest := u.latest(pr.Spec.RepositoryName, pr.Spec.PackageName)
		if latest == nil {
			continue
		}
		seen[key] = true
		up := u.upstreamOf(latest)
		if up.repo == "" {
			continue
		}
		c := upgradeCandidate{downstream: latest.Name, upstreamRepo: up.repo, upstreamRev: up.rev}
		for j := range u.prs {
			x := &u.prs[j]
			if x.Spec.RepositoryName == up.repo && x.Spec.PackageName == up.pkg && x.Spec.Lifecycle == porchapi.LifecyclePublished && x.Spec.Revision > up.rev {
				c.newer = append(c.newer, namedRevision{name: x.Name, rev: x.Spec.Revision})
			}
		}
		sort.Slice(c.newer, func(a, b int) bool { return c.newer[a].rev < c.newer[b].rev })
		out = append(out, c)
	}
	return out
}

func (c *cmdEnv) discoverUpgrades(mode string, names []string) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	var cands []upgradeCandidate
	if d, ok := cl.(upgradeDiscoverer); ok {
		cands, err = d.discoverUpgrades(c.ctx)
	} else {
		var u *upgradeView
		if u, err = loadUpgradeView(c, cl); err == nil {
			cands = u.candidates()
		}
	}
	if err != nil {
		return err
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].downstream < cands[j].downstream })
	if mode == "upstream" {
		var rows [][]string
		row := func(cd upgradeCandidate) []string {
			if len(cd.newer) == 0 {
				return []string{cd.downstream, cd.upstreamRepo, "No update available"}
			}
			var revs []string
			for _, x := range cd.newer {
				revs = append(revs, "v"+strconv.Itoa(x.rev))
			}
			return []string{cd.downstream, cd.upstreamRepo, strings.Join(revs, ", ")}
		}
		if len(names) == 0 {
			for _, cd := range cands {
				rows = append(rows, row(cd))
			}
		} else {
			var errs []string
			for _, n := range names {
				found := false
				for _, cd := range cands {
					if cd.downstream == n {
						rows, found = append(rows, row(cd)), true
					}
				}
				if found {
					continue
				}
				if _, err := cl.GetPackageRevision(c.ctx, n); err != nil {
					errs = append(errs, "could not find package revision "+n)
					continue
				}
				rows = append(rows, []string{n, "", "No update available"})
			}
			if len(errs) > 0 {
				return fmt.Errorf("errors:\n  %s", strings.Join(errs, "\n  "))
			}
		}
		return printTable(c.stdout, []string{"PACKAGE REVISION", "UPSTREAM REPOSITORY", "UPSTREAM UPDATES"}, rows, false)
	}
	var rows [][]string
	for _, cd := range cands {
		for _, x := range cd.newer {
			if len(names) > 0 && !contains(names, x.name) {
				continue
			}
			rows = append(rows, []string{x.name, cd.downstream, fmt.Sprintf("v%d->v%d", cd.upstreamRev, x.rev)})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i][0] != rows[j][0] {
			return rows[i][0] < rows[j][0]
		}
		return rows[i][1] < rows[j][1]
	})
	if len(rows) == 0 {
		c.stdoutf("All downstream packages are up to date.\n")
		return nil
	}
	return printTable(c.stdout, []string{"PACKAGE REVISION", "DOWNSTREAM PACKAGE", "DOWNSTREAM UPDATE"}, rows, false)
}
