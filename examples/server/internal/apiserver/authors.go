package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/configasdata/cad/engine"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
	"github.com/configasdata/cad/variant"
)

// AuthorsAnnotation is the annotation in which the server records, on a
// package revision, the users who created it, edited its content or
// proposed it: a JSON list of user names. The server manages it (what a
// client sends for it is ignored) and, with Options.RefuseSelfApproval,
// refuses the approval of the revision by any of them. A user who
// attempted an edit that then failed counts as an author: the record is
// written before the edit, so that no edit escapes it. On a PackageVariant
// or PackageVariantSet it records the users who created or updated the
// object; they count as authors of the revisions its sync writes. A value
// that is not a JSON list of names refuses every approval (fail closed).
const AuthorsAnnotation = "cad.configasdata.dev/authors"

// authorsOf returns the users recorded in md, and an error when md has the
// annotation but it is not a JSON list of user names (a damaged record,
// which must not read as "no authors").
func authorsOf(md revision.Metadata) ([]string, error) {
	v, ok := md.Annotations[AuthorsAnnotation]
	return parseAuthors(v, ok)
}

// parseAuthors parses the value v of an AuthorsAnnotation; present says
// whether the annotation is there at all.
func parseAuthors(v string, present bool) ([]string, error) {
	if !present {
		return nil, nil
	}
	var names []string
	if err := json.Unmarshal([]byte(v), &names); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON list of user names: %v", AuthorsAnnotation, err)
	}
	return names, nil
}

// withAuthor returns md with user added to its authors (a copy), and
// whether it was added. A damaged record is left as it is (and nothing
// added), so that it keeps refusing approvals until it is repaired.
func withAuthor(md revision.Metadata, user string) (revision.Metadata, bool) {
	names, err := authorsOf(md)
	if err != nil || slices.Contains(names, user) {
		return md, false
	}
	names = append(names, user)
	data, _ := json.Marshal(names)
	out := md.Clone()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[AuthorsAnnotation] = string(data)
	return out, true
}

// keepManaged returns md with the managed annotation of cur, whatever the
// client sent for it, and whether the client sent another value (leaving
// it out is not sending one).
func keepManaged(md, cur revision.Metadata) (revision.Metadata, bool) {
	v, had := cur.Annotations[AuthorsAnnotation]
	got, sent := md.Annotations[AuthorsAnnotation]
	if had == sent && v == got {
		return md, false
	}
	differs := sent && got != v
	out := md.Clone()
	out.Annotations = maps.Clone(out.Annotations)
	if had {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[AuthorsAnnotation] = v
	} else {
		delete(out.Annotations, AuthorsAnnotation)
	}
	return out, differs
}

// recordAuthor adds the request's user to the authors of rev before an
// edit, and returns the revision as written (rev itself when there is
// nothing to record). A repository that keeps no metadata records nothing.
func (s *Server) recordAuthor(ctx context.Context, rq *request, repo string, rev revision.PackageRevision) (revision.PackageRevision, error) {
	u := userFrom(ctx)
	if u == nil {
		return rev, nil
	}
	m := rev.Meta()
	md, added := withAuthor(m.Metadata, u.Name)
	if !added {
		return rev, nil
	}
	out, err := s.engineFor(ctx, rq).SetMetadata(ctx, repo, m.Key, md, m.Version)
	if errors.Is(err, repository.ErrNotSupported) {
		rq.warn("the authors of this revision are not recorded: repository %q keeps no package revision metadata", repo)
		return rev, nil
	}
	return out, err
}

// checkSelfApproval refuses, when the server refuses self-approval, the
// approval of m by one of its authors: a user recorded in its
// AuthorsAnnotation or in that of the PackageVariant or PackageVariantSet
// that owns it (whose content the variant sync wrote on the user's
// behalf). A damaged authors record refuses the approval too: it fails
// closed, with a message that says so.
func (s *Server) checkSelfApproval(ctx context.Context, rq *request, m revision.Meta) error {
	u := userFrom(ctx)
	if !s.opts.RefuseSelfApproval || u == nil {
		return nil
	}
	refuse := func(msg string) error { return errForbidden(grPackageRevisions, rq.name, msg) }
	names, err := authorsOf(m.Metadata)
	if err != nil {
		return refuse(fmt.Sprintf("the authors of this package revision cannot be read (%v): this server refuses self-approval, so it refuses the approval until the record is repaired", err))
	}
	owners, err := s.variantAuthors(rq.ns, m.Metadata)
	if err != nil {
		return refuse(fmt.Sprintf("the authors of the variant that owns this package revision cannot be read (%v): this server refuses self-approval, so it refuses the approval until the record is repaired", err))
	}
	if slices.Contains(names, u.Name) {
		return refuse(fmt.Sprintf(
			"User %q cannot approve a package revision it created, edited or proposed: this server refuses self-approval", u.Name))
	}
	if slices.Contains(owners, u.Name) {
		return refuse(fmt.Sprintf(
			"User %q cannot approve a package revision written by a package variant it created or updated: this server refuses self-approval", u.Name))
	}
	return nil
}

// variantAuthors returns the authors recorded on the stored
// PackageVariant (variant.OwnerAnnotation) and PackageVariantSet
// (variant.SetLabel) that own a revision with metadata md, in namespace
// ns; an owner no longer stored contributes nothing (the sync recorded
// its authors on the revisions it wrote).
func (s *Server) variantAuthors(ns string, md revision.Metadata) ([]string, error) {
	var out []string
	add := func(res, ns, name string) error {
		if name == "" {
			return nil
		}
		obj, err := s.store.Get(res, ns, name)
		if err != nil {
			return nil
		}
		v, ok := obj.GetAnnotations()[AuthorsAnnotation]
		names, err := parseAuthors(v, ok)
		if err != nil {
			return fmt.Errorf("%s %s/%s: %w", res, ns, name, err)
		}
		out = append(out, names...)
		return nil
	}
	if o := md.Annotations[variant.OwnerAnnotation]; o != "" {
		ons, name, found := strings.Cut(o, "/")
		if !found {
			ons, name = ns, o
		}
		if err := add(resPackageVariants, ons, name); err != nil {
			return nil, err
		}
	}
	if err := add(resPackageVariantSets, ns, md.Labels[variant.SetLabel]); err != nil {
		return nil, err
	}
	return out, nil
}

// prepareVariant is the prepare hook of PackageVariants and
// PackageVariantSets: it records the request's user in the object's
// AuthorsAnnotation, which keeps the users of old and ignores what the
// client sent. The variant sync makes them authors of the revisions it
// writes.
func (s *Server) prepareVariant(ctx context.Context, rq *request, obj, old runtime.Object) error {
	cur, had := "", false
	if old != nil {
		cur, had = old.(metav1.Object).GetAnnotations()[AuthorsAnnotation]
	}
	m := obj.(metav1.Object)
	anns := m.GetAnnotations()
	if got, sent := anns[AuthorsAnnotation]; sent && (!had || got != cur) {
		rq.warn("annotation %s is managed by the server: the value sent is ignored", AuthorsAnnotation)
	}
	delete(anns, AuthorsAnnotation)
	if had {
		if anns == nil {
			anns = map[string]string{}
		}
		anns[AuthorsAnnotation] = cur
	}
	if user := userFrom(ctx); user != nil {
		md, _ := withAuthor(revision.Metadata{Annotations: anns}, user.Name)
		anns = md.Annotations
	}
	m.SetAnnotations(anns)
	return nil
}

// addVariantAuthors records the users of the AuthorsAnnotation of a
// variant object (annotations) as authors of every revision the results
// say the variant sync created or changed. A revision that cannot be read
// or updated is skipped; the error names it.
func addVariantAuthors(ctx context.Context, e *engine.Engine, annotations map[string]string, results ...*variant.Result) error {
	v, ok := annotations[AuthorsAnnotation]
	names, err := parseAuthors(v, ok)
	if err != nil || len(names) == 0 {
		return err
	}
	var errs []error
	for _, res := range results {
		if res == nil {
			continue
		}
		for _, c := range res.Changes {
			switch c.Action {
			case variant.ActionDeleted, variant.ActionOrphaned, variant.ActionUnchanged:
				continue
			}
			pr, err := e.Get(ctx, c.Key.Repository, c.Key)
			if err != nil {
				errs = append(errs, fmt.Errorf("record the variant's authors on %s: %w", c.Key, err))
				continue
			}
			m := pr.Meta()
			md, changed := m.Metadata, false
			for _, n := range names {
				var added bool
				md, added = withAuthor(md, n)
				changed = changed || added
			}
			if !changed {
				continue
			}
			if _, err := e.SetMetadata(ctx, c.Key.Repository, c.Key, md, m.Version); err != nil && !errors.Is(err, repository.ErrNotSupported) {
				errs = append(errs, fmt.Errorf("record the variant's authors on %s: %w", c.Key, err))
			}
		}
	}
	return errors.Join(errs...)
}
