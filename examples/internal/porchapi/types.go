package porchapi

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
	porchv1alpha1 "github.com/configasdata/cad/api/porch/v1alpha1"
	"github.com/configasdata/cad/revision"
)

// The API types live in the api module (github.com/configasdata/cad/api);
// these aliases keep the names the server and the CLI use.
type (
	PackageRevision                = porchv1alpha1.PackageRevision
	PackageRevisionList            = porchv1alpha1.PackageRevisionList
	PackageRevisionSpec            = porchv1alpha1.PackageRevisionSpec
	PackageRevisionStatus          = porchv1alpha1.PackageRevisionStatus
	Lifecycle                      = porchv1alpha1.Lifecycle
	ParentReference                = porchv1alpha1.ParentReference
	PackageMetadata                = porchv1alpha1.PackageMetadata
	ReadinessGate                  = porchv1alpha1.ReadinessGate
	TaskType                       = porchv1alpha1.TaskType
	Task                           = porchv1alpha1.Task
	PackageInitTaskSpec            = porchv1alpha1.PackageInitTaskSpec
	PackageCloneTaskSpec           = porchv1alpha1.PackageCloneTaskSpec
	PackageEditTaskSpec            = porchv1alpha1.PackageEditTaskSpec
	PackageUpgradeTaskSpec         = porchv1alpha1.PackageUpgradeTaskSpec
	MergeStrategy                  = porchv1alpha1.MergeStrategy
	RepositoryType                 = porchv1alpha1.RepositoryType
	UpstreamPackage                = porchv1alpha1.UpstreamPackage
	GitPackage                     = porchv1alpha1.GitPackage
	OciPackage                     = porchv1alpha1.OciPackage
	SecretRef                      = porchv1alpha1.SecretRef
	PackageRevisionRef             = porchv1alpha1.PackageRevisionRef
	UpstreamLock                   = porchv1alpha1.UpstreamLock
	OriginType                     = porchv1alpha1.OriginType
	GitLock                        = porchv1alpha1.GitLock
	ConditionStatus                = porchv1alpha1.ConditionStatus
	Condition                      = porchv1alpha1.Condition
	PackageRevisionResources       = porchv1alpha1.PackageRevisionResources
	PackageRevisionResourcesList   = porchv1alpha1.PackageRevisionResourcesList
	PackageRevisionResourcesSpec   = porchv1alpha1.PackageRevisionResourcesSpec
	PackageRevisionResourcesStatus = porchv1alpha1.PackageRevisionResourcesStatus
	RenderStatus                   = porchv1alpha1.RenderStatus
	ResultList                     = porchv1alpha1.ResultList
	Result                         = porchv1alpha1.Result
	ResultItem                     = porchv1alpha1.ResultItem

	Repository         = configv1alpha1.Repository
	RepositoryList     = configv1alpha1.RepositoryList
	RepositorySpec     = configv1alpha1.RepositorySpec
	RepositorySync     = configv1alpha1.RepositorySync
	RepositoryStatus   = configv1alpha1.RepositoryStatus
	PackageVariant     = configv1alpha1.PackageVariant
	PackageVariantList = configv1alpha1.PackageVariantList

	PackageVariantSet     = configv1alpha2.PackageVariantSet
	PackageVariantSetList = configv1alpha2.PackageVariantSetList
)

// The enumerated values of the aliased types.
const (
	LifecycleDraft            = porchv1alpha1.LifecycleDraft
	LifecycleProposed         = porchv1alpha1.LifecycleProposed
	LifecyclePublished        = porchv1alpha1.LifecyclePublished
	LifecycleDeletionProposed = porchv1alpha1.LifecycleDeletionProposed

	TaskTypeInit    = porchv1alpha1.TaskTypeInit
	TaskTypeClone   = porchv1alpha1.TaskTypeClone
	TaskTypeEdit    = porchv1alpha1.TaskTypeEdit
	TaskTypeUpgrade = porchv1alpha1.TaskTypeUpgrade
	TaskTypeRender  = porchv1alpha1.TaskTypeRender
	TaskTypePush    = porchv1alpha1.TaskTypePush

	ResourceMerge      = porchv1alpha1.ResourceMerge
	FastForward        = porchv1alpha1.FastForward
	ForceDeleteReplace = porchv1alpha1.ForceDeleteReplace
	CopyMerge          = porchv1alpha1.CopyMerge

	RepositoryTypeGit = porchv1alpha1.RepositoryTypeGit
	RepositoryTypeOCI = porchv1alpha1.RepositoryTypeOCI

	ConditionTrue    = porchv1alpha1.ConditionTrue
	ConditionFalse   = porchv1alpha1.ConditionFalse
	ConditionUnknown = porchv1alpha1.ConditionUnknown
)

// ResultItemFrom returns the API form of a function result item.
func ResultItemFrom(it revision.ResultItem) ResultItem {
	out := ResultItem{Message: it.Message, Severity: it.Severity, Tags: it.Tags}
	if it.ResourceRef != nil {
		out.ResourceRef = &porchv1alpha1.ResourceRef{APIVersion: it.ResourceRef.APIVersion, Kind: it.ResourceRef.Kind,
			Name: it.ResourceRef.Name, Namespace: it.ResourceRef.Namespace}
	}
	if it.Field != nil {
		out.Field = &porchv1alpha1.Field{Path: it.Field.Path,
			CurrentValue: rawValue(it.Field.CurrentValue), ProposedValue: rawValue(it.Field.ProposedValue)}
	}
	if it.File != nil {
		out.File = &porchv1alpha1.File{Path: it.File.Path, Index: it.File.Index}
	}
	return out
}

// RevisionResultItem returns cad's form of an API function result item.
func RevisionResultItem(it ResultItem) revision.ResultItem {
	out := revision.ResultItem{Message: it.Message, Severity: it.Severity, Tags: it.Tags}
	if it.ResourceRef != nil {
		out.ResourceRef = &revision.ResourceRef{APIVersion: it.ResourceRef.APIVersion, Kind: it.ResourceRef.Kind,
			Name: it.ResourceRef.Name, Namespace: it.ResourceRef.Namespace}
	}
	if it.Field != nil {
		out.Field = &revision.Field{Path: it.Field.Path,
			CurrentValue: anyValue(it.Field.CurrentValue), ProposedValue: anyValue(it.Field.ProposedValue)}
	}
	if it.File != nil {
		out.File = &revision.File{Path: it.File.Path, Index: it.File.Index}
	}
	return out
}

func rawValue(v any) *runtime.RawExtension {
	if v == nil {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return &runtime.RawExtension{Raw: data}
}

func anyValue(r *runtime.RawExtension) any {
	if r == nil || len(r.Raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(r.Raw, &v) != nil {
		return nil
	}
	return v
}
