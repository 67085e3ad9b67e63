package variant

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// mutation returns the variant's mutations as an engine.Mutation.
func (s *syncer) mutation() engine.Mutation {
	return func(ctx context.Context, files revision.Files) (revision.Files, error) {
		return s.mutate(ctx, files)
	}
}

// mutate applies the variant's mutations to files in Porch's order:
// package context, pipeline functions, injection, then bindings. Each step
// changes a file only when its content changes, so mutate(mutate(x)) ==
// mutate(x) byte for byte.
func (s *syncer) mutate(ctx context.Context, files revision.Files) (revision.Files, error) {
	var err error
	if files, err = applyPackageContext(ctx, s.e.YAMLLimits(), files, s.spec.PackageContext, s.spec.Downstream.Package); err != nil {
		return revision.Files{}, fmt.Errorf("variant: %s: package context: %w", s.owner, err)
	}
	if files, err = applyFunctions(files, s.pv.Name, s.spec.Pipeline); err != nil {
		return revision.Files{}, fmt.Errorf("variant: %s: pipeline: %w", s.owner, err)
	}
	if files, err = s.inject(ctx, files); err != nil {
		return revision.Files{}, fmt.Errorf("variant: %s: injection: %w", s.owner, err)
	}
	if files, err = s.bind(ctx, files); err != nil {
		return revision.Files{}, fmt.Errorf("variant: %s: bindings: %w", s.owner, err)
	}
	return files, nil
}

// applyPackageContext sets and removes the keys of pc in the data of the
// package context ConfigMap, creating package-context.yaml (as kpt's
// gen-pkg-context writes it) when the package has none. An existing
// package-context.yaml over a bound of lim (the engine's; nil for the
// defaults) is refused with the *revision.YAMLLimitError.
func applyPackageContext(ctx context.Context, lim *revision.YAMLLimits, files revision.Files, pc *PackageContext, pkg string) (revision.Files, error) {
	if pc == nil || (len(pc.Data) == 0 && len(pc.RemoveKeys) == 0) {
		return files, nil
	}
	data, ok := files.Get(PackageContextFile)
	var n *yaml.RNode
	if ok {
		if err := revision.CheckYAML(ctx, PackageContextFile, data, lim); err != nil {
			return revision.Files{}, err
		}
		var err error
		if n, err = yaml.Parse(string(data)); err != nil {
			return revision.Files{}, fmt.Errorf("%w: %s: %v", repository.ErrInvalidInput, PackageContextFile, err)
		}
		if n.GetKind() != "ConfigMap" || n.GetName() != PackageContextName {
			return revision.Files{}, fmt.Errorf("%w: %s does not hold the ConfigMap %s", repository.ErrInvalidInput, PackageContextFile, PackageContextName)
		}
	} else {
		n = yaml.MustParse(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: %s\n",
			PackageContextName, strconv.Quote(path.Base(pkg))))
	}
	old := n.GetDataMap()
	want := maps.Clone(old)
	if want == nil {
		want = map[string]string{}
	}
	maps.Copy(want, pc.Data)
	for _, k := range pc.RemoveKeys {
		delete(want, k)
	}
	if ok && maps.Equal(old, want) {
		return files, nil
	}
	// Set key by key, so that untouched keys keep their position and
	// comments.
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, had := old[k]; had && v == want[k] {
			continue
		}
		if err := n.PipeE(yaml.LookupCreate(yaml.MappingNode, "data"), yaml.SetField(k, yaml.NewStringRNode(want[k]))); err != nil {
			return revision.Files{}, err
		}
	}
	for k := range old {
		if _, keep := want[k]; !keep {
			if err := n.PipeE(yaml.Lookup("data"), yaml.Clear(k)); err != nil {
				return revision.Files{}, err
			}
		}
	}
	out, err := n.String()
	if err != nil {
		return revision.Files{}, err
	}
	return files.With(PackageContextFile, []byte(out))
}

// isVariantFunction reports whether name is that of a function the
// PackageVariant pv added: "PackageVariant.<pv>.<fn>.<index>".
func isVariantFunction(name, pv string) bool {
	rest, ok := strings.CutPrefix(name, FunctionPrefix+"."+pv+".")
	if !ok {
		return false
	}
	fn, idx, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(fn, ".") || strings.Contains(idx, ".") {
		return false
	}
	_, err := strconv.Atoi(idx)
	return err == nil
}

// variantFunctionName returns the name under which pv adds its function
// fn at index i.
func variantFunctionName(pv, fn string, i int) string {
	return fmt.Sprintf("%s.%s.%s.%d", FunctionPrefix, pv, fn, i)
}

// applyFunctions re-owns pv's functions in the Kptfile (without one, in
// the package file; see packagefile.go): those it added before are
// removed, and p's are prepended to the mutators and validators under
// their PackageVariant names; the user's functions stay as they are.
func applyFunctions(files revision.Files, pv string, p *revision.Pipeline) (revision.Files, error) {
	data, ok := files.Get(revision.KptfileName)
	if !ok {
		return packageFileFunctions(files, pv, p)
	}
	if (p == nil || (len(p.Mutators) == 0 && len(p.Validators) == 0)) && !bytes.Contains(data, []byte(FunctionPrefix+"."+pv+".")) {
		return files, nil // nothing to add and nothing of pv's to remove
	}
	kf, err := revision.ParseKptfile(data)
	if err != nil {
		return revision.Files{}, err
	}
	var old revision.Pipeline
	if kf.Pipeline != nil {
		old = *kf.Pipeline
	}
	var add revision.Pipeline
	if p != nil {
		add = *p
	}
	mutators := reown(old.Mutators, add.Mutators, pv)
	validators := reown(old.Validators, add.Validators, pv)
	if reflect.DeepEqual(mutators, old.Mutators) && reflect.DeepEqual(validators, old.Validators) {
		return files, nil
	}
	if len(mutators) == 0 && len(validators) == 0 {
		kf.Pipeline = nil
	} else {
		kf.Pipeline = &revision.Pipeline{Mutators: mutators, Validators: validators}
	}
	out, err := kf.Encode()
	if err != nil {
		return revision.Files{}, err
	}
	return files.With(revision.KptfileName, out)
}

// reown returns add, named for pv, followed by the functions of existing
// that pv did not add.
func reown(existing, add []revision.Function, pv string) []revision.Function {
	var out []revision.Function
	for i, f := range add {
		f.Name = variantFunctionName(pv, f.Name, i)
		f.ConfigMap = maps.Clone(f.ConfigMap)
		out = append(out, f)
	}
	for _, f := range existing {
		if !isVariantFunction(f.Name, pv) {
			out = append(out, f)
		}
	}
	if len(out) == 0 && existing == nil {
		return nil
	}
	return out
}

// kptfileConditions sets the conditions and readiness gates of one family
// (prefix "config.injection." or "config.binding.") in the Kptfile (without
// one, in the package file): conds
// replace the family's conditions, gates its gates; the family's
// conditions and gates not listed are removed.
func kptfileConditions(files revision.Files, prefix string, conds []revision.Condition, gates []string) (revision.Files, error) {
	data, ok := files.Get(revision.KptfileName)
	if !ok {
		return packageFileConditions(files, prefix, conds, gates)
	}
	if len(conds) == 0 && len(gates) == 0 && !bytes.Contains(data, []byte(prefix)) {
		return files, nil // nothing to set and nothing of the family to remove
	}
	kf, err := revision.ParseKptfile(data)
	if err != nil {
		return revision.Files{}, err
	}
	changed := false
	want := map[string]bool{}
	for _, c := range conds {
		want[c.Type] = true
		if cur, ok := kf.Condition(c.Type); !ok || cur != c {
			kf.SetCondition(c)
			changed = true
		}
	}
	if kf.Status != nil {
		for _, c := range slices.Clone(kf.Status.Conditions) {
			if strings.HasPrefix(c.Type, prefix) && !want[c.Type] {
				kf.RemoveCondition(c.Type)
				changed = true
			}
		}
	}
	var oldGates []revision.ReadinessGate
	if kf.Info != nil {
		oldGates = kf.Info.ReadinessGates
	}
	var newGates []revision.ReadinessGate
	have := map[string]bool{}
	wantGate := map[string]bool{}
	for _, g := range gates {
		wantGate[g] = true
	}
	for _, g := range oldGates {
		if strings.HasPrefix(g.ConditionType, prefix) && !wantGate[g.ConditionType] {
			continue
		}
		if have[g.ConditionType] {
			continue
		}
		have[g.ConditionType] = true
		newGates = append(newGates, g)
	}
	for _, g := range slices.Sorted(slices.Values(gates)) {
		if !have[g] {
			have[g] = true
			newGates = append(newGates, revision.ReadinessGate{ConditionType: g})
		}
	}
	if !slices.Equal(newGates, oldGates) {
		if kf.Info == nil {
			kf.Info = &revision.PackageInfo{}
		}
		kf.Info.ReadinessGates = newGates
		changed = true
	}
	if !changed {
		return files, nil
	}
	out, err := kf.Encode()
	if err != nil {
		return revision.Files{}, err
	}
	return files.With(revision.KptfileName, out)
}
