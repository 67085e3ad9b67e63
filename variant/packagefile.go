package variant

import (
	"bytes"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/revision"
)

// A package without a Kptfile keeps what a variant writes in cad's package
// file (revision.PackageFileName) instead: its pipeline functions in
// spec.pipeline, its conditions and readiness gates in status.conditions
// and spec.readinessGates, with the same ownership rules as in a Kptfile.
// The file is created when the package has none and there is something to
// write.

// packageFileFunctions is applyFunctions for a package without a Kptfile.
func packageFileFunctions(files revision.Files, pv string, p *revision.Pipeline) (revision.Files, error) {
	var add revision.Pipeline
	if p != nil {
		add = *p
	}
	data, ok := files.Get(revision.PackageFileName)
	if !ok && len(add.Mutators) == 0 && len(add.Validators) == 0 {
		return files, nil
	}
	if ok && len(add.Mutators) == 0 && len(add.Validators) == 0 && !bytes.Contains(data, []byte(FunctionPrefix+"."+pv+".")) {
		return files, nil
	}
	if !ok {
		var err error
		if data, err = revision.NewPackageFile("").Encode(); err != nil {
			return revision.Files{}, err
		}
	} else if _, err := revision.ParsePackageFile(data); err != nil {
		return revision.Files{}, err
	}
	rn, err := yaml.Parse(string(data))
	if err != nil {
		return revision.Files{}, err
	}
	changed := false
	for _, list := range []struct {
		field string
		add   []revision.Function
	}{{"mutators", add.Mutators}, {"validators", add.Validators}} {
		cur, err := rn.Pipe(yaml.Lookup("spec", "pipeline", list.field))
		if err != nil {
			return revision.Files{}, err
		}
		var old, kept []*yaml.Node
		if cur != nil {
			old = cur.Content()
		}
		for _, n := range old {
			name, _ := yaml.NewRNode(n).GetString("name")
			if !isVariantFunction(name, pv) {
				kept = append(kept, n)
			}
		}
		var out []*yaml.Node
		for i, f := range list.add {
			f.Name = variantFunctionName(pv, f.Name, i)
			b, err := yaml.Marshal(f)
			if err != nil {
				return revision.Files{}, err
			}
			n, err := yaml.Parse(string(b))
			if err != nil {
				return revision.Files{}, err
			}
			out = append(out, n.YNode())
		}
		out = append(out, kept...)
		if sameNodes(old, out) {
			continue
		}
		changed = true
		if len(out) == 0 {
			if pl, err := rn.Pipe(yaml.Lookup("spec", "pipeline")); err != nil {
				return revision.Files{}, err
			} else if pl != nil {
				if _, err := pl.Pipe(yaml.Clear(list.field)); err != nil {
					return revision.Files{}, err
				}
			}
			continue
		}
		seq := yaml.NewRNode(&yaml.Node{Kind: yaml.SequenceNode, Content: out})
		if err := rn.PipeE(yaml.LookupCreate(yaml.MappingNode, "spec", "pipeline"), yaml.SetField(list.field, seq)); err != nil {
			return revision.Files{}, err
		}
	}
	if !changed {
		return files, nil
	}
	if pl, _ := rn.Pipe(yaml.Lookup("spec", "pipeline")); pl != nil && len(pl.Content()) == 0 {
		if sp, _ := rn.Pipe(yaml.Lookup("spec")); sp != nil {
			if _, err := sp.Pipe(yaml.Clear("pipeline")); err != nil {
				return revision.Files{}, err
			}
		}
	}
	s, err := rn.String()
	if err != nil {
		return revision.Files{}, err
	}
	return files.With(revision.PackageFileName, []byte(s))
}

// sameNodes reports whether a and b encode the same.
func sameNodes(a, b []*yaml.Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		sa, err1 := yaml.String(a[i])
		sb, err2 := yaml.String(b[i])
		if err1 != nil || err2 != nil || sa != sb {
			return false
		}
	}
	return true
}

// packageFileConditions is kptfileConditions for a package without a
// Kptfile.
func packageFileConditions(files revision.Files, prefix string, conds []revision.Condition, gates []string) (revision.Files, error) {
	data, ok := files.Get(revision.PackageFileName)
	if !ok && len(conds) == 0 && len(gates) == 0 {
		return files, nil
	}
	if ok && len(conds) == 0 && len(gates) == 0 && !bytes.Contains(data, []byte(prefix)) {
		return files, nil
	}
	pf := revision.NewPackageFile("")
	if ok {
		var err error
		if pf, err = revision.ParsePackageFile(data); err != nil {
			return revision.Files{}, err
		}
	}
	want := map[string]bool{}
	var newConds []revision.Condition
	for _, c := range pf.Conditions {
		if !strings.HasPrefix(c.Type, prefix) {
			newConds = append(newConds, c)
		}
	}
	for _, c := range conds {
		want[c.Type] = true
		if i := slices.IndexFunc(newConds, func(o revision.Condition) bool { return o.Type == c.Type }); i >= 0 {
			newConds[i] = c
		} else {
			newConds = append(newConds, c)
		}
	}
	// Keep the family's conditions in their old order where they stay.
	var ordered []revision.Condition
	for _, c := range pf.Conditions {
		if strings.HasPrefix(c.Type, prefix) && want[c.Type] {
			i := slices.IndexFunc(newConds, func(o revision.Condition) bool { return o.Type == c.Type })
			ordered = append(ordered, newConds[i])
		}
	}
	for _, c := range newConds {
		if !slices.ContainsFunc(ordered, func(o revision.Condition) bool { return o.Type == c.Type }) {
			ordered = append(ordered, c)
		}
	}
	wantGate := map[string]bool{}
	for _, g := range gates {
		wantGate[g] = true
	}
	have := map[string]bool{}
	var newGates []revision.ReadinessGate
	for _, g := range pf.ReadinessGates {
		if (strings.HasPrefix(g.ConditionType, prefix) && !wantGate[g.ConditionType]) || have[g.ConditionType] {
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
	if slices.Equal(ordered, pf.Conditions) && slices.Equal(newGates, pf.ReadinessGates) {
		return files, nil
	}
	pf.Conditions, pf.ReadinessGates = ordered, newGates
	out, err := pf.Encode()
	if err != nil {
		return revision.Files{}, err
	}
	return files.With(revision.PackageFileName, out)
}
