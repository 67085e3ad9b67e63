package variant

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/configasdata/cad/revision"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// API group, versions and kinds of the variant objects, as Porch serves
// them.
const (
	Group = "config.porch.kpt.dev"

	PackageVariantAPIVersion    = Group + "/v1alpha1"
	PackageVariantKind          = "PackageVariant"
	PackageVariantSetAPIVersion = Group + "/v1alpha2"
	PackageVariantSetKind       = "PackageVariantSet"
)

// Annotations and labels the variant package reads and writes.
const (
	// OwnerAnnotation, in a downstream revision's Metadata, names the
	// PackageVariant that owns the revision ("<namespace>/<name>", or
	// "<name>" without a namespace). It plays the part of the owner
	// reference Porch puts on the PackageRevision object.
	OwnerAnnotation = Group + "/packagevariant"
	// DeletionPolicyAnnotation, in a downstream revision's Metadata,
	// records the owner's deletion policy, so that a PackageVariantSet can
	// remove a variant whose spec is gone.
	DeletionPolicyAnnotation = Group + "/deletion-policy"
	// SetLabel, in a downstream revision's Metadata, names the
	// PackageVariantSet whose generated variant owns the revision, as
	// Porch labels the PackageVariants it generates.
	SetLabel = Group + "/packagevariantset"

	// InjectionAnnotation marks an in-package resource as an injection
	// point: "required" or "optional" (kpt's and Porch's key).
	InjectionAnnotation = "kpt.dev/config-injection"
	// InjectedAnnotation records, on an injection point, the name of the
	// object whose content was injected.
	InjectedAnnotation = "kpt.dev/injected-resource"

	// BindingAnnotation marks an in-package resource as (one resource of)
	// the binding point named by its value.
	BindingAnnotation = "config.kpt.dev/binding"
	// BindingRequiredAnnotation, "true" on a binding point, makes its
	// condition a readiness gate: the package is not ready until the
	// binding is filled.
	BindingRequiredAnnotation = "config.kpt.dev/binding-required"
	// BoundAnnotation records, on a bound resource, where its content came
	// from.
	BoundAnnotation = "config.kpt.dev/bound-from"

	// PackageContextFile and PackageContextName are the package context
	// ConfigMap that packageContext edits.
	PackageContextFile = "package-context.yaml"
	PackageContextName = "kptfile.kpt.dev"

	// FunctionPrefix starts the name of every Kptfile function a
	// PackageVariant adds: "PackageVariant.<pv>.<fn>.<index>".
	FunctionPrefix = "PackageVariant"

	// WorkspacePrefix starts the workspace of every draft a PackageVariant
	// creates: "packagevariant-<n>".
	WorkspacePrefix = "packagevariant-"
)

// Condition types and reasons of a Result, as Porch's controllers set them.
const (
	ConditionStalled = "Stalled"
	ConditionReady   = "Ready"

	ReasonValid            = "Valid"
	ReasonValidationError  = "ValidationError"
	ReasonUpstreamNotFound = "UpstreamNotFound"
	ReasonNoErrors         = "NoErrors"
	ReasonError            = "Error"
	ReasonReconciled       = "Reconciled"
	ReasonDeleted          = "Deleted"

	// Reasons of the injection and binding conditions in the Kptfile.
	ReasonConfigInjected     = "ConfigInjected"
	ReasonNoResourceSelected = "NoResourceSelected"
	ReasonBound              = "Bound"
	ReasonDefault            = "Default"
	ReasonNotBound           = "NotBound"
)

// AdoptionPolicy says whether a PackageVariant takes over downstream
// revisions it did not create.
type AdoptionPolicy string

// DeletionPolicy says what happens to the downstream revisions of a
// PackageVariant when it is removed or no longer targets them.
type DeletionPolicy string

// Adoption and deletion policies, with Porch's values.
const (
	AdoptExisting AdoptionPolicy = "adoptExisting"
	AdoptNone     AdoptionPolicy = "adoptNone"

	DeletionPolicyDelete DeletionPolicy = "delete"
	DeletionPolicyOrphan DeletionPolicy = "orphan"
)

// PackageVariant is Porch's config.porch.kpt.dev/v1alpha1 PackageVariant:
// one upstream package revision and the downstream package that is kept a
// specialised copy of it. Its JSON is Porch's, so a Porch object decodes
// into it (see Decode). It is plain data: Sync reads it and does not modify
// it.
type PackageVariant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageVariantSpec   `json:"spec,omitempty"`
	Status PackageVariantStatus `json:"status,omitempty"`
}

// PackageVariantSpec is the desired state of a PackageVariant.
type PackageVariantSpec struct {
	Upstream   *Upstream   `json:"upstream,omitempty"`
	Downstream *Downstream `json:"downstream,omitempty"`

	// AdoptionPolicy: adoptNone (default) or adoptExisting.
	AdoptionPolicy AdoptionPolicy `json:"adoptionPolicy,omitempty"`
	// DeletionPolicy: delete (default) or orphan.
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Labels and Annotations go to the downstream revision's Metadata.
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`

	PackageContext *PackageContext `json:"packageContext,omitempty"`
	// Pipeline's functions are prepended to the downstream Kptfile's
	// mutators and validators, named "PackageVariant.<pv>.<fn>.<i>".
	Pipeline  *revision.Pipeline  `json:"pipeline,omitempty"`
	Injectors []InjectionSelector `json:"injectors,omitempty"`

	// Bindings fill the package's named binding points (a cad extension;
	// see Binding).
	Bindings []Binding `json:"bindings,omitempty"`

	// Dependencies make the sync resolve what the downstream draft
	// requires (a cad extension; see Dependencies).
	Dependencies *Dependencies `json:"dependencies,omitempty"`
}

// Dependencies say what a sync does about the requirements the downstream
// package declares (package deps, cadpackage.yaml spec.requires). After
// it has created or changed a downstream draft, and on every later sync
// while the downstream is not published, the sync:
//
//   - clones into the downstream repository, as drafts, the providers of
//     what the downstream repository lacks, found in ProviderRepos
//     (engine.CloneProviders: each provider once; a provider package that
//     already exists there is left to be published or upgraded);
//   - records the outcome on the draft as the readiness condition
//     deps.cad.configasdata.dev/satisfied (engine.CheckDependencies),
//     with Gate also adding the readiness gate, so that the draft cannot
//     be approved until a later sync finds every requirement satisfied.
//
// Providers it clones are not owned by the variant: other packages may
// need them, so deleting the variant leaves them. Porch has no such
// field.
type Dependencies struct {
	// ProviderRepos are the repositories (blueprints, catalogs) searched,
	// in order, for providers of what is missing; empty means none are
	// cloned and only the condition is recorded.
	ProviderRepos []string `json:"providerRepos,omitempty"`
	// Gate adds the readiness gate deps.cad.configasdata.dev/satisfied to
	// the downstream draft.
	Gate bool `json:"gate,omitempty"`
}

// Upstream selects the upstream package revision explicitly: Revision > 0
// pins published revision N; WorkspaceName picks the published revision
// approved from that workspace; neither means the latest published
// revision. The branch placeholder is never selected (Porch resolves an
// empty workspace to the placeholder and then refuses to clone it).
type Upstream struct {
	Repo          string `json:"repo,omitempty"`
	Package       string `json:"package,omitempty"`
	Revision      int    `json:"revision,omitempty"`
	WorkspaceName string `json:"workspaceName,omitempty"`
}

// UnmarshalJSON decodes an Upstream, accepting the revision as a number
// (Porch today) or as the string "vN" or "N" (Porch before integer
// revisions). It returns an error for any other revision string.
func (u *Upstream) UnmarshalJSON(data []byte) error {
	var raw struct {
		Repo          string          `json:"repo,omitempty"`
		Package       string          `json:"package,omitempty"`
		Revision      json.RawMessage `json:"revision,omitempty"`
		WorkspaceName string          `json:"workspaceName,omitempty"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*u = Upstream{Repo: raw.Repo, Package: raw.Package, WorkspaceName: raw.WorkspaceName}
	if len(raw.Revision) == 0 || string(raw.Revision) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw.Revision, &u.Revision); err == nil {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw.Revision, &s); err != nil {
		return fmt.Errorf("upstream.revision: want a number or \"vN\": %w", err)
	}
	if s == "" {
		return nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(s, "v"))
	if err != nil {
		return fmt.Errorf("upstream.revision %q: want a number or \"vN\"", s)
	}
	u.Revision = n
	return nil
}

// Downstream names the downstream package: a repository and a package path
// in it.
type Downstream struct {
	Repo    string `json:"repo,omitempty"`
	Package string `json:"package,omitempty"`
}

// PackageContext lists keys to set in and remove from the data of the
// package context ConfigMap (kptfile.kpt.dev in package-context.yaml).
// The keys "name" and "package-path" belong to the package and may not be
// given.
type PackageContext struct {
	Data       map[string]string `json:"data,omitempty"`
	RemoveKeys []string          `json:"removeKeys,omitempty"`
}

// InjectionSelector selects the object injected into the injection points
// it applies to: those whose group, version and kind match the non-nil
// fields; Name picks the object.
type InjectionSelector struct {
	Group   *string `json:"group,omitempty"`
	Version *string `json:"version,omitempty"`
	Kind    *string `json:"kind,omitempty"`
	Name    string  `json:"name"`
}

// Binding fills the binding point called Name (resources of the package
// annotated config.kpt.dev/binding: <Name>) from exactly one source: objects
// from the caller's ObjectSource, inline resources, or resources of another
// package revision. Every source may yield several resources of the binding
// point's kind. This is cad's take on the binding points of the Nephio
// "PackageVariant Redux" proposal; Porch has no such field.
type Binding struct {
	Name string `json:"name"`

	// Object selects objects of the binding point's kind from the
	// ObjectSource, by name or by label selector.
	Object *ObjectBinding `json:"object,omitempty"`
	// Resources are inline KRM resources.
	Resources []map[string]any `json:"resources,omitempty"`
	// PackageRevision selects resources of another package revision.
	PackageRevision *PackageRevisionBinding `json:"packageRevision,omitempty"`
}

// ObjectBinding selects objects from the ObjectSource. APIVersion and Kind
// default to the binding point's; exactly one of Name and Selector is set.
type ObjectBinding struct {
	APIVersion string                `json:"apiVersion,omitempty"`
	Kind       string                `json:"kind,omitempty"`
	Name       string                `json:"name,omitempty"`
	Selector   *metav1.LabelSelector `json:"selector,omitempty"`
}

// PackageRevisionBinding selects resources of a published package
// revision, chosen as Upstream chooses (pinned, by workspace, or latest).
// Resources are those of the binding point's kind, narrowed by Name or
// Selector when set.
type PackageRevisionBinding struct {
	Upstream `json:",inline"`
	Name     string                `json:"name,omitempty"`
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// UnmarshalJSON decodes a PackageRevisionBinding; it exists because the
// embedded Upstream has its own decoder, which would otherwise swallow the
// other fields. It returns the decoder's error.
func (b *PackageRevisionBinding) UnmarshalJSON(data []byte) error {
	var up Upstream
	if err := json.Unmarshal(data, &up); err != nil {
		return err
	}
	var rest struct {
		Name     string                `json:"name,omitempty"`
		Selector *metav1.LabelSelector `json:"selector,omitempty"`
	}
	if err := json.Unmarshal(data, &rest); err != nil {
		return err
	}
	*b = PackageRevisionBinding{Upstream: up, Name: rest.Name, Selector: rest.Selector}
	return nil
}

// PackageVariantStatus is the observed state of a PackageVariant, as Porch
// reports it. Result.Status builds it.
type PackageVariantStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// DownstreamTargets are the downstream revisions the variant created or
	// adopted. Sync reads them back to clean up after a change of
	// spec.downstream.
	DownstreamTargets []DownstreamTarget `json:"downstreamTargets,omitempty"`
}

// DownstreamTarget is one downstream revision of a PackageVariant. Name is
// Porch's PackageRevision name ("<repo>.<package with / as .>.<workspace>");
// the other fields, a cad extension, give the revision's key.
type DownstreamTarget struct {
	Name          string `json:"name,omitempty"`
	Repository    string `json:"repository,omitempty"`
	Package       string `json:"package,omitempty"`
	WorkspaceName string `json:"workspaceName,omitempty"`
}

// PackageRevisionName returns Porch's name of the revision k:
// "<repo>.<package with / replaced by .>.<workspace>".
func PackageRevisionName(k revision.Key) string {
	return k.Repository + "." + strings.ReplaceAll(k.Package, "/", ".") + "." + k.Workspace
}

// ownerID is the value of OwnerAnnotation for pv.
func ownerID(pv *PackageVariant) string {
	if pv.Namespace != "" {
		return pv.Namespace + "/" + pv.Name
	}
	return pv.Name
}
