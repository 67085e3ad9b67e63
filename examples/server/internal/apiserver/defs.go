package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configasdata/cad/examples/internal/porchapi"
)

var (
	grRepositories       = schema.GroupResource{Group: porchapi.ConfigGroup, Resource: porchapi.ResourceRepositories}
	grPackageVariants    = schema.GroupResource{Group: porchapi.ConfigGroup, Resource: porchapi.ResourcePackageVariants}
	grPackageVariantSets = schema.GroupResource{Group: porchapi.ConfigGroup, Resource: porchapi.ResourcePackageVariantSets}
)

// resourceDefs lists the served resources.
func (s *Server) resourceDefs() []*resourceDef {
	pr := &prImpl{s: s}
	var defs []*resourceDef
	add := func(d *resourceDef) {
		if si, ok := d.impl.(*storeImpl); ok {
			si.def = d
		}
		defs = append(defs, d)
	}
	add(&resourceDef{
		gr: schema.GroupResource{Group: "", Resource: "namespaces"}, version: "v1", kind: "Namespace", listKind: "NamespaceList",
		singular: "namespace", shortNames: []string{"ns"},
		columns: []metav1.TableColumnDefinition{nameColumn, {Name: "Status", Type: "string", Description: "The phase of the namespace"}, ageColumn},
		row: func(o metav1.Object) []any {
			return []any{o.GetName(), "Active", age(o.GetCreationTimestamp())}
		},
		impl: &storeImpl{s: s, res: resNamespaces,
			prepare: func(_ context.Context, _ *request, obj, _ runtime.Object) error {
				obj.(*corev1.Namespace).Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
				return nil
			},
			deleting: s.deletingNamespace},
	})
	if s.opts.Secrets == nil {
		// Standalone: the Secrets that Repositories' secretRefs name
		// (porchctl repo reg creates them), kept in the store. In cluster
		// mode they are the cluster's.
		add(&resourceDef{
			gr: schema.GroupResource{Group: "", Resource: resSecrets}, version: "v1", kind: "Secret", listKind: "SecretList",
			singular: "secret", namespaced: true,
			columns: []metav1.TableColumnDefinition{nameColumn,
				{Name: "Type", Type: "string", Description: "The type of the secret"},
				{Name: "Data", Type: "integer", Description: "The number of keys of the secret"}, ageColumn},
			row: func(o metav1.Object) []any {
				sec := o.(*corev1.Secret)
				return []any{sec.Name, string(sec.Type), len(sec.Data), age(sec.CreationTimestamp)}
			},
			impl: &storeImpl{s: s, res: resSecrets, prepare: prepareSecret},
		})
	}
	add(&resourceDef{
		gr: grPackageRevisions, version: porchapi.Version, kind: porchapi.KindPackageRevision,
		listKind: porchapi.KindPackageRevisionList, singular: "packagerevision", namespaced: true,
		shortNames: []string{"rpkg"}, categories: []string{"porch"},
		subresources: s.withLiveStatus(map[string]subresourceDef{porchapi.SubresourceApproval: {update: pr.approve},
			SubresourceDependencies: {connect: depsImpl{s}}}),
		checkFields: porchapi.CheckPackageRevisionSelector, fieldFn: prFieldSet,
		columns: []metav1.TableColumnDefinition{
			nameColumn,
			{Name: "Package", Type: "string", Description: "The package path"},
			{Name: "WorkspaceName", Type: "string", Description: "The workspace of the revision"},
			{Name: "Revision", Type: "integer", Description: "The revision number"},
			{Name: "Latest", Type: "boolean", Description: "Whether this is the latest published revision"},
			{Name: "Lifecycle", Type: "string", Description: "The lifecycle state"},
			{Name: "Repository", Type: "string", Description: "The repository"},
		},
		row: func(o metav1.Object) []any {
			p := o.(*porchapi.PackageRevision)
			return []any{p.Name, p.Spec.PackageName, p.Spec.WorkspaceName, p.Spec.Revision, porchapi.IsLatest(p),
				string(p.Spec.Lifecycle), p.Spec.RepositoryName}
		},
		impl: pr,
	})
	add(&resourceDef{
		gr: grPackageRevisionResources, version: porchapi.Version, kind: porchapi.KindPackageRevisionResources,
		listKind: porchapi.KindPackageRevisionResourcesList, singular: "packagerevisionresources", namespaced: true,
		shortNames: []string{"prr"}, categories: []string{"porch"},
		checkFields: porchapi.CheckPackageRevisionSelector, fieldFn: prFieldSet,
		columns: []metav1.TableColumnDefinition{
			nameColumn,
			{Name: "Package", Type: "string", Description: "The package path"},
			{Name: "WorkspaceName", Type: "string", Description: "The workspace of the revision"},
			{Name: "Revision", Type: "integer", Description: "The revision number"},
			{Name: "Repository", Type: "string", Description: "The repository"},
			{Name: "Files", Type: "integer", Description: "The number of files"},
		},
		row: func(o metav1.Object) []any {
			p := o.(*porchapi.PackageRevisionResources)
			return []any{p.Name, p.Spec.PackageName, p.Spec.WorkspaceName, p.Spec.Revision, p.Spec.RepositoryName, len(p.Spec.Resources)}
		},
		impl: &prrImpl{s: s},
	})
	repoImpl := &storeImpl{s: s, res: resRepositories, keepStatus: true,
		prepare: s.prepareRepository, written: s.repositoryWritten,
		deleting: func(_ context.Context, rq *request, u *unstructured.Unstructured) error {
			if s.opts.ExternalRepositories {
				return errExternalRepositories(rq.name)
			}
			return nil
		},
		deleted: func(_ context.Context, rq *request, u *unstructured.Unstructured) { s.unregister(rq.ns, rq.name) }}
	add(&resourceDef{
		gr: grRepositories, version: porchapi.Version, kind: porchapi.KindRepository, listKind: porchapi.KindRepositoryList,
		singular: "repository", namespaced: true, shortNames: []string{"repo"}, categories: []string{"porch"},
		subresources: repoImpl.statusSubresource(),
		columns: []metav1.TableColumnDefinition{
			nameColumn,
			{Name: "Type", Type: "string", Description: "git or oci"},
			{Name: "Content", Type: "string", Description: "The content of the repository"},
			{Name: "Deployment", Type: "boolean", Description: "Whether it is a deployment repository"},
			{Name: "Ready", Type: "string", Description: "Whether the repository is open"},
			{Name: "Address", Type: "string", Description: "The repository URL or registry"},
		},
		row: func(o metav1.Object) []any {
			r := o.(*porchapi.Repository)
			ready, addr := "Unknown", ""
			for _, c := range r.Status.Conditions {
				if c.Type == porchapi.RepositoryReady {
					ready = string(c.Status)
				}
			}
			switch {
			case r.Spec.Git != nil:
				addr = r.Spec.Git.Repo
			case r.Spec.Oci != nil:
				addr = r.Spec.Oci.Registry
			}
			content := r.Spec.Content
			if content == "" {
				content = porchapi.ContentPackage
			}
			return []any{r.Name, string(r.Spec.Type), content, r.Spec.Deployment, ready, addr}
		},
		impl: repoImpl,
	})
	variantHooks := func(res string) *storeImpl {
		return &storeImpl{s: s, res: res, keepStatus: true, prepare: s.prepareVariant,
			written: func(_ context.Context, rq *request, u, _ *unstructured.Unstructured) *unstructured.Unstructured {
				s.queueVariant(variantWork{resource: res, ns: rq.ns, name: u.GetName()})
				return nil
			},
			deleted: func(_ context.Context, rq *request, u *unstructured.Unstructured) {
				s.queueVariant(variantWork{resource: res, ns: rq.ns, name: u.GetName(), deleted: u})
			}}
	}
	pvImpl := variantHooks(resPackageVariants)
	add(&resourceDef{
		gr: grPackageVariants, version: porchapi.Version, kind: porchapi.KindPackageVariant, listKind: porchapi.KindPackageVariantList,
		singular: "packagevariant", namespaced: true, categories: []string{"porch"},
		subresources: pvImpl.statusSubresource(),
		impl:         pvImpl,
	})
	pvsImpl := variantHooks(resPackageVariantSets)
	add(&resourceDef{
		gr: grPackageVariantSets, version: porchapi.VariantSetVersion, kind: porchapi.KindPackageVariantSet,
		listKind: porchapi.KindPackageVariantSetList, singular: "packagevariantset", namespaced: true,
		categories:   []string{"porch"},
		subresources: pvsImpl.statusSubresource(),
		impl:         pvsImpl,
	})
	return defs
}
