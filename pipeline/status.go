package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/internal/yamlstyle"
	"github.com/configasdata/cad/revision"
)

// Rendered condition values, as kpt writes them.
const (
	ConditionRendered   = "Rendered"
	ReasonRenderSuccess = "RenderSuccess"
	ReasonRenderFailed  = "RenderFailed"
)

// kptfileOut is the Kptfile as kpt writes it after a render: struct order,
// wide sequence indent, no comments.
type kptfileOut struct {
	APIVersion   string                 `yaml:"apiVersion,omitempty"`
	Kind         string                 `yaml:"kind,omitempty"`
	Metadata     kptMeta                `yaml:"metadata,omitempty"`
	Upstream     *revision.Upstream     `yaml:"upstream,omitempty"`
	UpstreamLock *revision.UpstreamLock `yaml:"upstreamLock,omitempty"`
	Info         *revision.PackageInfo  `yaml:"info,omitempty"`
	Pipeline     *revision.Pipeline     `yaml:"pipeline,omitempty"`
	Inventory    *revision.Inventory    `yaml:"inventory,omitempty"`
	Status       *revision.Status       `yaml:"status,omitempty"`
}

type kptMeta struct {
	Name        string            `yaml:"name,omitempty"`
	Namespace   string            `yaml:"namespace,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// RenderStatus returns the Kptfile status kpt records for a render with
// these steps; err is the render error or nil.
func RenderStatus(steps []StepResult, err error) (revision.Condition, *revision.RenderStatus) {
	cond := revision.Condition{Type: ConditionRendered, Status: revision.ConditionTrue, Reason: ReasonRenderSuccess}
	if err != nil {
		cond.Status = revision.ConditionFalse
		cond.Reason = ReasonRenderFailed
		cond.Message = err.Error()
	}
	if len(steps) == 0 {
		return cond, nil
	}
	rs := &revision.RenderStatus{}
	var summary []string
	for _, s := range steps {
		ps := revision.PipelineStepResult{
			Name: s.Name, Image: s.Image, Exec: s.Exec, ExecutionError: s.ExecutionError,
			Stderr: s.Stderr, ExitCode: s.ExitCode, When: s.When, Skipped: s.Skipped,
		}
		for _, r := range s.Results {
			ri := toResultItem(r)
			ps.Results = append(ps.Results, ri)
			if r.Severity == SeverityError {
				ps.ErrorResults = append(ps.ErrorResults, ri)
			}
		}
		if s.Validator {
			rs.ValidationSteps = append(rs.ValidationSteps, ps)
		} else {
			rs.MutationSteps = append(rs.MutationSteps, ps)
		}
	}
	if err != nil {
		for _, list := range [][]revision.PipelineStepResult{rs.MutationSteps, rs.ValidationSteps} {
			for _, s := range list {
				id := s.Name
				if id == "" {
					id = s.Image
				}
				if id == "" {
					id = s.Exec
				}
				switch {
				case s.ExecutionError != "":
					summary = append(summary, fmt.Sprintf("%s: %s", id, s.ExecutionError))
				case s.ExitCode != 0:
					summary = append(summary, fmt.Sprintf("%s: exit code %d", id, s.ExitCode))
				}
			}
		}
		for i, l := range summary {
			if i > 0 {
				rs.ErrorSummary += "\n"
			}
			rs.ErrorSummary += l
		}
	}
	return cond, rs
}

func toResultItem(r *Result) revision.ResultItem {
	ri := revision.ResultItem{Message: r.Message, Severity: string(r.Severity), Tags: r.Tags}
	// The reference types are shared with revision; copy them so the
	// Kptfile does not alias the function's results.
	if r.ResourceRef != nil {
		ref := *r.ResourceRef
		ri.ResourceRef = &ref
	}
	if r.Field != nil {
		f := *r.Field
		ri.Field = &f
	}
	if r.File != nil {
		f := *r.File
		ri.File = &f
	}
	return ri
}

// writeStatus records the render status in the root Kptfile of the
// in-memory package, as kpt does after an in-place render. A package
// without a root Kptfile has nowhere to record it and returns nil; a root
// Kptfile that cannot be read, encoded or written back returns an error
// naming it, so that a render never reports success while the Kptfile
// keeps the status of an earlier one.
func (h *hydration) writeStatus(renderErr error) error {
	if h.r.opts.NoRenderStatus {
		return nil
	}
	p := path.Join(rootAbs, revision.KptfileName)
	data, err := h.fs.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	fail := func(err error) error {
		return fmt.Errorf("recording the render status in the root %s: %w", revision.KptfileName, err)
	}
	if err != nil {
		return fail(err)
	}
	kf, err := readKptfile(data, ".")
	if err != nil {
		return fail(err)
	}
	cond, rs := RenderStatus(h.steps, renderErr)
	var out []byte
	if !h.r.opts.KptStyleKptfile {
		kf.SetCondition(cond)
		kf.Status.RenderStatus = rs
		out, err = kf.Encode()
	} else {
		out, err = encodeKptStyle(kf, cond, rs)
	}
	if err != nil {
		return fail(err)
	}
	if err := h.fs.WriteFile(p, out); err != nil {
		return fail(err)
	}
	return nil
}

func encodeKptStyle(kf *revision.Kptfile, cond revision.Condition, rs *revision.RenderStatus) ([]byte, error) {
	st := &revision.Status{}
	if kf.Status != nil {
		st.Conditions = slices.DeleteFunc(slices.Clone(kf.Status.Conditions), func(c revision.Condition) bool {
			return c.Type == ConditionRendered
		})
	}
	st.Conditions = append(st.Conditions, cond)
	st.RenderStatus = rs
	out := kptfileOut{
		APIVersion: kf.APIVersion, Kind: kf.Kind,
		Metadata: kptMeta{Name: kf.Metadata.Name, Namespace: kf.Metadata.Namespace, Labels: kf.Metadata.Labels, Annotations: kf.Metadata.Annotations},
		Upstream: kf.Upstream, UpstreamLock: kf.UpstreamLock, Info: kf.Info, Pipeline: kf.Pipeline,
		Inventory: kf.Inventory, Status: st,
	}
	return yamlstyle.Marshal(out, yaml.WideSequenceStyle)
}

// resultList is kpt's results file (kpt.dev/v1 FunctionResultList).
type resultList struct {
	APIVersion string       `yaml:"apiVersion"`
	Kind       string       `yaml:"kind"`
	Metadata   kptMeta      `yaml:"metadata"`
	ExitCode   int          `yaml:"exitCode"`
	Items      []resultItem `yaml:"items,omitempty"`
}

type resultItem struct {
	Image    string                `yaml:"image,omitempty"`
	Exec     string                `yaml:"exec,omitempty"`
	Stderr   string                `yaml:"stderr,omitempty"`
	ExitCode int                   `yaml:"exitCode"`
	Results  []revision.ResultItem `yaml:"results,omitempty"`
	Skipped  bool                  `yaml:"skipped,omitempty"`
}

// EncodeResultList writes the executed and skipped steps as kpt's results file
// (results.yaml: a kpt.dev/v1 FunctionResultList named fnresults). Its
// exitCode is 1 when failed is true.
func EncodeResultList(steps []StepResult, failed bool) ([]byte, error) {
	rl := resultList{APIVersion: "kpt.dev/v1", Kind: "FunctionResultList", Metadata: kptMeta{Name: "fnresults"}}
	if failed {
		rl.ExitCode = 1
	}
	for _, s := range steps {
		if !s.Executed && !s.Skipped {
			continue
		}
		// A skipped step has its entry too, as kpt gives one per step
		// whose condition was evaluated: exit code 0, skipped.
		it := resultItem{Image: s.Image, Exec: s.Exec, Stderr: s.Stderr, ExitCode: s.ExitCode, Skipped: s.Skipped}
		for _, r := range s.Results {
			it.Results = append(it.Results, toResultItem(r))
		}
		rl.Items = append(rl.Items, it)
	}
	return yamlstyle.Marshal(rl, yaml.WideSequenceStyle)
}
