// Package update implements kpt's package update: the three-way merge of a
// package's original upstream, updated upstream and local content, for the
// strategies kpt and Porch offer (resource-merge, fast-forward,
// force-delete-replace, copy-merge). It works on in-memory
// [revision.Files] and uses kyaml for all YAML.
//
// The functions in this package are pure and safe for concurrent use; they
// never modify kyaml's global OpenAPI registry (CRD schemas found in the
// packages are applied per resource).
package update

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/internal/upstreamid"
	"github.com/configasdata/cad/revision"
)

// ErrLocalModified is matched (errors.Is) by the *LocalModifiedError that
// the fast-forward strategy returns when the local package differs from the
// original upstream.
var ErrLocalModified = errors.New("local package files have been modified")

// LocalModifiedError lists the files that keep a fast-forward update from
// applying. It matches [ErrLocalModified].
type LocalModifiedError struct {
	Paths []string // the files added, deleted or changed locally, sorted
}

// Error lists the files modified locally.
func (e *LocalModifiedError) Error() string {
	return fmt.Sprintf("local package files have been modified: %v. use a different update --strategy.", e.Paths)
}

// Is reports whether target is [ErrLocalModified].
func (e *LocalModifiedError) Is(target error) bool { return target == ErrLocalModified }

// Merge returns the local package updated from original to updated with
// strategy (empty means resource-merge):
//
//   - resource-merge: KRM files (*.yaml, *.yml) are merged resource by
//     resource as kpt does: resources are matched by group, kind, upstream
//     namespace and name (from the upstream-identifier annotation or the
//     kpt-merge comment, else the resource's own) and file; added locally
//     or upstream are kept, deleted upstream are dropped unless changed
//     locally, deleted locally stay deleted, and the rest are merged field
//     by field (kyaml's merge3 walker, upstream winning conflicts,
//     explicit nulls deleting fields, lists associative only where the
//     OpenAPI schema - kyaml's, or that of a CRD in updated or local - says
//     so). Other files are replaced by the updated copy (or deleted when
//     gone upstream) when unchanged locally, and kept otherwise; files
//     added upstream are added.
//   - fast-forward: a *LocalModifiedError when local differs from original
//     (merge keys aside; Kptfiles compared ignoring metadata.name,
//     upstream, upstreamLock and status), else as force-delete-replace.
//   - force-delete-replace: the updated files, with the Kptfiles merged.
//   - copy-merge: updated files copied over local; files of original gone
//     from updated are removed; local-only files are kept.
//
// Kptfiles (at the root and in subpackages) are merged with
// [MergeKptfile] in every strategy. With resource-merge, a subpackage (a
// directory with a Kptfile) added in both upstream and local is an error;
// one deleted locally stays deleted; one deleted upstream is deleted when
// unchanged locally and kept whole otherwise; other subpackages are merged
// file by file as part of the tree (resources are matched within a file,
// so a resource never moves between packages). Remote subpackages (with
// their own upstream) are not fetched: they are merged like local ones.
//
// Merge returns an error for an unknown strategy, for unparsable Kptfiles
// and for duplicate resources in one tree.
func Merge(original, updated, local revision.Files, strategy revision.UpdateStrategy) (revision.Files, error) {
	switch strategy {
	case revision.ResourceMerge, "":
		return resourceMerge(original, updated, local)
	case revision.FastForward:
		if paths, err := modified(original, local); err != nil {
			return revision.Files{}, err
		} else if len(paths) > 0 {
			return revision.Files{}, &LocalModifiedError{Paths: paths}
		}
		return replace(original, updated, local)
	case revision.ForceDeleteReplace:
		return replace(original, updated, local)
	case revision.CopyMerge:
		return copyMerge(original, updated, local)
	default:
		return revision.Files{}, fmt.Errorf("update: unknown update strategy %q", strategy)
	}
}

func isKptfile(p string) bool { return path.Base(p) == revision.KptfileName }

// allPaths returns the union of the trees' paths, sorted.
func allPaths(trees ...revision.Files) []string {
	var ps []string
	for _, t := range trees {
		ps = append(ps, t.Paths()...)
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

// mergeKptfiles sets in out the merge of every Kptfile path of the three
// trees.
func mergeKptfiles(out map[string][]byte, original, updated, local revision.Files) error {
	for _, p := range allPaths(original, updated, local) {
		if !isKptfile(p) {
			continue
		}
		lb, inL := local.Get(p)
		ub, inU := updated.Get(p)
		switch {
		case !inU && !inL:
			continue
		case !inL:
			if _, inO := original.Get(p); !inO { // added upstream
				out[p] = ub
			}
			continue
		case !inU:
			out[p] = lb // kept: deleting a package is the caller's business
			continue
		}
		kfs := make([]*revision.Kptfile, 3)
		for i, t := range []revision.Files{original, updated, local} {
			b, ok := t.Get(p)
			if !ok {
				continue
			}
			kf, err := revision.ParseKptfile(b)
			if err != nil {
				return fmt.Errorf("update: %s: %w", p, err)
			}
			kfs[i] = kf
		}
		merged := MergeKptfile(kfs[0], kfs[1], kfs[2])
		if p != revision.KptfileName { // subpackage: its upstream comes from updated
			merged.Upstream, merged.UpstreamLock = kfs[1].Upstream, kfs[1].UpstreamLock
		}
		b, err := merged.Encode()
		if err != nil {
			return fmt.Errorf("update: %s: %w", p, err)
		}
		out[p] = b
	}
	return nil
}

func resourceMerge(original, updated, local revision.Files) (revision.Files, error) {
	plan, err := planSubpackages(original, updated, local)
	if err != nil {
		return revision.Files{}, fmt.Errorf("update: %w", err)
	}
	original, updated, local, out := applyPlan(plan, original, updated, local)
	if err := mergeKptfiles(out, original, updated, local); err != nil {
		return revision.Files{}, err
	}
	trees := []revision.Files{original, updated, local}
	krm := [3]map[string][]*yaml.RNode{{}, {}, {}}
	schemas := schemaSet{}
	for _, p := range allPaths(trees...) {
		if isKptfile(p) {
			continue
		}
		ok := upstreamid.IsResourceFile(p)
		var nodes [3][]*yaml.RNode
		for i, t := range trees {
			if !ok {
				break
			}
			if b, in := t.Get(p); in {
				nodes[i], ok = readResources(p, b)
			}
		}
		if !ok {
			mergeOther(out, p, original, updated, local)
			continue
		}
		schemas.addCRDs(nodes[1])
		schemas.addCRDs(nodes[2])
		// Resources are matched within a file, so a file upstream left
		// as it was merges to the local file: keep its bytes.
		if ob, inO := original.Get(p); inO == updated.Has(p) {
			if ub, _ := updated.Get(p); bytes.Equal(ob, ub) {
				var ts tuples
				if err := ts.add("dest", nodes[2]); err != nil {
					return revision.Files{}, fmt.Errorf("update: %w", err)
				}
				if lb, inL := local.Get(p); inL {
					out[p] = lb
				}
				continue
			}
		}
		for i := range trees {
			if _, in := trees[i].Get(p); in {
				krm[i][p] = nodes[i]
			}
		}
	}
	merged, err := mergeResources(krm[0], krm[1], krm[2], schemas)
	if err != nil {
		return revision.Files{}, fmt.Errorf("update: %w", err)
	}
	for p, nodes := range merged {
		b, err := writeResources(nodes)
		if err != nil {
			return revision.Files{}, fmt.Errorf("update: %s: %w", p, err)
		}
		out[p] = b
	}
	// A local KRM file with no resources (comments only, for instance) is
	// kept as it is.
	for p := range krm[2] {
		if _, done := out[p]; !done && len(krm[2][p]) == 0 {
			out[p], _ = local.Get(p)
		}
	}
	return revision.NewFiles(out)
}

// mergeOther merges non-KRM file p: the updated copy (or none) when local
// is unchanged from original, else the local copy.
func mergeOther(out map[string][]byte, p string, original, updated, local revision.Files) {
	ob, inO := original.Get(p)
	ub, inU := updated.Get(p)
	lb, inL := local.Get(p)
	switch {
	case inL && (!inO || !bytes.Equal(ob, lb)): // added or modified locally
		out[p] = lb
	case inL: // unchanged locally
		if inU {
			out[p] = ub
		}
	case inU && !inO: // added upstream
		out[p] = ub
	}
}

// replace is force-delete-replace: the updated files with merged Kptfiles.
func replace(original, updated, local revision.Files) (revision.Files, error) {
	return overlay(map[string][]byte{}, original, updated, local)
}

// copyMerge copies updated over local and removes files that upstream
// deleted.
func copyMerge(original, updated, local revision.Files) (revision.Files, error) {
	out := local.Map()
	for _, p := range original.Paths() {
		if !updated.Has(p) && !isKptfile(p) {
			delete(out, p)
		}
	}
	return overlay(out, original, updated, local)
}

// overlay copies the updated files other than Kptfiles into out and merges
// the Kptfiles of the three trees there.
func overlay(out map[string][]byte, original, updated, local revision.Files) (revision.Files, error) {
	for _, p := range updated.Paths() {
		if !isKptfile(p) {
			out[p], _ = updated.Get(p)
		}
	}
	if err := mergeKptfiles(out, original, updated, local); err != nil {
		return revision.Files{}, err
	}
	return revision.NewFiles(out)
}

// modified returns the paths in which local differs from original, as
// kpt's package diff does: merge keys (which get and clone add) are added
// to both sides first; Kptfiles are compared as values, ignoring
// metadata.name, upstream, upstreamLock and status; a local root Kptfile
// with nothing else set is no change when original has none.
func modified(original, local revision.Files) ([]string, error) {
	if o, err := upstreamid.StampFiles(original); err == nil {
		original = o
	}
	if l, err := upstreamid.StampFiles(local); err == nil {
		local = l
	}
	var paths []string
	for _, p := range allPaths(original, local) {
		ob, inO := original.Get(p)
		lb, inL := local.Get(p)
		if p == revision.KptfileName && inL && !inO {
			kf, err := revision.ParseKptfile(lb)
			if err != nil {
				return nil, fmt.Errorf("update: %s: %w", p, err)
			}
			if reflect.DeepEqual(kptfileContent(kf), kptfileContent(revision.NewKptfile(""))) {
				continue
			}
		}
		if inO != inL {
			paths = append(paths, p)
			continue
		}
		if bytes.Equal(ob, lb) {
			continue
		}
		if isKptfile(p) {
			same, err := sameKptfile(ob, lb)
			if err != nil {
				return nil, fmt.Errorf("update: %s: %w", p, err)
			}
			if same {
				continue
			}
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// kptfileContent is kf without the fields an update or a clone sets.
func kptfileContent(kf *revision.Kptfile) revision.Kptfile {
	return revision.Kptfile{APIVersion: kf.APIVersion, Kind: kf.Kind,
		Metadata: revision.ObjectMeta{Namespace: kf.Metadata.Namespace, Labels: kf.Metadata.Labels, Annotations: kf.Metadata.Annotations},
		Info:     kf.Info, Pipeline: kf.Pipeline, Inventory: kf.Inventory}
}

func sameKptfile(a, b []byte) (bool, error) {
	ka, err := revision.ParseKptfile(a)
	if err != nil {
		return false, err
	}
	kb, err := revision.ParseKptfile(b)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(kptfileContent(ka), kptfileContent(kb)), nil
}
