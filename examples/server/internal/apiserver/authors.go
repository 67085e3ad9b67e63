package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// AuthorsAnnotation is the annotation in which the server records, on a
// package revision, the users who created it, edited its content or
// proposed it: a JSON list of user names. The server manages it (what a
// client sends for it is ignored) and, with Options.RefuseSelfApproval,
// refuses the approval of the revision by any of them. A user who
// attempted an edit that then failed counts as an author: the record is
// written before the edit, so that no edit escapes it.
const AuthorsAnnotation = "cad.configasdata.dev/authors"

// authorsOf returns the users recorded in md.
func authorsOf(md revision.Metadata) []string {
	var names []string
	if v, ok := md.Annotations[AuthorsAnnotation]; ok {
		_ = json.Unmarshal([]byte(v), &names)
	}
	return names
}

// withAuthor returns md with user added to its authors (a copy), and
// whether it was added.
func withAuthor(md revision.Metadata, user string) (revision.Metadata, bool) {
	names := authorsOf(md)
	if slices.Contains(names, user) {
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
	out, err := s.engineFor(ctx, rq.ns).SetMetadata(ctx, repo, m.Key, md, m.Version)
	if errors.Is(err, repository.ErrNotSupported) {
		rq.warn("the authors of this revision are not recorded: repository %q keeps no package revision metadata", repo)
		return rev, nil
	}
	return out, err
}

// checkSelfApproval refuses, when the server refuses self-approval, the
// approval of m by one of its authors.
func (s *Server) checkSelfApproval(ctx context.Context, rq *request, m revision.Meta) error {
	u := userFrom(ctx)
	if !s.opts.RefuseSelfApproval || u == nil {
		return nil
	}
	if slices.Contains(authorsOf(m.Metadata), u.Name) {
		e := errForbidden(grPackageRevisions, rq.name, fmt.Sprintf(
			"User %q cannot approve a package revision it created, edited or proposed: this server refuses self-approval", u.Name))
		return e
	}
	return nil
}
