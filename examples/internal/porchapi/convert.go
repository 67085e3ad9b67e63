package porchapi

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// RevisionOptions is what FromRevision needs besides the revision itself.
type RevisionOptions struct {
	// Namespace is the namespace of the revision's Repository object.
	Namespace string
	// Kptfile is the revision's root Kptfile, nil when it has none; it
	// gives readiness gates, conditions, upstream lock and package
	// metadata.
	Kptfile *revision.Kptfile
	// Deployment is the repository's spec.deployment.
	Deployment bool
	// Latest is true for the latest Published revision of its package:
	// it gets the LatestRevisionLabel.
	Latest bool
}

// FromRevision returns the PackageRevision object of the revision with meta
// m: its name from the key, resourceVersion the Version, labels and
// annotations from the Metadata (the latest-revision label computed from
// opts.Latest, never taken from storage; ownerReferences, finalizers and
// deletionTimestamp from their annotations, see OwnerReferencesAnnotation),
// spec and status from the key,
// the lifecycle and the Kptfile. Its spec.tasks is the creation task the
// revision records (m.Creation, see TaskFrom), empty when it records none.
func FromRevision(m revision.Meta, opts RevisionOptions) PackageRevision {
	name := NameOf(m.Key)
	pr := PackageRevision{
		TypeMeta: metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: KindPackageRevision},
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       opts.Namespace,
			UID:             PackageRevisionUID(opts.Namespace, name),
			ResourceVersion: m.Version,
			Labels:          maps.Clone(m.Labels),
			Annotations:     maps.Clone(m.Annotations),
		},
		Spec: PackageRevisionSpec{
			PackageName:    m.Key.Package,
			RepositoryName: m.Key.Repository,
			WorkspaceName:  m.Key.Workspace,
			Revision:       m.Key.Revision,
			Lifecycle:      Lifecycle(m.Lifecycle),
		},
		Status: PackageRevisionStatus{
			PublishedBy: m.PublishedBy,
			Deployment:  opts.Deployment,
		},
	}
	if t, ok := TaskFrom(m.Creation); ok {
		pr.Spec.Tasks = []Task{t}
	}
	setObjectMeta(&pr)
	delete(pr.Labels, LatestRevisionLabel)
	if opts.Latest {
		if pr.Labels == nil {
			pr.Labels = map[string]string{}
		}
		pr.Labels[LatestRevisionLabel] = LatestRevisionValue
	}
	if len(pr.Labels) == 0 {
		pr.Labels = nil
	}
	if !m.PublishedAt.IsZero() {
		pr.Status.PublishedAt = metav1.NewTime(m.PublishedAt)
		pr.CreationTimestamp = metav1.NewTime(m.PublishedAt)
	}
	// Readiness: the Kptfile's merged with the revision data.
	var info revision.Info
	if opts.Kptfile != nil {
		info = opts.Kptfile.PackageRevisionInfo()
	}
	info = info.WithReadiness(m.Metadata)
	pr.Spec.ReadinessGates = ReadinessGatesFrom(info.ReadinessGates)
	pr.Status.Conditions = ConditionsFrom(info.Conditions)
	if kf := opts.Kptfile; kf != nil {
		pr.Status.UpstreamLock = UpstreamLockFrom(info.UpstreamLock)
		if len(kf.Metadata.Labels) > 0 || len(kf.Metadata.Annotations) > 0 {
			pr.Spec.PackageMetadata = &PackageMetadata{
				Labels:      maps.Clone(kf.Metadata.Labels),
				Annotations: maps.Clone(kf.Metadata.Annotations),
			}
		}
	}
	return pr
}

// MetadataOf returns the object's labels and annotations as the revision
// Metadata cad stores, without the server-managed LatestRevisionLabel,
// with its ownerReferences and finalizers in annotations (see
// OwnerReferencesAnnotation); a deletion timestamp is never taken from the
// object.
func MetadataOf(pr *PackageRevision) revision.Metadata {
	md := revision.Metadata{Labels: maps.Clone(pr.Labels), Annotations: maps.Clone(pr.Annotations)}
	delete(md.Labels, LatestRevisionLabel)
	return withObjectMeta(md, pr).Clone()
}

// IsLatest reports whether the object carries the LatestRevisionLabel.
func IsLatest(pr *PackageRevision) bool {
	return pr.Labels[LatestRevisionLabel] == LatestRevisionValue
}

// ReadinessGatesFrom converts cad's readiness gates, nil for none.
func ReadinessGatesFrom(gs []revision.ReadinessGate) []ReadinessGate {
	if len(gs) == 0 {
		return nil
	}
	out := make([]ReadinessGate, len(gs))
	for i, g := range gs {
		out[i] = ReadinessGate{ConditionType: g.ConditionType}
	}
	return out
}

// ReadinessGatesTo converts readiness gates to cad's, nil for none.
func ReadinessGatesTo(gs []ReadinessGate) []revision.ReadinessGate {
	if len(gs) == 0 {
		return nil
	}
	out := make([]revision.ReadinessGate, len(gs))
	for i, g := range gs {
		out[i] = revision.ReadinessGate{ConditionType: g.ConditionType}
	}
	return out
}

// ConditionsFrom converts cad's conditions, nil for none.
func ConditionsFrom(cs []revision.Condition) []Condition {
	if len(cs) == 0 {
		return nil
	}
	out := make([]Condition, len(cs))
	for i, c := range cs {
		out[i] = Condition{Type: c.Type, Status: ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message}
	}
	return out
}

// ConditionsTo converts conditions to cad's, nil for none.
func ConditionsTo(cs []Condition) []revision.Condition {
	if len(cs) == 0 {
		return nil
	}
	out := make([]revision.Condition, len(cs))
	for i, c := range cs {
		out[i] = revision.Condition{Type: c.Type, Status: revision.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message}
	}
	return out
}

// UpstreamLockFrom converts a Kptfile upstream lock; nil stays nil.
func UpstreamLockFrom(l *revision.UpstreamLock) *UpstreamLock {
	if l == nil {
		return nil
	}
	out := &UpstreamLock{Type: OriginType(l.Type)}
	if l.Git != nil {
		out.Git = &GitLock{Repo: l.Git.Repo, Directory: l.Git.Directory, Ref: l.Git.Ref, Commit: l.Git.Commit}
	}
	return out
}

// ErrInvalidTask is matched (errors.Is) by the errors of ValidateTask.
var ErrInvalidTask = fmt.Errorf("invalid creation task: %w", revision.ErrInvalid)

// CreationTask returns the one creation task of a new PackageRevision's
// spec: the only element of spec.tasks, or, when there is none, an init task
// with Porch's default description "<package> description". It returns an
// error matching ErrInvalidTask (and revision.ErrInvalid) for more than one
// task or a task that ValidateTask refuses.
func CreationTask(pr *PackageRevision) (Task, error) {
	switch len(pr.Spec.Tasks) {
	case 0:
		return Task{Type: TaskTypeInit, Init: &PackageInitTaskSpec{
			Description: pr.Spec.PackageName + " description",
		}}, nil
	case 1:
		t := pr.Spec.Tasks[0]
		if err := ValidateTask(t); err != nil {
			return Task{}, err
		}
		return t, nil
	default:
		return Task{}, fmt.Errorf("%w: at most one task may be given, got %d", ErrInvalidTask, len(pr.Spec.Tasks))
	}
}

// ValidateTask checks that t is a creation task: type init, clone, edit or
// upgrade with exactly its own field set (init may omit it), and what that
// type needs. Errors match ErrInvalidTask.
func ValidateTask(t Task) error {
	set := 0
	for _, p := range []bool{t.Init != nil, t.Clone != nil, t.Edit != nil, t.Upgrade != nil} {
		if p {
			set++
		}
	}
	if set > 1 {
		return fmt.Errorf("%w: task %q sets more than one of init, clone, edit and upgrade", ErrInvalidTask, t.Type)
	}
	switch t.Type {
	case TaskTypeInit:
		if set == 1 && t.Init == nil {
			return fmt.Errorf("%w: task init sets another task's field", ErrInvalidTask)
		}
	case TaskTypeClone:
		if t.Clone == nil {
			return fmt.Errorf("%w: task clone needs the clone field", ErrInvalidTask)
		}
		u := t.Clone.Upstream
		n := 0
		if u.UpstreamRef != nil {
			n++
			if u.UpstreamRef.Name == "" {
				return fmt.Errorf("%w: clone upstreamRef.upstreamRef.name is empty", ErrInvalidTask)
			}
		}
		if u.Git != nil {
			n++
			if u.Git.Repo == "" || u.Git.Ref == "" {
				return fmt.Errorf("%w: clone git upstream needs repo and ref", ErrInvalidTask)
			}
		}
		if u.Oci != nil {
			n++
		}
		if n != 1 {
			return fmt.Errorf("%w: clone upstreamRef needs exactly one of upstreamRef, git and oci", ErrInvalidTask)
		}
	case TaskTypeEdit:
		if t.Edit == nil || t.Edit.Source == nil || t.Edit.Source.Name == "" {
			return fmt.Errorf("%w: task edit needs edit.sourceRef.name", ErrInvalidTask)
		}
	case TaskTypeUpgrade:
		u := t.Upgrade
		if u == nil || u.OldUpstream.Name == "" || u.NewUpstream.Name == "" || u.LocalPackageRevisionRef.Name == "" {
			return fmt.Errorf("%w: task upgrade needs oldUpstreamRef, newUpstreamRef and localPackageRevisionRef names", ErrInvalidTask)
		}
		if err := validStrategy(u.Strategy); err != nil {
			return err
		}
	case "":
		return fmt.Errorf("%w: task type is empty", ErrInvalidTask)
	default:
		return fmt.Errorf("%w: task type %q cannot create a package revision (use init, clone, edit or upgrade)", ErrInvalidTask, t.Type)
	}
	if t.Clone != nil {
		if err := validStrategy(t.Clone.Strategy); err != nil {
			return err
		}
	}
	return nil
}

func validStrategy(s MergeStrategy) error {
	switch s {
	case "", ResourceMerge, FastForward, ForceDeleteReplace, CopyMerge:
		return nil
	}
	return fmt.Errorf("%w: unknown merge strategy %q", ErrInvalidTask, s)
}

// InitOptions returns the engine options of an init task (nil means
// defaults) with the given metadata.
func InitOptions(s *PackageInitTaskSpec, md revision.Metadata) engine.InitOptions {
	o := engine.InitOptions{Metadata: md}
	if s != nil {
		o.Description, o.Keywords, o.Site = s.Description, s.Keywords, s.Site
	}
	return o
}

// GitUpstream returns the engine's git upstream for g, without credentials.
func GitUpstream(g *GitPackage) repository.GitUpstream {
	return repository.GitUpstream{Repo: g.Repo, Directory: g.Directory, Ref: g.Ref}
}

// FromFiles returns the PackageRevisionResources object of the revision with
// meta m and content files, in namespace ns.
func FromFiles(ns string, m revision.Meta, files revision.Files) PackageRevisionResources {
	name := NameOf(m.Key)
	res := files.Strings()
	return PackageRevisionResources{
		TypeMeta: metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: KindPackageRevisionResources},
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       ns,
			UID:             PackageRevisionUID(ns, name),
			ResourceVersion: m.Version,
			Labels:          maps.Clone(m.Labels),
			Annotations:     maps.Clone(m.Annotations),
		},
		Spec: PackageRevisionResourcesSpec{
			PackageName:    m.Key.Package,
			WorkspaceName:  m.Key.Workspace,
			Revision:       m.Key.Revision,
			RepositoryName: m.Key.Repository,
			Resources:      res,
		},
	}
}

// FilesOf returns spec.resources as package Files. The error matches
// revision.ErrInvalid for an unsafe path.
func FilesOf(r *PackageRevisionResources) (revision.Files, error) {
	return revision.FilesFromStrings(r.Spec.Resources)
}

// RenderStatusFrom returns the render status of a render that ran steps and
// failed with err (nil on success): kpt's FunctionResultList of the executed
// steps and the error message. A *pipeline.RenderError in err supplies the
// steps when steps is nil.
func RenderStatusFrom(steps []pipeline.StepResult, err error) RenderStatus {
	var re *pipeline.RenderError
	if steps == nil && errors.As(err, &re) {
		steps = re.Steps()
	}
	rs := RenderStatus{Result: ResultList{
		TypeMeta:   metav1.TypeMeta{APIVersion: revision.KptfileAPIVersion, Kind: "FunctionResultList"},
		ObjectMeta: metav1.ObjectMeta{Name: "fnresults"},
	}}
	if err != nil {
		rs.Err = err.Error()
		rs.Result.ExitCode = 1
	}
	for _, s := range steps {
		if !s.Executed {
			continue
		}
		r := &Result{Image: s.Image, ExecPath: s.Exec, Stderr: s.Stderr, ExitCode: s.ExitCode}
		for _, it := range s.Results {
			if it == nil {
				continue
			}
			r.Results = append(r.Results, ResultItemFrom(revision.ResultItem{
				Message: it.Message, Severity: string(it.Severity), ResourceRef: it.ResourceRef,
				Field: it.Field, File: it.File, Tags: it.Tags,
			}))
		}
		rs.Result.Items = append(rs.Result.Items, r)
	}
	return rs
}

// RenderStatusFromKptfile returns the render status the root Kptfile of
// files records (status.renderStatus, which the pipeline writes on every
// render), as a PackageRevisionResources status shows it; an empty one
// when there is none.
func RenderStatusFromKptfile(files revision.Files) RenderStatus {
	rs := RenderStatusFrom(nil, nil)
	data, ok := files.Get(revision.KptfileName)
	if !ok {
		return rs
	}
	kf, err := revision.ParseKptfile(data)
	if err != nil || kf.Status == nil || kf.Status.RenderStatus == nil {
		return rs
	}
	st := kf.Status.RenderStatus
	rs.Err = st.ErrorSummary
	for _, steps := range [][]revision.PipelineStepResult{st.MutationSteps, st.ValidationSteps} {
		for _, s := range steps {
			r := &Result{Image: s.Image, ExecPath: s.Exec, Stderr: s.Stderr, ExitCode: s.ExitCode}
			for _, it := range append(slices.Clone(s.Results), s.ErrorResults...) {
				r.Results = append(r.Results, ResultItemFrom(it))
			}
			if s.ExitCode != 0 {
				rs.Result.ExitCode = 1
			}
			rs.Result.Items = append(rs.Result.Items, r)
		}
	}
	return rs
}

// TaskFrom returns the creation task that c records, with revisions named
// as PackageRevisions: init, clone (of a registered revision or a git
// package), edit (a copy) or upgrade. It returns false for nil.
func TaskFrom(c *revision.Creation) (Task, bool) {
	if c == nil {
		return Task{}, false
	}
	ref := func(k *revision.Key) PackageRevisionRef {
		if k == nil {
			return PackageRevisionRef{}
		}
		return PackageRevisionRef{Name: NameOf(*k)}
	}
	t := Task{Type: TaskType(c.Op)}
	switch c.Op {
	case revision.CreatedByInit:
		t.Init = &PackageInitTaskSpec{Description: c.Description, Keywords: slices.Clone(c.Keywords), Site: c.Site}
	case revision.CreatedByClone:
		t.Clone = &PackageCloneTaskSpec{Strategy: MergeStrategy(c.Strategy)}
		if c.Git != nil {
			t.Clone.Upstream = UpstreamPackage{Type: RepositoryTypeGit, Git: &GitPackage{Repo: c.Git.Repo, Ref: c.Git.Ref, Directory: c.Git.Directory}}
		} else if c.Source != nil {
			r := ref(c.Source)
			t.Clone.Upstream = UpstreamPackage{UpstreamRef: &r}
		}
	case revision.CreatedByCopy:
		if c.Source != nil {
			r := ref(c.Source)
			t.Edit = &PackageEditTaskSpec{Source: &r}
		} else {
			t.Edit = &PackageEditTaskSpec{}
		}
	case revision.CreatedByUpgrade:
		t.Upgrade = &PackageUpgradeTaskSpec{OldUpstream: ref(c.OldUpstream), NewUpstream: ref(c.NewUpstream),
			LocalPackageRevisionRef: ref(c.Local), Strategy: MergeStrategy(c.Strategy)}
	default:
		return Task{}, false
	}
	return t, true
}
