package porchapi

import (
	"crypto/sha1"
	"fmt"
	"strings"

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

// uidNamespace is the name space of the UUIDv5s derived for objects.
var uidNamespace = [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

// DeterministicUID returns the UID of an object of the given group version
// resource in namespace ns called name: a UUIDv5 over those, so that every
// read of the same object, in any process, gives the same UID.
func DeterministicUID(groupVersion, resource, ns, name string) types.UID {
	h := sha1.New()
	h.Write(uidNamespace[:])
	fmt.Fprintf(h, "%s/%s/%s/%s", groupVersion, resource, ns, name)
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = (u[6] & 0x0f) | 0x50
	u[8] = (u[8] & 0x3f) | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]))
}
