package porchapi

import (
	"strings"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/types"

	"github.com/configasdata/cad/revision"
)

// PackageRevisionName returns Porch's name of the revision of package pkg
// with the given workspace in repository repo:
// "<repo>.<pkg with / as .>.<workspace>". The name of a
// PackageRevisionResources is the same.
func PackageRevisionName(repo, pkg, workspace string) string {
	return repo + "." + strings.ReplaceAll(pkg, "/", ".") + "." + workspace
}

// NameOf returns the PackageRevision name of the revision k identifies,
// using k.Repository, k.Package and k.Workspace (for the placeholder
// revision, the workspace is the branch name).
func NameOf(k revision.Key) string {
	return PackageRevisionName(k.Repository, k.Package, k.Workspace)
}

// ParseName resolves a PackageRevision name back to a Key with Repository,
// Package and Workspace set (Revision 0, which selects any revision of that
// workspace). The name must have at least three dot-separated parts: the
// first is the repository, the last the workspace, the rest the package path
// segments. Because none of these may contain a dot, the answer is unique.
// The error matches revision.ErrInvalid.
func ParseName(name string) (revision.Key, error) {
	parts := strings.Split(name, ".")
	if len(parts) < 3 {
		return revision.Key{}, &revision.KeyError{Field: "name", Value: name,
			Reason: "a package revision name is <repository>.<package>.<workspace>"}
	}
	for _, p := range parts {
		if p == "" {
			return revision.Key{}, &revision.KeyError{Field: "name", Value: name,
				Reason: "a package revision name has no empty dot-separated part"}
		}
	}
	k := revision.Key{
		Repository: parts[0],
		Package:    strings.Join(parts[1:len(parts)-1], "/"),
		Workspace:  parts[len(parts)-1],
	}
	return k, nil
}

// porchUIDSpace is the name space UUID in which Porch derives the UIDs of
// its objects (Porch's pkg/util uuidSpace).
var porchUIDSpace = uuid.MustParse("aac71d91-5c67-456f-8fd2-902ef6da820e")

// PackageRevisionUID returns the UID Porch gives the PackageRevision (and
// its PackageRevisionResources) called name in namespace ns, so that every
// read of the same object, in any process and in Porch itself, gives the
// same UID: the UUIDv5 (SHA-1, name based) in Porch's name space of
//
//	"packagerevision:porch.kpt.dev/v1alpha1/<namespace>/<name>"
//
// with namespace and name lowercased. The group version is v1alpha1
// whichever version serves the object, as in Porch.
func PackageRevisionUID(ns, name string) types.UID {
	id := "packagerevision:" + strings.ToLower(SchemeGroupVersion.Identifier()) + "/" + strings.ToLower(ns) + "/" + strings.ToLower(name)
	return types.UID(uuid.NewSHA1(porchUIDSpace, []byte(id)).String())
}
