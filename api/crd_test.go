package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"

	configv1alpha1 "github.com/configasdata/cad/api/config/v1alpha1"
	configv1alpha2 "github.com/configasdata/cad/api/config/v1alpha2"
	porchv1alpha2 "github.com/configasdata/cad/api/porch/v1alpha2"
)

// schema is the part of an apiextensions.k8s.io/v1 JSONSchemaProps the
// test reads.
type schema struct {
	Type                 string            `json:"type"`
	Properties           map[string]schema `json:"properties"`
	Items                *schema           `json:"items"`
	AdditionalProperties *schema           `json:"additionalProperties"`
	Required             []string          `json:"required"`
	PreserveUnknown      bool              `json:"x-kubernetes-preserve-unknown-fields"`
	IntOrString          bool              `json:"x-kubernetes-int-or-string"`
}

// crd is the part of an apiextensions.k8s.io/v1 CustomResourceDefinition
// the test reads.
type crd struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind       string   `json:"kind"`
			ListKind   string   `json:"listKind"`
			Plural     string   `json:"plural"`
			ShortNames []string `json:"shortNames"`
		} `json:"names"`
		Scope    string       `json:"scope"`
		Versions []crdVersion `json:"versions"`
	} `json:"spec"`
}

type crdVersion struct {
	Name         string `json:"name"`
	Served       bool   `json:"served"`
	Storage      bool   `json:"storage"`
	Subresources struct {
		Status *struct{} `json:"status"`
	} `json:"subresources"`
	Schema struct {
		OpenAPIV3Schema *schema `json:"openAPIV3Schema"`
	} `json:"schema"`
	SelectableFields []struct {
		JSONPath string `json:"jsonPath"`
	} `json:"selectableFields"`
}

func readCRDs(t *testing.T) map[string]crd {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRD manifests under crds/: %v", err)
	}
	out := map[string]crd{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c crd
		if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.APIVersion != "apiextensions.k8s.io/v1" || c.Kind != "CustomResourceDefinition" {
			t.Fatalf("%s: %s %s, want an apiextensions.k8s.io/v1 CustomResourceDefinition", f, c.APIVersion, c.Kind)
		}
		if c.Metadata.Name != c.Spec.Names.Plural+"."+c.Spec.Group {
			t.Errorf("%s: name %q, want <plural>.<group>", f, c.Metadata.Name)
		}
		storage := 0
		for _, v := range c.Spec.Versions {
			if v.Storage {
				storage++
			}
			if v.Schema.OpenAPIV3Schema == nil {
				t.Errorf("%s: version %s has no schema", f, v.Name)
			}
		}
		if storage != 1 {
			t.Errorf("%s: %d storage versions, want 1", f, storage)
		}
		out[c.Spec.Group+"/"+c.Spec.Names.Kind] = c
	}
	return out
}

// fill sets every field reachable from v to a non-zero value, so that the
// JSON of the result has every field the Go type declares.
func fill(v reflect.Value) {
	switch x := v.Addr().Interface().(type) {
	case *metav1.Time:
		*x = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		return
	case *metav1.ObjectMeta:
		*x = metav1.ObjectMeta{Name: "n", Namespace: "ns", Labels: map[string]string{"a": "b"}}
		return
	case *metav1.TypeMeta, *metav1.ListMeta:
		return
	case *metav1.Condition:
		*x = metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", Message: "m",
			ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
		return
	case *runtime.RawExtension:
		x.Raw = []byte(`{"upstream":{"repo":"r","package":"p"},"unknown":{"kept":true}}`)
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(2)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		val := reflect.New(v.Type().Elem()).Elem()
		fill(val)
		m.SetMapIndex(reflect.ValueOf("k").Convert(v.Type().Key()), val)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}

// check reports through errorf every value of doc that s does not declare
// with the right type, and every required field that is missing.
func check(errorf func(format string, args ...any), path string, doc any, s *schema) {
	if s.PreserveUnknown && len(s.Properties) == 0 {
		return
	}
	switch d := doc.(type) {
	case map[string]any:
		if s.Type != "object" {
			errorf("%s: an object in JSON, %q in the schema", path, s.Type)
			return
		}
		for _, r := range s.Required {
			if _, ok := d[r]; !ok {
				errorf("%s: required field %q missing from the JSON", path, r)
			}
		}
		for k, v := range d {
			if k == "metadata" && !strings.Contains(path, ".") {
				continue // the API server's, not the CRD's
			}
			if p, ok := s.Properties[k]; ok {
				check(errorf, path+"."+k, v, &p)
				continue
			}
			if s.AdditionalProperties != nil {
				check(errorf, path+"."+k, v, s.AdditionalProperties)
				continue
			}
			if !s.PreserveUnknown {
				errorf("%s.%s: in the JSON of the Go type, not declared by the CRD schema (regenerate with go generate ./...)", path, k)
			}
		}
	case []any:
		if s.Type != "array" || s.Items == nil {
			errorf("%s: an array in JSON, %q in the schema", path, s.Type)
			return
		}
		for i, v := range d {
			check(errorf, fmt.Sprintf("%s[%d]", path, i), v, s.Items)
		}
	case string:
		if s.Type != "string" && !s.IntOrString {
			errorf("%s: a string in JSON, %q in the schema", path, s.Type)
		}
	case bool:
		if s.Type != "boolean" {
			errorf("%s: a boolean in JSON, %q in the schema", path, s.Type)
		}
	case float64:
		if s.Type != "integer" && s.Type != "number" && !s.IntOrString {
			errorf("%s: a number in JSON, %q in the schema", path, s.Type)
		}
	}
}

// TestCRDsDeclareTheGoTypes checks each CRD manifest against its Go type:
// a value with every field set encodes to JSON the schema declares field by
// field (so a type changed without go generate fails here), and decodes back
// to the same value (compared as JSON: metav1.Time decodes to local time).
func TestCRDsDeclareTheGoTypes(t *testing.T) {
	crds := readCRDs(t)
	cases := []struct {
		gv     string
		kind   string
		obj    runtime.Object
		status bool
	}{
		{porchv1alpha2.SchemeGroupVersion.String(), porchv1alpha2.KindPackageRevision, &porchv1alpha2.PackageRevision{}, true},
		{configv1alpha1.SchemeGroupVersion.String(), configv1alpha1.KindRepository, &configv1alpha1.Repository{}, true},
		{configv1alpha1.SchemeGroupVersion.String(), configv1alpha1.KindPackageVariant, &configv1alpha1.PackageVariant{}, true},
		{configv1alpha2.SchemeGroupVersion.String(), configv1alpha2.KindPackageVariantSet, &configv1alpha2.PackageVariantSet{}, true},
	}
	if len(cases) != len(crds) {
		t.Errorf("%d CRD manifests, %d kinds tested", len(crds), len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			group, version, _ := strings.Cut(tc.gv, "/")
			c, ok := crds[group+"/"+tc.kind]
			if !ok {
				t.Fatalf("no CRD for %s %s", tc.gv, tc.kind)
			}
			i := slices.IndexFunc(c.Spec.Versions, func(v crdVersion) bool { return v.Name == version })
			if i < 0 || !c.Spec.Versions[i].Served {
				t.Fatalf("CRD %s does not serve %s", c.Metadata.Name, version)
			}
			v := c.Spec.Versions[i]
			if tc.status != (v.Subresources.Status != nil) {
				t.Errorf("status subresource: %v, want %v", v.Subresources.Status != nil, tc.status)
			}
			if c.Spec.Scope != "Namespaced" {
				t.Errorf("scope %s, want Namespaced", c.Spec.Scope)
			}

			obj := tc.obj
			fill(reflect.ValueOf(obj).Elem())
			obj.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
			data, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			check(t.Errorf, tc.kind, doc, v.Schema.OpenAPIV3Schema)

			back := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
			if err := json.Unmarshal(data, back); err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, again) {
				t.Errorf("JSON round trip changed the value:\n%s\n%s", data, again)
			}
			if cp := obj.DeepCopyObject(); !reflect.DeepEqual(obj, cp) {
				t.Errorf("DeepCopyObject differs from the original")
			}
		})
	}
}

// TestCheckFindsUndeclaredFields makes sure the schema walk above can fail.
func TestCheckFindsUndeclaredFields(t *testing.T) {
	s := &schema{Type: "object", Properties: map[string]schema{"a": {Type: "string"}}, Required: []string{"a"}}
	for _, doc := range []string{`{"a":"x","b":1}`, `{"a":1}`, `{}`} {
		var d any
		if err := json.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatal(err)
		}
		var errs []string
		check(func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }, "o", d, s)
		if len(errs) == 0 {
			t.Errorf("%s passed a schema that does not declare it", doc)
		}
	}
}

// The CRDs carry what Porch's clients use: the field selectors porchctl
// and kubectl send for PackageRevisions (package, repository, workspace,
// lifecycle and revision, which v1alpha2 keeps in status), the repo
// short name of Repositories and the pvs of PackageVariantSets.
func TestCRDsSelectAndShortNames(t *testing.T) {
	crds := readCRDs(t)
	pr := crds["porch.kpt.dev/PackageRevision"]
	var got []string
	for _, v := range pr.Spec.Versions {
		for _, f := range v.SelectableFields {
			got = append(got, v.Name+" "+f.JSONPath)
		}
	}
	want := []string{"v1alpha2 .spec.packageName", "v1alpha2 .spec.repository", "v1alpha2 .spec.workspaceName",
		"v1alpha2 .spec.lifecycle", "v1alpha2 .status.revision"}
	if !slices.Equal(got, want) {
		t.Errorf("PackageRevision selectableFields %v, want %v", got, want)
	}
	if names := crds["config.porch.kpt.dev/Repository"].Spec.Names.ShortNames; !slices.Equal(names, []string{"repo"}) {
		t.Errorf("Repository short names %v", names)
	}
	if names := pr.Spec.Names.ShortNames; !slices.Equal(names, []string{"rpkg"}) {
		t.Errorf("PackageRevision short names %v", names)
	}
	// kubectl get pvs, as the README's variant walkthrough uses. (No pv
	// for PackageVariant: it is PersistentVolume's.)
	if names := crds["config.porch.kpt.dev/PackageVariantSet"].Spec.Names.ShortNames; !slices.Equal(names, []string{"pvs"}) {
		t.Errorf("PackageVariantSet short names %v", names)
	}
}
