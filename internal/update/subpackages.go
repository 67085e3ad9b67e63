package update

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/configasdata/cad/revision"
)

// subpackageAction is what resource-merge does with one subpackage.
type subpackageAction int

const (
	mergeSubpackage subpackageAction = iota // merge file by file
	keepLocal                               // keep the local copy as it is
	dropSubpackage                          // leave it out of the result
)

// subpackageDirs returns the directories (other than the root) holding a
// Kptfile in any of the trees, sorted so that parents come first.
func subpackageDirs(trees ...revision.Files) []string {
	var dirs []string
	for _, p := range allPaths(trees...) {
		if isKptfile(p) && p != revision.KptfileName {
			dirs = append(dirs, path.Dir(p))
		}
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

// planSubpackages applies kpt's per-subpackage table (by the presence of
// the subpackage's Kptfile in each tree):
//
//	origin  local  updated  action
//	-       yes    yes      error: added in both upstream and local
//	yes     -      any      stays deleted
//	yes     yes    -        deleted if unchanged from origin, else kept
//	otherwise               merged file by file
//
// A decision for a subpackage covers the subpackages nested in it.
func planSubpackages(original, updated, local revision.Files) (map[string]subpackageAction, error) {
	plan := map[string]subpackageAction{}
	for _, dir := range subpackageDirs(original, updated, local) {
		if _, decided := ancestorAction(plan, dir); decided {
			continue
		}
		kf := path.Join(dir, revision.KptfileName)
		inO, inL, inU := original.Has(kf), local.Has(kf), updated.Has(kf)
		switch {
		case !inO && inL && inU:
			return nil, fmt.Errorf("subpackage %q added in both upstream and local", dir)
		case inO && !inL:
			plan[dir] = dropSubpackage
		case inO && inL && !inU:
			changed, err := modified(original.Subdir(dir), local.Subdir(dir))
			if err != nil {
				return nil, err
			}
			if len(changed) == 0 {
				plan[dir] = dropSubpackage
			} else {
				plan[dir] = keepLocal
			}
		}
	}
	return plan, nil
}

// ancestorAction returns the decision that covers p, if any.
func ancestorAction(plan map[string]subpackageAction, p string) (subpackageAction, bool) {
	for dir, a := range plan {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return a, true
		}
	}
	return mergeSubpackage, false
}

// applyPlan removes from the three trees the files of subpackages that are
// not merged and returns the files to add to the result unchanged.
func applyPlan(plan map[string]subpackageAction, original, updated, local revision.Files) (o, u, l revision.Files, kept map[string][]byte) {
	kept = map[string][]byte{}
	filter := func(f revision.Files, keep bool) revision.Files {
		for _, p := range f.Paths() {
			a, decided := ancestorAction(plan, p)
			if !decided {
				continue
			}
			if keep && a == keepLocal {
				kept[p], _ = f.Get(p)
			}
			f = f.Without(p)
		}
		return f
	}
	return filter(original, false), filter(updated, false), filter(local, true), kept
}
