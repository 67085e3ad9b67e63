// Package k8sschema holds the Kubernetes OpenAPI definitions cad ships
// beyond kyaml's bundled ones (see README.md: generated data from
// k8s.io/kubernetes), parsed on first use. fnruntime's kubeconform
// validates against them; kube-openapi's types stay in this package.
package k8sschema

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/kustomize/kyaml/openapi"
)

//go:embed kubernetes-v1.37.2-swagger.json.gz
var v1372 []byte

// Schema is one Kubernetes version's OpenAPI definitions. It is safe for
// concurrent use.
type Schema struct {
	// Version is the Kubernetes release, "v1.37.2".
	Version string
	gz      []byte

	once  sync.Once
	root  *spec.Schema
	byGVK map[string]string // "group/version/kind" to definition name
	err   error
}

var versions = []*Schema{{Version: "v1.37.2", gz: v1372}}

// Versions returns the shipped schemas, newest first.
func Versions() []*Schema { return append([]*Schema(nil), versions...) }

// New returns a Schema over a gzip-compressed swagger.json (tests and
// benchmarks; the shipped ones come from Versions).
func New(version string, gz []byte) *Schema { return &Schema{Version: version, gz: gz} }

// Load parses the definitions once; it returns the parse error, then and
// on every later call.
func (s *Schema) Load() error {
	s.once.Do(func() {
		zr, err := gzip.NewReader(bytes.NewReader(s.gz))
		if err != nil {
			s.err = fmt.Errorf("kubernetes %s schema: %w", s.Version, err)
			return
		}
		var doc struct {
			Definitions spec.Definitions `json:"definitions"`
		}
		if err := json.NewDecoder(zr).Decode(&doc); err != nil {
			s.err = fmt.Errorf("kubernetes %s schema: %w", s.Version, err)
			return
		}
		s.root = &spec.Schema{SchemaProps: spec.SchemaProps{Definitions: doc.Definitions}}
		s.byGVK = map[string]string{}
		for name, d := range doc.Definitions {
			gvks, _ := d.Extensions["x-kubernetes-group-version-kind"].([]any)
			for _, g := range gvks {
				m, _ := g.(map[string]any)
				group, _ := m["group"].(string)
				version, _ := m["version"].(string)
				kind, _ := m["kind"].(string)
				s.byGVK[group+"/"+version+"/"+kind] = name
			}
		}
	})
	return s.err
}

// Root returns the schema references resolve against (for
// openapi.Resolve), nil when the definitions do not parse.
func (s *Schema) Root() *openapi.ResourceSchema {
	if s.Load() != nil {
		return nil
	}
	return &openapi.ResourceSchema{Schema: s.root}
}

// ForType returns the schema of a kind ("apps/v1", "Deployment"), nil
// when the version has none or the definitions do not parse.
func (s *Schema) ForType(apiVersion, kind string) *openapi.ResourceSchema {
	if s.Load() != nil {
		return nil
	}
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group, version = "", apiVersion
	}
	name, ok := s.byGVK[group+"/"+version+"/"+kind]
	if !ok {
		return nil
	}
	d := s.root.Definitions[name]
	return &openapi.ResourceSchema{Schema: &d}
}

// Embedded returns s's compressed swagger.json (so a benchmark can parse
// it afresh with New).
func Embedded(s *Schema) []byte { return s.gz }
