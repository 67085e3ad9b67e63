package variant

import (
	"fmt"
	"strings"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ValidationError lists what is wrong with a PackageVariant or
// PackageVariantSet, one message per problem, with Porch's field paths
// ("spec.upstream.package", ...). It matches repository.ErrInvalidInput with
// errors.Is. A sync refused for it has written nothing.
type ValidationError struct {
	Kind   string // PackageVariantKind or PackageVariantSetKind
	Name   string
	Errors []string
}

// Error joins the messages with "; " as Porch's status does.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid %s %q: %s", e.Kind, e.Name, strings.Join(e.Errors, "; "))
}

// Is reports whether target is repository.ErrInvalidInput.
func (e *ValidationError) Is(target error) bool { return target == repository.ErrInvalidInput }

// Validate checks pv as Porch's controller does, plus what cad needs to
// sync safely: the required upstream and downstream fields, the policies,
// the reserved package context keys, injector names, function names without
// '.', valid labels and annotations, and well-formed bindings. It returns a
// *ValidationError, or nil.
func Validate(pv *PackageVariant) error {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if pv.Name == "" {
		add("missing required field metadata.name")
	} else if strings.Contains(pv.Name, "/") {
		add("metadata.name %q must not contain '/'", pv.Name)
	}
	s := &pv.Spec
	if s.Upstream == nil {
		add("missing required field spec.upstream")
	} else {
		errs = append(errs, validateUpstream("spec.upstream", s.Upstream)...)
	}
	if s.Downstream == nil {
		add("missing required field spec.downstream")
	} else {
		if s.Downstream.Repo == "" {
			add("missing required field spec.downstream.repo")
		}
		if s.Downstream.Package == "" {
			add("missing required field spec.downstream.package")
		} else if err := revision.ValidatePackagePath(s.Downstream.Package); err != nil {
			add("spec.downstream.package: %v", err)
		}
	}
	switch s.AdoptionPolicy {
	case "", AdoptNone, AdoptExisting:
	default:
		add("spec.adoptionPolicy field can only be %q or %q", AdoptNone, AdoptExisting)
	}
	switch s.DeletionPolicy {
	case "", DeletionPolicyDelete, DeletionPolicyOrphan:
	default:
		add("spec.deletionPolicy can only be %q or %q", DeletionPolicyOrphan, DeletionPolicyDelete)
	}
	if pc := s.PackageContext; pc != nil {
		for _, reserved := range []string{"name", "package-path"} {
			if _, ok := pc.Data[reserved]; ok {
				add("spec.packageContext.data must not contain the key %q", reserved)
			}
			for _, k := range pc.RemoveKeys {
				if k == reserved {
					add("spec.packageContext.removeKeys must not contain the key %q", reserved)
				}
			}
		}
		for k := range pc.Data {
			if msgs := validation.IsConfigMapKey(k); len(msgs) > 0 {
				add("spec.packageContext.data key %q: %s", k, strings.Join(msgs, ", "))
			}
		}
	}
	for i, inj := range s.Injectors {
		if inj.Name == "" {
			add("spec.injectors[%d].name must not be empty", i)
		}
	}
	if p := s.Pipeline; p != nil {
		for i, f := range p.Mutators {
			errs = append(errs, validateFunction(fmt.Sprintf("spec.pipeline.mutators[%d]", i), f)...)
		}
		for i, f := range p.Validators {
			errs = append(errs, validateFunction(fmt.Sprintf("spec.pipeline.validators[%d]", i), f)...)
		}
	}
	md := revision.Metadata{Labels: s.Labels, Annotations: s.Annotations}
	if err := md.Validate(); err != nil {
		add("spec.labels/annotations: %v", err)
	}
	seen := map[string]bool{}
	for i, b := range s.Bindings {
		errs = append(errs, validateBinding(fmt.Sprintf("spec.bindings[%d]", i), b)...)
		if seen[b.Name] {
			add("spec.bindings[%d]: duplicate binding %q", i, b.Name)
		}
		seen[b.Name] = true
	}
	if d := s.Dependencies; d != nil {
		repos := map[string]bool{}
		for i, r := range d.ProviderRepos {
			switch {
			case r == "":
				add("spec.dependencies.providerRepos[%d]: empty repository name", i)
			case repos[r]:
				add("spec.dependencies.providerRepos[%d]: duplicate repository %q", i, r)
			}
			repos[r] = true
		}
	}
	if len(errs) > 0 {
		return &ValidationError{Kind: PackageVariantKind, Name: pv.Name, Errors: errs}
	}
	return nil
}

func validateUpstream(field string, u *Upstream) []string {
	var errs []string
	if u.Repo == "" {
		errs = append(errs, "missing required field "+field+".repo")
	}
	if u.Package == "" {
		errs = append(errs, "missing required field "+field+".package")
	}
	switch {
	case u.Revision < 0:
		errs = append(errs, fmt.Sprintf("%s.revision %d: the placeholder revision cannot be an upstream; give a published revision number, or none for the latest", field, u.Revision))
	case u.Revision > 0 && u.WorkspaceName != "":
		errs = append(errs, field+" may specify only one of revision and workspaceName")
	}
	if u.WorkspaceName != "" {
		if err := revision.ValidateWorkspace(u.WorkspaceName); err != nil {
			errs = append(errs, fmt.Sprintf("%s.workspaceName: %v", field, err))
		}
	}
	return errs
}

func validateFunction(field string, f revision.Function) []string {
	var errs []string
	if f.Image == "" && f.Exec == "" {
		errs = append(errs, field+".image must not be empty")
	}
	if strings.Contains(f.Name, ".") {
		errs = append(errs, field+".name must not contain '.'")
	}
	return errs
}

func validateBinding(field string, b Binding) []string {
	var errs []string
	if b.Name == "" {
		errs = append(errs, field+".name must not be empty")
	}
	n := 0
	if b.Object != nil {
		n++
		if (b.Object.Name == "") == (b.Object.Selector == nil) {
			errs = append(errs, field+".object must specify exactly one of name and selector")
		}
		if b.Object.Selector != nil {
			if _, err := metav1.LabelSelectorAsSelector(b.Object.Selector); err != nil {
				errs = append(errs, fmt.Sprintf("%s.object.selector: %v", field, err))
			}
		}
	}
	if b.Resources != nil {
		n++
		if len(b.Resources) == 0 {
			errs = append(errs, field+".resources must not be an empty list if specified")
		}
		for i, r := range b.Resources {
			if s, _ := r["kind"].(string); s == "" {
				errs = append(errs, fmt.Sprintf("%s.resources[%d].kind must not be empty", field, i))
			}
		}
	}
	if b.PackageRevision != nil {
		n++
		errs = append(errs, validateUpstream(field+".packageRevision", &b.PackageRevision.Upstream)...)
		if b.PackageRevision.Selector != nil {
			if _, err := metav1.LabelSelectorAsSelector(b.PackageRevision.Selector); err != nil {
				errs = append(errs, fmt.Sprintf("%s.packageRevision.selector: %v", field, err))
			}
		}
	}
	if n != 1 {
		errs = append(errs, field+" must specify exactly one of object, resources and packageRevision")
	}
	return errs
}
