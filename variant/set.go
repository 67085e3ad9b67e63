package variant

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// Generated PackageVariant names are at most this long; a longer
// "<set>-<repo>-<package>" is cut and given a hash suffix, as Porch does.
const (
	MaxNameLength  = 63
	nameHashLength = 8
)

// SetResult is what SyncSet did for one PackageVariantSet. It is a plain
// value owned by the caller.
type SetResult struct {
	// Set is the PackageVariantSet's "<namespace>/<name>", or "<name>".
	Set string
	// Variants are the generated PackageVariants, sorted by name, each with
	// its status from its sync.
	Variants []*PackageVariant
	// Results are the results of syncing Variants, in the same order.
	Results []*Result
	// Removed are the results of removing the variants the set no longer
	// generates.
	Removed []*Result
	// Conditions are the set's Stalled and Ready conditions.
	Conditions []metav1.Condition
}

// Ready reports whether the set's Ready condition is True.
func (r *SetResult) Ready() bool {
	for _, c := range r.Conditions {
		if c.Type == ConditionReady {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// ValidateSet checks pvs as Porch's controller does: an upstream with repo
// and package, at least one target, each with exactly one of repositories,
// repositorySelector and objectSelector (with apiVersion and kind), and a
// template whose policies are valid and that sets at most one of each
// plain/Expr pair. Every expression must compile to a string. It returns a
// *ValidationError, or nil.
func ValidateSet(pvs *PackageVariantSet) error {
	env, err := newCELEnv(Options{})
	if err != nil {
		return err
	}
	return validateSet(pvs, env)
}

func validateSet(pvs *PackageVariantSet, env *celEnv) error {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	expr := func(field string, e *string) {
		if e != nil {
			if err := env.check(field, *e); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if pvs.Name == "" {
		add("missing required field metadata.name")
	}
	if pvs.Spec.Upstream == nil {
		add("spec.upstream is a required field")
	} else {
		errs = append(errs, validateUpstream("spec.upstream", pvs.Spec.Upstream)...)
	}
	if len(pvs.Spec.Targets) == 0 {
		add("must specify at least one item in spec.targets")
	}
	for i, t := range pvs.Spec.Targets {
		f := fmt.Sprintf("spec.targets[%d]", i)
		n := 0
		if t.Repositories != nil {
			n++
			if len(t.Repositories) == 0 {
				add("%s.repositories must not be an empty list if specified", f)
			}
			for j, rt := range t.Repositories {
				if rt.Name == "" {
					add("%s.repositories[%d].name cannot be empty", f, j)
				}
				for k, pn := range rt.PackageNames {
					if pn == "" {
						add("%s.repositories[%d].packageNames[%d] cannot be empty", f, j, k)
					}
				}
			}
		}
		if t.RepositorySelector != nil {
			n++
			if _, err := metav1.LabelSelectorAsSelector(t.RepositorySelector); err != nil {
				add("%s.repositorySelector: %v", f, err)
			}
		}
		if t.ObjectSelector != nil {
			n++
			if t.ObjectSelector.APIVersion == "" {
				add("%s.objectSelector.apiVersion cannot be empty", f)
			}
			if t.ObjectSelector.Kind == "" {
				add("%s.objectSelector.kind cannot be empty", f)
			}
			if _, err := metav1.LabelSelectorAsSelector(&t.ObjectSelector.LabelSelector); err != nil {
				add("%s.objectSelector: %v", f, err)
			}
		}
		if n != 1 {
			add("%s must specify one of `repositories`, `repositorySelector`, or `objectSelector`", f)
		}
		tp := t.Template
		if tp == nil {
			continue
		}
		f += ".template"
		if p := tp.AdoptionPolicy; p != nil && *p != AdoptNone && *p != AdoptExisting {
			add("%s.adoptionPolicy can only be %q or %q", f, AdoptNone, AdoptExisting)
		}
		if p := tp.DeletionPolicy; p != nil && *p != DeletionPolicyOrphan && *p != DeletionPolicyDelete {
			add("%s.deletionPolicy can only be %q or %q", f, DeletionPolicyOrphan, DeletionPolicyDelete)
		}
		if d := tp.Downstream; d != nil {
			if d.Repo != nil && d.RepoExpr != nil {
				add("%s may specify only one of `downstream.repo` and `downstream.repoExpr`", f)
			}
			if d.Package != nil && d.PackageExpr != nil {
				add("%s may specify only one of `downstream.package` and `downstream.packageExpr`", f)
			}
			expr(f+".downstream.repoExpr", d.RepoExpr)
			expr(f+".downstream.packageExpr", d.PackageExpr)
		}
		mapExprs := func(field string, mes []MapExpr) {
			for j, me := range mes {
				ff := fmt.Sprintf("%s[%d]", field, j)
				if me.Key != nil && me.KeyExpr != nil {
					add("%s may specify only one of `key` and `keyExpr`", ff)
				}
				if me.Value != nil && me.ValueExpr != nil {
					add("%s may specify only one of `value` and `valueExpr`", ff)
				}
				expr(ff+".keyExpr", me.KeyExpr)
				expr(ff+".valueExpr", me.ValueExpr)
			}
		}
		mapExprs(f+".labelExprs", tp.LabelExprs)
		mapExprs(f+".annotationExprs", tp.AnnotationExprs)
		if pc := tp.PackageContext; pc != nil {
			mapExprs(f+".packageContext.dataExprs", pc.DataExprs)
			for j := range pc.RemoveKeyExprs {
				expr(fmt.Sprintf("%s.packageContext.removeKeyExprs[%d]", f, j), &pc.RemoveKeyExprs[j])
			}
		}
		for j, inj := range tp.Injectors {
			ff := fmt.Sprintf("%s.injectors[%d]", f, j)
			if (inj.Name == nil) == (inj.NameExpr == nil) {
				add("%s must specify exactly one of `name` and `nameExpr`", ff)
			}
			expr(ff+".nameExpr", inj.NameExpr)
		}
		if p := tp.Pipeline; p != nil {
			for _, kind := range []string{"mutators", "validators"} {
				fts := p.Mutators
				if kind == "validators" {
					fts = p.Validators
				}
				for j, ft := range fts {
					ff := fmt.Sprintf("%s.pipeline.%s[%d]", f, kind, j)
					errs = append(errs, validateFunction(ff, ft.Function)...)
					mapExprs(ff+".configMapExprs", ft.ConfigMapExprs)
				}
			}
		}
	}
	if len(errs) > 0 {
		return &ValidationError{Kind: PackageVariantSetKind, Name: pvs.Name, Errors: errs}
	}
	return nil
}

// setID is the value of SetLabel and the Result name of pvs.
func setName(pvs *PackageVariantSet) string {
	if pvs.Namespace != "" {
		return pvs.Namespace + "/" + pvs.Name
	}
	return pvs.Name
}

// VariantName returns the name of the PackageVariant a set called set
// generates for the downstream repo and package:
// "<set>-<repo>-<package>", with '/' in the package path written '.', cut to
// MaxNameLength characters with a suffix of '-' and 8 hex digits of the
// SHA-1 of the full name when longer.
func VariantName(set, repo, pkg string) string {
	id := set + "-" + repo + "-" + strings.ReplaceAll(pkg, "/", ".")
	if len(id) <= MaxNameLength {
		return id
	}
	sum := sha1.Sum([]byte(id))
	return id[:MaxNameLength-nameHashLength-1] + "-" + hex.EncodeToString(sum[:])[:nameHashLength]
}

// unrolled is one downstream of a target before its template is applied.
type unrolled struct {
	target         int
	template       *PackageVariantTemplate
	repoDefault    string
	packageDefault string
	targetVar      map[string]any
}

// Unroll returns the PackageVariants pvs generates, sorted by name,
// without writing anything: each target is unrolled into downstreams
// (repositories × package names, the repositories repositorySelector
// selects, or the objects objectSelector selects) and its template is
// rendered with CEL. Every variant's upstream is the revision the set's
// upstream resolves to now, pinned, so that all variants of one sync agree.
// Generated variants carry the label config.porch.kpt.dev/packagevariantset
// with the set's name and an owner reference to it.
//
// Errors: a *ValidationError for a bad spec, an *ExprError for an
// expression that fails (both matching repository.ErrInvalidInput), an
// error matching repository.ErrInvalidInput when two targets yield the same
// downstream, repository.ErrNotFound for a missing upstream or a downstream
// repository that is not among the repositories, and the ObjectSource's
// errors.
func Unroll(ctx context.Context, e Engine, pvs *PackageVariantSet, opts *Options) ([]*PackageVariant, error) {
	o, err := opts.withDefaults(e)
	if err != nil {
		return nil, err
	}
	env, err := newCELEnv(o)
	if err != nil {
		return nil, err
	}
	return unroll(ctx, e, pvs, o, env)
}

func unroll(ctx context.Context, e Engine, pvs *PackageVariantSet, o Options, env *celEnv) ([]*PackageVariant, error) {
	if err := validateSet(pvs, env); err != nil {
		return nil, err
	}
	up, err := resolve(ctx, e, pvs.Spec.Upstream)
	if err != nil {
		return nil, err
	}
	um := up.Meta()
	specs, err := repositorySpecs(ctx, o)
	if err != nil {
		return nil, err
	}
	upstreamVar := map[string]any{
		"name": PackageRevisionName(um.Key), "namespace": pvs.Namespace,
		"labels": stringsToAny(um.Labels), "annotations": stringsToAny(um.Annotations),
		"repository": um.Key.Repository, "package": um.Key.Package, "revision": int64(um.Key.Revision), "workspaceName": um.Key.Workspace,
	}
	var downs []unrolled
	for i, t := range pvs.Spec.Targets {
		switch {
		case len(t.Repositories) > 0:
			for _, rt := range t.Repositories {
				pns := rt.PackageNames
				if len(pns) == 0 {
					pns = []string{um.Key.Package}
				}
				for _, pn := range pns {
					downs = append(downs, unrolled{target: i, template: t.Template, repoDefault: rt.Name, packageDefault: pn,
						targetVar: map[string]any{"repo": rt.Name, "package": pn}})
				}
			}
		case t.RepositorySelector != nil:
			sel, err := metav1.LabelSelectorAsSelector(t.RepositorySelector)
			if err != nil {
				return nil, fmt.Errorf("%w: spec.targets[%d].repositorySelector: %v", repository.ErrInvalidInput, i, err)
			}
			for _, name := range slices.Sorted(maps.Keys(specs)) {
				spec := specs[name]
				if sel.Matches(labels.Set(spec.Labels)) {
					downs = append(downs, unrolled{target: i, template: t.Template, repoDefault: name, packageDefault: um.Key.Package,
						targetVar: repositoryVar(spec, pvs.Namespace)})
				}
			}
		case t.ObjectSelector != nil:
			os := t.ObjectSelector
			sel, err := metav1.LabelSelectorAsSelector(&os.LabelSelector)
			if err != nil {
				return nil, fmt.Errorf("%w: spec.targets[%d].objectSelector: %v", repository.ErrInvalidInput, i, err)
			}
			g, v := splitAPIVersion(os.APIVersion)
			q := ObjectQuery{Namespace: pvs.Namespace, Group: g, Version: v, Kind: os.Kind, Selector: sel}
			if os.Name != nil {
				q.Name = *os.Name
			}
			if o.Objects == nil {
				continue
			}
			objs, err := o.Objects.ListObjects(ctx, q)
			if err != nil {
				return nil, fmt.Errorf("variant: spec.targets[%d].objectSelector: %w", i, err)
			}
			for _, u := range objs {
				downs = append(downs, unrolled{target: i, template: t.Template, repoDefault: u.GetName(), packageDefault: um.Key.Package,
					targetVar: objectVar(u)})
			}
		}
	}

	pinned := &Upstream{Repo: um.Key.Repository, Package: um.Key.Package, Revision: um.Key.Revision}
	byName := map[string]*PackageVariant{}
	from := map[string]int{}
	var out []*PackageVariant
	for _, d := range downs {
		spec, err := renderSpec(ctx, env, pinned, d, upstreamVar, specs, pvs.Namespace)
		if err != nil {
			return nil, err
		}
		name := VariantName(pvs.Name, spec.Downstream.Repo, spec.Downstream.Package)
		if _, dup := byName[name]; dup {
			return nil, fmt.Errorf("variant: %w: spec.targets[%d] and spec.targets[%d] both yield the downstream %s/%s",
				repository.ErrInvalidInput, from[name], d.target, spec.Downstream.Repo, spec.Downstream.Package)
		}
		ctrl := true
		pv := &PackageVariant{
			TypeMeta: metav1.TypeMeta{APIVersion: PackageVariantAPIVersion, Kind: PackageVariantKind},
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: pvs.Namespace,
				Labels: map[string]string{SetLabel: pvs.Name},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: PackageVariantSetAPIVersion, Kind: PackageVariantSetKind, Name: pvs.Name, UID: pvs.UID, Controller: &ctrl,
				}},
			},
			Spec: *spec,
		}
		byName[name] = pv
		from[name] = d.target
		out = append(out, pv)
	}
	slices.SortFunc(out, func(a, b *PackageVariant) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// repositorySpecs returns the repository specs by name.
func repositorySpecs(ctx context.Context, o Options) (map[string]repository.Spec, error) {
	out := map[string]repository.Spec{}
	if o.RepositorySpecs != nil {
		for _, s := range o.RepositorySpecs {
			out[s.Name] = s
		}
		return out, nil
	}
	names, err := o.Repositories.Names(ctx)
	if err != nil {
		return nil, fmt.Errorf("variant: list repositories: %w", err)
	}
	for _, n := range names {
		out[n] = repository.Spec{Name: n}
	}
	return out, nil
}

func stringsToAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// repositoryVar is the CEL value of a repository: its object's name,
// namespace, labels and annotations, as Porch gives them, plus its spec's
// description and deployment flag.
func repositoryVar(s repository.Spec, namespace string) map[string]any {
	return map[string]any{
		"name": s.Name, "namespace": namespace, "labels": stringsToAny(s.Labels), "annotations": map[string]any{},
		"description": s.Description, "deployment": s.Deployment,
	}
}

// objectVar is the CEL value of a selected object: name, namespace, labels
// and annotations, as Porch gives them.
func objectVar(u *unstructured.Unstructured) map[string]any {
	return map[string]any{
		"name": u.GetName(), "namespace": u.GetNamespace(),
		"labels": stringsToAny(u.GetLabels()), "annotations": stringsToAny(u.GetAnnotations()),
	}
}

// renderSpec applies d's template.
func renderSpec(ctx context.Context, env *celEnv, up *Upstream, d unrolled, upstreamVar map[string]any,
	specs map[string]repository.Spec, namespace string) (*PackageVariantSpec, error) {
	u := *up
	spec := &PackageVariantSpec{Upstream: &u, Downstream: &Downstream{Repo: d.repoDefault, Package: d.packageDefault}}
	vars := map[string]any{
		VarRepoDefault: d.repoDefault, VarPackageDefault: d.packageDefault,
		VarUpstream: upstreamVar, VarTarget: d.targetVar,
	}
	t := d.template
	f := fmt.Sprintf("spec.targets[%d].template", d.target)
	eval := func(field, expr string) (string, error) { return env.eval(ctx, f+field, expr, vars) }
	if t != nil && t.Downstream != nil {
		if r := t.Downstream.Repo; r != nil && *r != "" {
			spec.Downstream.Repo = *r
		}
		if r := t.Downstream.RepoExpr; r != nil && *r != "" {
			v, err := eval(".downstream.repoExpr", *r)
			if err != nil {
				return nil, err
			}
			spec.Downstream.Repo = v
		}
	}
	rs, ok := specs[spec.Downstream.Repo]
	if !ok {
		return nil, fmt.Errorf("variant: %s: repository %q could not be loaded: %w", f, spec.Downstream.Repo, repository.ErrNotFound)
	}
	vars[VarRepository] = repositoryVar(rs, namespace)
	if t == nil {
		return spec, nil
	}
	var err error
	if t.Downstream != nil {
		if p := t.Downstream.Package; p != nil && *p != "" {
			spec.Downstream.Package = *p
		}
		if p := t.Downstream.PackageExpr; p != nil && *p != "" {
			if spec.Downstream.Package, err = eval(".downstream.packageExpr", *p); err != nil {
				return nil, err
			}
		}
	}
	if t.AdoptionPolicy != nil {
		spec.AdoptionPolicy = *t.AdoptionPolicy
	}
	if t.DeletionPolicy != nil {
		spec.DeletionPolicy = *t.DeletionPolicy
	}
	if spec.Labels, err = overlay(ctx, env, f+".labelExprs", t.Labels, t.LabelExprs, vars); err != nil {
		return nil, err
	}
	if spec.Annotations, err = overlay(ctx, env, f+".annotationExprs", t.Annotations, t.AnnotationExprs, vars); err != nil {
		return nil, err
	}
	if pc := t.PackageContext; pc != nil {
		data, err := overlay(ctx, env, f+".packageContext.dataExprs", pc.Data, pc.DataExprs, vars)
		if err != nil {
			return nil, err
		}
		keys := map[string]bool{}
		for _, k := range pc.RemoveKeys {
			keys[k] = true
		}
		for i, e := range pc.RemoveKeyExprs {
			k, err := env.eval(ctx, fmt.Sprintf("%s.packageContext.removeKeyExprs[%d]", f, i), e, vars)
			if err != nil {
				return nil, err
			}
			keys[k] = true
		}
		var remove []string
		if len(keys) > 0 {
			remove = slices.Sorted(maps.Keys(keys))
		}
		spec.PackageContext = &PackageContext{Data: data, RemoveKeys: remove}
	}
	for i, it := range t.Injectors {
		inj := InjectionSelector{Group: it.Group, Version: it.Version, Kind: it.Kind}
		if it.Name != nil {
			inj.Name = *it.Name
		}
		if it.NameExpr != nil && *it.NameExpr != "" {
			if inj.Name, err = env.eval(ctx, fmt.Sprintf("%s.injectors[%d].nameExpr", f, i), *it.NameExpr, vars); err != nil {
				return nil, err
			}
		}
		spec.Injectors = append(spec.Injectors, inj)
	}
	if p := t.Pipeline; p != nil {
		var pl revision.Pipeline
		if pl.Validators, err = renderFunctions(ctx, env, f+".pipeline.validators", p.Validators, vars); err != nil {
			return nil, err
		}
		if pl.Mutators, err = renderFunctions(ctx, env, f+".pipeline.mutators", p.Mutators, vars); err != nil {
			return nil, err
		}
		if len(pl.Validators) > 0 || len(pl.Mutators) > 0 {
			spec.Pipeline = &pl
		}
	}
	spec.Bindings = slices.Clone(t.Bindings)
	if t.Dependencies != nil {
		d := *t.Dependencies
		d.ProviderRepos = slices.Clone(d.ProviderRepos)
		spec.Dependencies = &d
	}
	return spec, nil
}

func renderFunctions(ctx context.Context, env *celEnv, field string, fts []FunctionTemplate, vars map[string]any) ([]revision.Function, error) {
	var out []revision.Function
	for i, ft := range fts {
		f := ft.Function
		cm, err := overlay(ctx, env, fmt.Sprintf("%s[%d].configMapExprs", field, i), ft.ConfigMap, ft.ConfigMapExprs, vars)
		if err != nil {
			return nil, err
		}
		f.ConfigMap = cm
		out = append(out, f)
	}
	return out, nil
}

// overlay copies in and sets the entries the expressions compute.
func overlay(ctx context.Context, env *celEnv, field string, in map[string]string, exprs []MapExpr, vars map[string]any) (map[string]string, error) {
	out := maps.Clone(in)
	if out == nil {
		out = map[string]string{}
	}
	for i, me := range exprs {
		var k, v string
		var err error
		if me.Key != nil {
			k = *me.Key
		}
		if me.KeyExpr != nil {
			if k, err = env.eval(ctx, fmt.Sprintf("%s[%d].keyExpr", field, i), *me.KeyExpr, vars); err != nil {
				return nil, err
			}
		}
		if me.Value != nil {
			v = *me.Value
		}
		if me.ValueExpr != nil {
			if v, err = env.eval(ctx, fmt.Sprintf("%s[%d].valueExpr", field, i), *me.ValueExpr, vars); err != nil {
				return nil, err
			}
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// SyncSet syncs the PackageVariantSet pvs: it unrolls it (see Unroll),
// removes the variants it generated before and no longer generates (found
// by the config.porch.kpt.dev/packagevariantset label in the Metadata of
// the downstream revisions, each released per the deletion policy recorded
// beside it), then syncs every generated variant with Sync, at most
// Options.Concurrency at once. Like Sync it is idempotent, and a set with a
// DeletionTimestamp is removed (see RemoveSet). With
// Options.Downstreams, only the variants whose downstream repository it
// accepts are synced, removed or in the SetResult.
//
// The writes to a downstream repository that several variants write to
// are made in write batches when the repository offers them
// (repository.Batcher) and the Engine can work through them (an
// *engine.Engine, or see Scoper), one per 256 variants: nothing of a
// batch's writes is visible until all its variants are synced, and then
// all of them are. A failed variant leaves nothing in the
// batch. A commit of the batch that fails writes nothing: when it lost a
// race with another writer (repository.ErrConflict), the variants that
// wrote to that repository are synced again without a batch; otherwise
// they fail with its error.
//
// Errors: Unroll's errors, with nothing written and the Stalled condition
// True; otherwise the variants' errors joined (errors.Join), each also in
// its Result. The SetResult is never nil.
func SyncSet(ctx context.Context, e Engine, pvs *PackageVariantSet, opts *Options) (*SetResult, error) {
	res := &SetResult{Set: setName(pvs)}
	o, err := opts.withDefaults(e)
	if err != nil {
		return res, err
	}
	if pvs.DeletionTimestamp != nil {
		return RemoveSet(ctx, e, pvs, opts)
	}
	r := &Result{}
	env, err := newCELEnv(o)
	if err != nil {
		return res, err
	}
	variants, err := unroll(ctx, e, pvs, o, env)
	if err != nil {
		reason := "UnexpectedError"
		var ve *ValidationError
		var ue *upstreamError
		switch {
		case errors.As(err, &ve):
			reason = ReasonValidationError
		case errors.As(err, &ue):
			reason = ReasonUpstreamNotFound
		}
		r.stalled(o.Now(), reason, err)
		res.Conditions = r.Conditions
		return res, err
	}
	desired := map[string]bool{}
	for _, pv := range variants {
		desired[ownerID(pv)] = true
	}
	if o.Downstreams != nil {
		variants = slices.DeleteFunc(variants, func(pv *PackageVariant) bool { return !o.Downstreams(pv.Spec.Downstream.Repo) })
	}
	res.Variants = variants
	index, err := scanAll(ctx, o.Repositories, o.Downstreams)
	if err != nil {
		r.failed(o.Now(), err)
		res.Conditions = r.Conditions
		return res, err
	}
	removed, err := removeStale(ctx, e, pvs, o, desired, index)
	res.Removed = removed
	if err != nil {
		r.failed(o.Now(), err)
		res.Conditions = r.Conditions
		return res, err
	}

	res.Results = make([]*Result, len(variants))
	var errs []error
	for start := 0; start < len(variants); start += maxBatchVariants {
		end := min(start+maxBatchVariants, len(variants))
		chunk, results := variants[start:end], res.Results[start:end]
		verrs := make([]error, len(chunk))
		targets := make([]string, len(chunk))
		for i, pv := range chunk {
			targets[i] = pv.Spec.Downstream.Repo
		}
		be, bo, batches := batched(ctx, e, o, targets, false)
		syncAll := func(e Engine, o Options, which func(i int) bool, index map[[2]string][]revision.PackageRevision) {
			g, gctx := errgroup.WithContext(ctx)
			g.SetLimit(o.Concurrency)
			for i, pv := range chunk {
				if !which(i) {
					continue
				}
				g.Go(func() error {
					r, err := syncVariant(gctx, e, pv, o, index)
					pv.Status = r.Status()
					results[i], verrs[i] = r, err
					return nil
				})
			}
			_ = g.Wait()
		}
		syncAll(be, bo, func(int) bool { return true }, index)
		redo := commitBatches(ctx, o, batches, results, verrs)
		for i, pv := range chunk {
			if verrs[i] != nil && results[i] != nil {
				pv.Status = results[i].Status() // a batch failed it
			}
		}
		if len(redo) > 0 {
			// A batch lost a race: its variants are synced again, each
			// write on its own, on what is there now.
			syncAll(e, o, func(i int) bool { return redo[i] }, nil)
		}
		for _, err := range verrs {
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	err = errors.Join(errs...)
	r.setCondition(o.Now(), ConditionStalled, metav1.ConditionFalse, ReasonValid, "all validation checks passed")
	if err != nil {
		r.failed(o.Now(), fmt.Errorf("%d of %d package variants failed: %w", len(errs), len(variants), err))
	} else {
		r.setCondition(o.Now(), ConditionReady, metav1.ConditionTrue, ReasonReconciled, "package variants successfully reconciled")
	}
	res.Conditions = r.Conditions
	return res, err
}

// RemoveSet removes every variant pvs generated: each downstream revision
// labelled with the set is released per the deletion policy recorded
// beside it (see Remove). As SyncSet's writes, the releases write each
// repository that several variants' revisions lie in through a write
// batch where the repository offers one, one per 256 variants; a batch
// whose commit lost a race writes nothing, and its variants are released
// again without it. It returns the first error, after trying every
// revision. Deleting a draft checks, through the engine, that no revision
// of any repository was created from it (engine.Engine.Delete); the
// removal makes that check against one listing of the repositories
// (engine.Engine.WithReferenceSnapshot) rather than one per deleted
// draft, where the Engine can be scoped (see Scoper). With
// Options.Downstreams, only the revisions in the repositories it accepts
// are released.
func RemoveSet(ctx context.Context, e Engine, pvs *PackageVariantSet, opts *Options) (*SetResult, error) {
	res := &SetResult{Set: setName(pvs)}
	o, err := opts.withDefaults(e)
	if err != nil {
		return res, err
	}
	r := &Result{}
	index, err := scanAll(ctx, o.Repositories, o.Downstreams)
	if err != nil {
		r.failed(o.Now(), err)
		res.Conditions = r.Conditions
		return res, err
	}
	removed, err := removeStale(ctx, e, pvs, o, nil, index)
	res.Removed = removed
	if err != nil {
		r.failed(o.Now(), err)
	} else {
		r.setCondition(o.Now(), ConditionReady, metav1.ConditionTrue, ReasonDeleted, "package variants removed")
	}
	res.Conditions = r.Conditions
	return res, err
}

// removeStale releases the downstream revisions of the set's variants that
// are not in desired. As SyncSet's syncs, the releases write each
// repository that several of them write to through a write batch, one
// per maxBatchVariants variants; a batch that lost a race is released
// again without one.
func removeStale(ctx context.Context, e Engine, pvs *PackageVariantSet, o Options, desired map[string]bool,
	index map[[2]string][]revision.PackageRevision) ([]*Result, error) {
	owned := owners(index, func(md revision.Metadata) bool {
		return md.Labels[SetLabel] == pvs.Name && md.Annotations[OwnerAnnotation] != ""
	})
	var gone []string
	for _, owner := range slices.Sorted(maps.Keys(owned)) {
		ns, _, ok := strings.Cut(owner, "/")
		if !ok {
			ns = ""
		}
		if !desired[owner] && ns == pvs.Namespace {
			gone = append(gone, owner)
		}
	}
	out := make([]*Result, len(gone))
	errs := make([]error, len(gone))
	for start := 0; start < len(gone); start += maxBatchVariants {
		end := min(start+maxBatchVariants, len(gone))
		chunk, results, cerrs := gone[start:end], out[start:end], errs[start:end]
		var targets []string
		for _, owner := range chunk {
			seen := map[string]bool{}
			for _, pr := range owned[owner] {
				if repo := pr.Meta().Key.Repository; !seen[repo] {
					seen[repo] = true
					targets = append(targets, repo)
				}
			}
		}
		// Each pass checks the drafts' references against one listing
		// (engine.Engine.WithReferenceSnapshot), not one per deleted
		// draft.
		be, bo, batches := batched(ctx, e, o, targets, true)
		removeAll := func(e Engine, o Options, which func(i int) bool) {
			for i, owner := range chunk {
				if which(i) {
					results[i], cerrs[i] = release(ctx, e, o, owner, owned[owner])
				}
			}
		}
		removeAll(be, bo, func(int) bool { return true })
		if redo := commitBatches(ctx, o, batches, results, cerrs); len(redo) > 0 {
			se, _ := scope(e, nil, true)
			removeAll(se, o, func(i int) bool { return redo[i] })
		}
	}
	var first error
	for _, err := range errs {
		if err != nil {
			first = err
			break
		}
	}
	return out, first
}

// release releases the revisions owned by owner (a removed variant's), per
// the deletion policy recorded beside each.
func release(ctx context.Context, e Engine, o Options, owner string, owned []revision.PackageRevision) (*Result, error) {
	ns, name, ok := strings.Cut(owner, "/")
	if !ok {
		ns, name = "", owner
	}
	pv := &PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	res := &Result{Variant: owner}
	s := &syncer{e: e, o: o, pv: pv, res: res, owner: owner}
	err := s.retry(ctx, func(ctx context.Context) error {
		var first error
		for _, pr := range owned {
			policy := DeletionPolicy(pr.Meta().Metadata.Annotations[DeletionPolicyAnnotation])
			if policy == "" {
				policy = DeletionPolicyDelete
			}
			if err := s.deleteOrOrphan(ctx, pr, policy); err != nil && first == nil {
				first = err
			}
		}
		return first
	})
	res.released(o.Now(), err, "no longer targeted by the set")
	return res, err
}
