package revision

// KptfileName is the file name that makes a directory a kpt package.
const KptfileName = "Kptfile"

// Kptfile API version and kind written by cad (kpt.dev/v1).
const (
	KptfileAPIVersion = "kpt.dev/v1"
	KptfileKind       = "Kptfile"
)

// Kptfile is the kpt.dev/v1 Kptfile. Read it with [ParseKptfile] and write
// it back with [Kptfile.Encode], which keeps the comments and field order of
// the file it was parsed from; build a new one with [NewKptfile].
//
// A Kptfile is a plain value that one goroutine changes at a time. Encode
// and Validate do not modify it, and a copy made by assignment shares the
// parsed document read-only, so it may be encoded independently.
type Kptfile struct {
	APIVersion   string        `yaml:"apiVersion,omitempty" json:"apiVersion,omitempty"`
	Kind         string        `yaml:"kind,omitempty" json:"kind,omitempty"`
	Metadata     ObjectMeta    `yaml:"metadata,omitempty" json:"metadata,omitempty"`
	Upstream     *Upstream     `yaml:"upstream,omitempty" json:"upstream,omitempty"`
	UpstreamLock *UpstreamLock `yaml:"upstreamLock,omitempty" json:"upstreamLock,omitempty"`
	Info         *PackageInfo  `yaml:"info,omitempty" json:"info,omitempty"`
	Pipeline     *Pipeline     `yaml:"pipeline,omitempty" json:"pipeline,omitempty"`
	Inventory    *Inventory    `yaml:"inventory,omitempty" json:"inventory,omitempty"`
	Status       *Status       `yaml:"status,omitempty" json:"status,omitempty"`

	// doc holds the parsed document for faithful re-encoding; see
	// kptfile.go. It is nil for a Kptfile built in code.
	doc any
}

// ObjectMeta is the subset of Kubernetes object metadata a Kptfile uses.
type ObjectMeta struct {
	Name        string            `yaml:"name,omitempty" json:"name,omitempty"`
	Namespace   string            `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty" json:"annotations,omitempty"`
}

// OriginType is the kind of an upstream origin.
type OriginType string

// Origin types.
const (
	GitOrigin     OriginType = "git"
	GenericOrigin OriginType = "generic"
	// HelmOrigin is cad's: a Helm chart in a chart repository or an OCI
	// registry, rendered into the package (see [Helm]). kpt does not know
	// it, so a Kptfile that records it is for cad only.
	HelmOrigin OriginType = "helm"
)

// UpdateStrategy says how a package is upgraded from its upstream.
type UpdateStrategy string

// Update strategies, as kpt and Porch name them.
const (
	ResourceMerge      UpdateStrategy = "resource-merge"
	FastForward        UpdateStrategy = "fast-forward"
	ForceDeleteReplace UpdateStrategy = "force-delete-replace"
	CopyMerge          UpdateStrategy = "copy-merge"
)

// Upstream says where a package was cloned from.
type Upstream struct {
	Type           OriginType     `yaml:"type,omitempty" json:"type,omitempty"`
	Git            *Git           `yaml:"git,omitempty" json:"git,omitempty"`
	Helm           *Helm          `yaml:"helm,omitempty" json:"helm,omitempty"`
	UpdateStrategy UpdateStrategy `yaml:"updateStrategy,omitempty" json:"updateStrategy,omitempty"`
}

// Git is a git upstream: repository URL, directory in it and ref.
type Git struct {
	Repo      string `yaml:"repo,omitempty" json:"repo,omitempty"`
	Directory string `yaml:"directory,omitempty" json:"directory,omitempty"`
	Ref       string `yaml:"ref,omitempty" json:"ref,omitempty"`
}

// Helm is a Helm chart upstream: the chart, the version asked for, and
// what it was rendered with. A package cloned from a chart holds the
// rendered resources; this record (with [HelmLock]) is what an upgrade
// renders the old and new chart versions from.
type Helm struct {
	// Repo is the chart repository: an http(s) URL whose index.yaml lists
	// the chart, or an oci:// registry repository holding it as
	// Repo/Chart:Version.
	Repo string `yaml:"repo,omitempty" json:"repo,omitempty"`
	// Chart is the chart's name.
	Chart string `yaml:"chart,omitempty" json:"chart,omitempty"`
	// Version is the version asked for: exact, or a semver constraint
	// ("^1.2", ">=2.0 <3"); the lock has the version it resolved to.
	Version string `yaml:"version,omitempty" json:"version,omitempty"`
	// ReleaseName and Namespace are the release's name and namespace
	// (.Release.Name, .Release.Namespace); empty means the renderer's
	// defaults.
	ReleaseName string `yaml:"releaseName,omitempty" json:"releaseName,omitempty"`
	Namespace   string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	// Values are the values the chart was rendered with, over the chart's
	// defaults, as helm template --values takes them. They are data: a
	// YAML mapping whose leaves decode as YAML (or JSON) scalars, lists
	// and nested map[string]any.
	Values map[string]any `yaml:"values,omitempty" json:"values,omitempty"`
}

// CloneValues returns a deep copy of a Helm values tree: its maps
// (map[string]any) and lists ([]any) are new, its scalars shared; nil for
// nil. It never fails.
func CloneValues(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return CloneValues(v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = cloneValue(x)
		}
		return out
	}
	return v
}

// HelmLock is a resolved Helm chart upstream: the exact version rendered
// and the digest of the chart archive it came from.
type HelmLock struct {
	Repo  string `yaml:"repo,omitempty" json:"repo,omitempty"`
	Chart string `yaml:"chart,omitempty" json:"chart,omitempty"`
	// Version is the exact chart version (a constraint resolved).
	Version string `yaml:"version,omitempty" json:"version,omitempty"`
	// Digest identifies the chart archive: for a chart repository, its
	// index.yaml entry's digest (hex SHA-256 of the .tgz); for an OCI
	// registry, the manifest digest ("sha256:...").
	Digest string `yaml:"digest,omitempty" json:"digest,omitempty"`
}

// UpstreamLock records the exact upstream content a package was last
// fetched from.
type UpstreamLock struct {
	Type    OriginType   `yaml:"type,omitempty" json:"type,omitempty"`
	Git     *GitLock     `yaml:"git,omitempty" json:"git,omitempty"`
	Generic *GenericLock `yaml:"generic,omitempty" json:"generic,omitempty"`
	Helm    *HelmLock    `yaml:"helm,omitempty" json:"helm,omitempty"`
}

// GitLock is a resolved git upstream.
type GitLock struct {
	Repo      string `yaml:"repo,omitempty" json:"repo,omitempty"`
	Directory string `yaml:"directory,omitempty" json:"directory,omitempty"`
	Ref       string `yaml:"ref,omitempty" json:"ref,omitempty"`
	Commit    string `yaml:"commit,omitempty" json:"commit,omitempty"`
}

// GenericLock is a resolved upstream in non-git storage.
type GenericLock struct {
	StoreID         string `yaml:"storeID,omitempty" json:"storeID,omitempty"`
	ResourceID      string `yaml:"resourceID,omitempty" json:"resourceID,omitempty"`
	ResourceVersion string `yaml:"resourceVersion,omitempty" json:"resourceVersion,omitempty"`
}

// PackageInfo is the Kptfile's descriptive metadata.
type PackageInfo struct {
	Site           string          `yaml:"site,omitempty" json:"site,omitempty"`
	Emails         []string        `yaml:"emails,omitempty" json:"emails,omitempty"`
	License        string          `yaml:"license,omitempty" json:"license,omitempty"`
	LicenseFile    string          `yaml:"licenseFile,omitempty" json:"licenseFile,omitempty"`
	Description    string          `yaml:"description,omitempty" json:"description,omitempty"`
	Keywords       []string        `yaml:"keywords,omitempty" json:"keywords,omitempty"`
	Man            string          `yaml:"man,omitempty" json:"man,omitempty"`
	ReadinessGates []ReadinessGate `yaml:"readinessGates,omitempty" json:"readinessGates,omitempty"`
}

// ReadinessGate names a condition that must be True before a revision may
// be published.
type ReadinessGate struct {
	ConditionType string `yaml:"conditionType" json:"conditionType"`
}

// Pipeline is the Kptfile's function pipeline.
type Pipeline struct {
	Mutators   []Function `yaml:"mutators,omitempty" json:"mutators,omitempty"`
	Validators []Function `yaml:"validators,omitempty" json:"validators,omitempty"`
}

// Function is one step of a Kptfile pipeline. Its fields are in the order
// kpt writes them.
type Function struct {
	Image      string            `yaml:"image,omitempty" json:"image,omitempty"`
	Exec       string            `yaml:"exec,omitempty" json:"exec,omitempty"`
	ConfigPath string            `yaml:"configPath,omitempty" json:"configPath,omitempty"`
	ConfigMap  map[string]string `yaml:"configMap,omitempty" json:"configMap,omitempty"`
	Name       string            `yaml:"name,omitempty" json:"name,omitempty"`
	Tag        string            `yaml:"tag,omitempty" json:"tag,omitempty"`
	Selectors  []Selector        `yaml:"selectors,omitempty" json:"selectors,omitempty"`
	Exclude    []Selector        `yaml:"exclude,omitempty" json:"exclude,omitempty"`
	// Condition is a CEL expression over the package's resources (the
	// variable resources); when it is false the step is skipped. It is
	// cad's spelling; kpt's is When. A renderer evaluates it only when it
	// has a condition evaluator (fnruntime/celfn).
	Condition string `yaml:"condition,omitempty" json:"condition,omitempty"`
	// When is kpt's step condition (kpt.dev/v1, kpt's CEL conditional
	// execution): a CEL expression over the resources the step selects
	// (after Selectors and Exclude), the variable resources; when it is
	// false the step is skipped and recorded as skipped in the render
	// status.
	When string `yaml:"when,omitempty" json:"when,omitempty"`
	// ConfigMapExprs are cad's computed function inputs: each value is a
	// CEL expression over the resources, whose result becomes the
	// function-input ConfigMap's entry for its key. It is not kpt's:
	// a kpt that does not know it refuses the Kptfile, so cad never writes
	// it into a package unless a user put it there.
	ConfigMapExprs map[string]string `yaml:"configMapExprs,omitempty" json:"configMapExprs,omitempty"`
}

// Selector selects resources by any of its non-empty fields (all must
// match).
type Selector struct {
	APIVersion  string            `yaml:"apiVersion,omitempty" json:"apiVersion,omitempty"`
	Kind        string            `yaml:"kind,omitempty" json:"kind,omitempty"`
	Name        string            `yaml:"name,omitempty" json:"name,omitempty"`
	Namespace   string            `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty" json:"annotations,omitempty"`
}

// Inventory is the live-apply inventory of a package.
type Inventory struct {
	Namespace   string            `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	Name        string            `yaml:"name,omitempty" json:"name,omitempty"`
	InventoryID string            `yaml:"inventoryID,omitempty" json:"inventoryID,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty" json:"annotations,omitempty"`
}

// Status is the Kptfile's status: conditions and the last render.
type Status struct {
	Conditions   []Condition   `yaml:"conditions,omitempty" json:"conditions,omitempty"`
	RenderStatus *RenderStatus `yaml:"renderStatus,omitempty" json:"renderStatus,omitempty"`
}

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Condition is a condition of a package revision.
type Condition struct {
	Type    string          `yaml:"type" json:"type"`
	Status  ConditionStatus `yaml:"status" json:"status"`
	Reason  string          `yaml:"reason,omitempty" json:"reason,omitempty"`
	Message string          `yaml:"message,omitempty" json:"message,omitempty"`
}

// RenderStatus records the outcome of the last render, as current kpt
// writes it.
type RenderStatus struct {
	MutationSteps   []PipelineStepResult `yaml:"mutationSteps,omitempty" json:"mutationSteps,omitempty"`
	ValidationSteps []PipelineStepResult `yaml:"validationSteps,omitempty" json:"validationSteps,omitempty"`
	ErrorSummary    string               `yaml:"errorSummary,omitempty" json:"errorSummary,omitempty"`
}

// PipelineStepResult is the outcome of one pipeline step.
type PipelineStepResult struct {
	Name           string       `yaml:"name,omitempty" json:"name,omitempty"`
	Image          string       `yaml:"image,omitempty" json:"image,omitempty"`
	Exec           string       `yaml:"exec,omitempty" json:"exec,omitempty"`
	ExecutionError string       `yaml:"executionError,omitempty" json:"executionError,omitempty"`
	Stderr         string       `yaml:"stderr,omitempty" json:"stderr,omitempty"`
	ExitCode       int          `yaml:"exitCode" json:"exitCode"`
	Results        []ResultItem `yaml:"results,omitempty" json:"results,omitempty"`
	ErrorResults   []ResultItem `yaml:"errorResults,omitempty" json:"errorResults,omitempty"`
	// When is the step's condition, recorded whether or not it held.
	When string `yaml:"when,omitempty" json:"when,omitempty"`
	// Skipped says the condition was false and the function did not run
	// (ExitCode is then 0).
	Skipped bool `yaml:"skipped,omitempty" json:"skipped,omitempty"`
}

// ResultItem is one function result as recorded in a Kptfile's render
// status (the config.kubernetes.io/v1 result schema).
type ResultItem struct {
	Message     string            `yaml:"message,omitempty" json:"message,omitempty"`
	Severity    string            `yaml:"severity,omitempty" json:"severity,omitempty"`
	ResourceRef *ResourceRef      `yaml:"resourceRef,omitempty" json:"resourceRef,omitempty"`
	Field       *Field            `yaml:"field,omitempty" json:"field,omitempty"`
	File        *File             `yaml:"file,omitempty" json:"file,omitempty"`
	Tags        map[string]string `yaml:"tags,omitempty" json:"tags,omitempty"`
}

// ResourceRef identifies a resource a result is about.
type ResourceRef struct {
	APIVersion string `yaml:"apiVersion,omitempty" json:"apiVersion,omitempty"`
	Kind       string `yaml:"kind,omitempty" json:"kind,omitempty"`
	Name       string `yaml:"name,omitempty" json:"name,omitempty"`
	Namespace  string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
}

// Field identifies a field a result is about.
type Field struct {
	Path          string `yaml:"path,omitempty" json:"path,omitempty"`
	CurrentValue  any    `yaml:"currentValue,omitempty" json:"currentValue,omitempty"`
	ProposedValue any    `yaml:"proposedValue,omitempty" json:"proposedValue,omitempty"`
}

// File identifies a file a result is about.
type File struct {
	Path  string `yaml:"path,omitempty" json:"path,omitempty"`
	Index int    `yaml:"index,omitempty" json:"index,omitempty"`
}
