package update

import (
	"maps"
	"reflect"

	"github.com/configasdata/cad/internal/imageref"
	"github.com/configasdata/cad/revision"
)

// MergeKptfile merges the Kptfiles of a package (any of them may be nil)
// in a simplified form of kpt's Kptfile merge:
//
//   - metadata.name, metadata.namespace, upstream, upstreamLock, inventory
//     and status are the local ones (callers set upstream and upstreamLock
//     for the new upstream);
//   - labels and annotations are merged per key: a key changed upstream
//     takes the updated value, a key deleted upstream and unchanged
//     locally is removed, local keys are otherwise kept;
//   - info is the updated value when local info equals the original's,
//     else the local value;
//   - pipeline mutators and validators are merged per function, keyed by
//     name, else by image without tag, else by exec: see mergeFunctions.
//
// With no local Kptfile the updated one is returned; with neither, nil.
// The result keeps the local document's formatting when re-encoded.
func MergeKptfile(original, updated, local *revision.Kptfile) *revision.Kptfile {
	if local == nil {
		return updated
	}
	if updated == nil {
		return local
	}
	if original == nil {
		original = &revision.Kptfile{}
	}
	out := *local
	out.Metadata.Labels = mergeStringMap(original.Metadata.Labels, updated.Metadata.Labels, local.Metadata.Labels)
	out.Metadata.Annotations = mergeStringMap(original.Metadata.Annotations, updated.Metadata.Annotations, local.Metadata.Annotations)
	if reflect.DeepEqual(original.Info, local.Info) {
		out.Info = updated.Info
	}
	out.Pipeline = mergePipeline(original.Pipeline, updated.Pipeline, local.Pipeline)
	return &out
}

func mergeStringMap(o, u, l map[string]string) map[string]string {
	out := maps.Clone(l)
	if out == nil {
		out = map[string]string{}
	}
	for k, uv := range u {
		if ov, ok := o[k]; !ok || ov != uv {
			out[k] = uv
		}
	}
	for k, ov := range o {
		if _, inU := u[k]; !inU && out[k] == ov {
			delete(out, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func mergePipeline(o, u, l *revision.Pipeline) *revision.Pipeline {
	if o == nil {
		o = &revision.Pipeline{}
	}
	if u == nil {
		u = &revision.Pipeline{}
	}
	if l == nil {
		l = &revision.Pipeline{}
	}
	out := &revision.Pipeline{
		Mutators:   mergeFunctions(o.Mutators, u.Mutators, l.Mutators),
		Validators: mergeFunctions(o.Validators, u.Validators, l.Validators),
	}
	if len(out.Mutators) == 0 && len(out.Validators) == 0 {
		return nil
	}
	return out
}

// functionKey identifies a function in a pipeline for the merge.
func functionKey(f revision.Function) string {
	switch {
	case f.Name != "":
		return "name:" + f.Name
	case f.Image != "":
		return "image:" + imageref.Split(f.Image).Name
	default:
		return "exec:" + f.Exec
	}
}

// mergeFunctions merges three lists of functions by functionKey, in local
// order: a function changed upstream takes the updated version; one
// deleted upstream is dropped unless changed locally; local additions are
// kept; upstream additions are appended.
func mergeFunctions(o, u, l []revision.Function) []revision.Function {
	index := func(fs []revision.Function) map[string]revision.Function {
		m := make(map[string]revision.Function, len(fs))
		for _, f := range fs {
			m[functionKey(f)] = f
		}
		return m
	}
	om, um, lm := index(o), index(u), index(l)
	var out []revision.Function
	for _, lf := range l {
		k := functionKey(lf)
		of, inO := om[k]
		uf, inU := um[k]
		switch {
		case !inO: // added locally (or in both: local wins)
			out = append(out, lf)
		case !inU: // deleted upstream
			if !reflect.DeepEqual(of, lf) {
				out = append(out, lf)
			}
		case !reflect.DeepEqual(of, uf): // changed upstream
			out = append(out, uf)
		default:
			out = append(out, lf)
		}
	}
	for _, uf := range u {
		k := functionKey(uf)
		_, inO := om[k]
		_, inL := lm[k]
		if !inO && !inL {
			out = append(out, uf)
		}
	}
	return out
}
