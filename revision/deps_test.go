package revision_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configasdata/cad/revision"
)

const depsPackageFile = `apiVersion: cad.configasdata.dev/v1alpha1
kind: Package
metadata:
  name: web
spec:
  # what web needs
  requires:
  - api: {group: cert-manager.io, version: v1, kind: Certificate}
  - capability: dns
    package: {name: external-dns}
  - package: {repository: blueprints, name: base, revision: ">=v2"}
  provides:
  - capability: web
`

func TestPackageFileDependenciesRoundTrip(t *testing.T) {
	p, err := revision.ParsePackageFile([]byte(depsPackageFile))
	require.NoError(t, err)
	require.Len(t, p.Requires, 3)
	assert.Equal(t, revision.APIRef{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}, *p.Requires[0].API)
	assert.Equal(t, "dns", p.Requires[1].Capability)
	assert.Equal(t, "external-dns", p.Requires[1].Package.Name)
	assert.Equal(t, revision.PackageRef{Repository: "blueprints", Name: "base", Revision: ">=v2"}, *p.Requires[2].Package)
	assert.Equal(t, []revision.Dependency{{Capability: "web"}}, p.Provides)

	// Unchanged: the bytes survive, comment included.
	data, err := p.Encode()
	require.NoError(t, err)
	assert.Contains(t, string(data), "# what web needs")

	// A change inside an entry is seen (the parsed copy is deep).
	p.Requires[0].API.Version = "v2"
	p.Provides = append(p.Provides, revision.Dependency{API: &revision.APIRef{Group: "x.io", Version: "v1", Kind: "Web"}})
	data, err = p.Encode()
	require.NoError(t, err)
	back, err := revision.ParsePackageFile(data)
	require.NoError(t, err)
	assert.Equal(t, "v2", back.Requires[0].API.Version)
	assert.Len(t, back.Provides, 2)

	// Removing them clears the fields.
	back.Requires, back.Provides = nil, nil
	data, err = back.Encode()
	require.NoError(t, err)
	assert.NotContains(t, string(data), "requires")
	assert.NotContains(t, string(data), "provides")

	// Built in code.
	n := revision.NewPackageFile("n")
	n.Requires = []revision.Dependency{{Package: &revision.PackageRef{Name: "base"}}}
	data, err = n.Encode()
	require.NoError(t, err)
	back, err = revision.ParsePackageFile(data)
	require.NoError(t, err)
	assert.Equal(t, n.Requires, back.Requires)
}

func TestDependenciesValidate(t *testing.T) {
	api := &revision.APIRef{Version: "v1", Kind: "ConfigMap"}
	for name, tc := range map[string]struct {
		d    revision.Dependencies
		want string
	}{
		"empty entry":         {revision.Dependencies{Requires: []revision.Dependency{{}}}, "requires[0]"},
		"api and capability":  {revision.Dependencies{Requires: []revision.Dependency{{API: api, Capability: "x"}}}, "not both"},
		"api without kind":    {revision.Dependencies{Requires: []revision.Dependency{{API: &revision.APIRef{Group: "g"}}}}, "kind"},
		"provided no version": {revision.Dependencies{Provides: []revision.Dependency{{API: &revision.APIRef{Kind: "K"}}}}, "provides[0]"},
		"provided package":    {revision.Dependencies{Provides: []revision.Dependency{{Package: &revision.PackageRef{Name: "p"}}}}, "cannot be provided"},
		"package no name":     {revision.Dependencies{Requires: []revision.Dependency{{Package: &revision.PackageRef{}}}}, "needs a name"},
		"unsafe name":         {revision.Dependencies{Requires: []revision.Dependency{{Package: &revision.PackageRef{Name: "../x"}}}}, "../x"},
		"bad repository":      {revision.Dependencies{Requires: []revision.Dependency{{Package: &revision.PackageRef{Name: "p", Repository: "a/b"}}}}, "repository"},
		"bad revision":        {revision.Dependencies{Requires: []revision.Dependency{{Package: &revision.PackageRef{Name: "p", Revision: "~1.2"}}}}, "revision"},
		"zero revision":       {revision.Dependencies{Requires: []revision.Dependency{{Package: &revision.PackageRef{Name: "p", Revision: ">=0"}}}}, "revision"},
		"spaced capability":   {revision.Dependencies{Requires: []revision.Dependency{{Capability: " dns"}}}, "spaces"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.d.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, revision.ErrInvalid)
			var de *revision.DependencyError
			assert.True(t, errors.As(err, &de))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	ok := revision.Dependencies{
		Requires: []revision.Dependency{{API: &revision.APIRef{Kind: "ConfigMap"}}, {Capability: "c", Package: &revision.PackageRef{Name: "a/b", Revision: "3"}}},
		Provides: []revision.Dependency{{API: api}, {Capability: "c"}},
	}
	assert.NoError(t, ok.Validate())
}

func TestParsePackageFileRejectsInvalidDependency(t *testing.T) {
	_, err := revision.ParsePackageFile([]byte("apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nspec:\n  requires:\n  - {}\n"))
	assert.ErrorIs(t, err, revision.ErrInvalid)
	_, err = revision.ParsePackageFile([]byte("apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nspec:\n  requires: {api: x}\n"))
	assert.ErrorIs(t, err, revision.ErrInvalid)
}

func TestPackageRefMatchesRevision(t *testing.T) {
	for c, want := range map[string][]bool{ // revisions 1, 2, 3
		"":    {true, true, true},
		"2":   {false, true, false},
		"=v2": {false, true, false},
		">=2": {false, true, true},
		">2":  {false, false, true},
		"<=2": {true, true, false},
		"< 2": {true, false, false},
		"x":   {false, false, false},
	} {
		for i, w := range want {
			assert.Equal(t, w, revision.PackageRef{Name: "p", Revision: c}.MatchesRevision(i+1), "%q vs %d", c, i+1)
		}
	}
}

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: certificates.cert-manager.io
spec:
  group: cert-manager.io
  names: {kind: Certificate, plural: certificates}
  versions:
  - name: v1
    served: true
  - name: v1alpha1
    served: false
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-crd}
`

func TestDependenciesFromFiles(t *testing.T) {
	files := revision.MustFiles(map[string]string{
		revision.PackageFileName: "apiVersion: cad.configasdata.dev/v1alpha1\nkind: Package\nspec:\n  provides:\n  - capability: certs\n",
		"crds/crd.yaml":          crd,
		"broken.yaml":            "CustomResourceDefinition: [\n",
		"README.md":              "kind: CustomResourceDefinition\n",
	})
	d, err := revision.DependenciesFromFiles(files)
	require.NoError(t, err)
	assert.Empty(t, d.Requires)
	assert.Equal(t, []revision.Dependency{
		{Capability: "certs"},
		{API: &revision.APIRef{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}},
	}, d.Provides)

	// Without a package file: the CRDs still provide.
	d, err = revision.DependenciesFromFiles(revision.MustFiles(map[string]string{"Kptfile": "x", "crd.yml": crd}))
	require.NoError(t, err)
	assert.Len(t, d.Provides, 1)

	_, err = revision.DependenciesFromFiles(revision.MustFiles(map[string]string{revision.PackageFileName: "kind: Other\n"}))
	assert.ErrorIs(t, err, revision.ErrInvalid)
}
